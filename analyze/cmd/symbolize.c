/* cmd/symbolize.c — `vheap-analyze symbolize DB`: resolves a loaded DB's
 * frames again, for debug info installed after the load, or a program or
 * library that moved (--exe-path, --search-dir, also taken by `load`:
 * their parsing lives here). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "analyze/load/ensure.h"
#include "analyze/cmd/cli.h"
#include "analyze/store/db.h"
#include "analyze/render/output.h"
#include "analyze/symbols/symbols.h"

static int run(int argc, char **argv);

VH_COMMAND(cmd_symbolize, {
    .name = "symbolize",
    .summary = "resolve a DB's frames again (debug info installed later, moved files)",
    .order = 21,
    .run = run,
    .usage =
        "usage: vheap-analyze symbolize [OPTIONS] DB|CAPTURE\n"
        "\n"
        "Resolves every frame of DB again (function, file, line, inlined callers),\n"
        "as `load` does at its end, and replaces what was found before: for debug\n"
        "info installed after the load (a -dbg package, a .debug file), or a\n"
        "program or library moved since the run. A frame whose new resolution\n"
        "says less (file:line > function > module+offset: debug info gone since)\n"
        "keeps the old one, with a warning and meta's symbols_kept. Files are\n"
        "trusted only when their build-id is the one recorded. Debug info is\n"
        "looked for in VHEAP_DEBUGINFO_PATH's directories (colon-separated), then\n"
        "beside the file, in its .debug directory and in /usr/lib/debug. A CAPTURE\n"
        "means its DB, CAPTURE" VH_DB_SUFFIX " (loaded first if needed).\n"
        "\n"
        "options:\n"
        SYMBOLS_PLACES_HELP
        "  --format FMT     what was resolved, before and after: table (default),\n"
        "                   json, csv\n"
        "  -h, --help       this text\n"
        "\n"
        "examples:\n"
        "  vheap-analyze symbolize run.sqlite                 # after apt-get install libfoo-dbg\n"
        "  VHEAP_DEBUGINFO_PATH=$HOME/debug vheap-analyze symbolize run.sqlite\n"
        "  vheap-analyze symbolize run.sqlite --exe-path /build/out=/home/me/out\n"
        "  vheap-analyze symbolize run.sqlite --search-dir ./bin\n"
        "\n"
        "exit status: 0 done (frames that stay unresolved are not an error; the\n"
        "files not found are named on stderr); 1 not a vheap DB or a database\n"
        "error; 2 usage error.\n",
});

int symbols__add_place(struct symbols_places *p, const char *cmd, int exe, const char *v)
{
    const char *name = exe ? "--exe-path" : "--search-dir";
    size_t *count = exe ? &p->o.nexe_paths : &p->o.nsearch_dirs;
    if (*count == SYMBOLS_MAX_PLACES) {
        vh_errorf(cmd, "%s: at most %d", name, SYMBOLS_MAX_PLACES);
        return -EINVAL;
    }
    if (exe) {
        const char *eq = strchr(v, '=');
        if (!eq || eq == v || !eq[1]) {
            vh_errorf(cmd, "--exe-path '%s': want OLD=NEW (the path recorded, then where it "
                           "is now)", v);
            return -EINVAL;
        }
        p->exe[(*count)++] = v;
    } else {
        struct stat st;
        if (stat(v, &st) || !S_ISDIR(st.st_mode)) {
            vh_errorf(cmd, "--search-dir %s: not a directory", v);
            return -EINVAL;
        }
        p->dirs[(*count)++] = v;
    }
    p->o.exe_paths = p->exe;
    p->o.search_dirs = p->dirs;
    return 0;
}

/* Frames in all, with a function, with file:line. */
static int count(sqlite3 *db, long long c[3])
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT count(*), count(function), count(line) FROM frames",
                           -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    int rc = sqlite3_step(st) == SQLITE_ROW ? 0 : -EIO;
    for (int i = 0; i < 3 && !rc; i++)
        c[i] = sqlite3_column_int64(st, i);
    sqlite3_finalize(st);
    return rc;
}

static const struct out_col cols[] = {
    { "db", "database", OUT_TEXT, 0 },
    { "frames", "frames", OUT_INT, 0 },
    { "resolved_before", "with a function before", OUT_INT, 0 },
    { "resolved", "with a function now", OUT_INT, 0 },
    { "with_line_before", "with file:line before", OUT_INT, 0 },
    { "with_line", "with file:line now", OUT_INT, 0 },
};

static int run(int argc, char **argv)
{
    struct symbols_places places = { 0 };
    const char *arg = NULL, *format = "table";
    enum out_format fmt;
    char path[4096], err[4700];
    sqlite3 *db = NULL;
    long long before[3], after[3];
    int rc;

    static const struct option lo[] = {
        { "exe-path", required_argument, NULL, 'e' },
        { "search-dir", required_argument, NULL, 'd' }, { "format", required_argument, NULL, 'f' },
        { 0 },
    };
    const char *opt;
    optind = 0;
    while ((rc = vh_getopt(&cmd_symbolize, argc, argv, ":", lo, &opt)) != -1) {
        if (rc == ':' && strcmp(opt, "--format")) {
            vh_errorf("symbolize", "%s needs a value", opt);
            return VH_EXIT_USAGE;
        }
        if (rc == ':')                 /* as before getopt: a bare --format at the end */
            vh_errorf("symbolize", "unknown option '%s' (see vheap-analyze symbolize --help)",
                      opt);
        if (rc == '?' || rc == ':' ||
            ((rc == 'e' || rc == 'd') && symbols__add_place(&places, "symbolize", rc == 'e',
                                                            optarg)))
            return VH_EXIT_USAGE;
        if (rc == 'f')
            format = optarg;
    }
    if (optind + 1 < argc) {
        vh_errorf("symbolize", "one DB at a time (see vheap-analyze symbolize --help)");
        return VH_EXIT_USAGE;
    }
    arg = optind < argc ? argv[optind] : NULL;
    if (!arg) {
        vh_errorf("symbolize", "no DB given (see vheap-analyze symbolize --help)");
        return VH_EXIT_USAGE;
    }
    if (out__parse_format(format, &fmt)) {
        vh_errorf("symbolize", "--format: '%s' is not table, json or csv", format);
        return VH_EXIT_USAGE;
    }
    if (load__ensure(arg, path, sizeof path, err, sizeof err)) {
        vh_errorf("symbolize", "%s", err);
        return VH_EXIT_DATA;
    }
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK ||
        db__check(db, path, err, sizeof err)) {
        if (db && !err[0])
            snprintf(err, sizeof err, "%.4096s: %.500s", path, sqlite3_errmsg(db));
        vh_errorf("symbolize", "%s", err);
        sqlite3_close(db);
        return VH_EXIT_DATA;
    }
    sqlite3_busy_timeout(db, 5000);
    rc = count(db, before);
    if (!rc && sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        rc = -EIO;
    if (!rc && (rc = symbols__resolve_db_opts(db, &places.o, err, sizeof err)) < 0) {
        vh_errorf("symbolize", "%s: %s", path, err);
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        sqlite3_close(db);
        return VH_EXIT_DATA;
    }
    if (!rc && (sqlite3_exec(db, "INSERT OR REPLACE INTO meta(key, value) "
                                 "VALUES ('symbols', 'resolved'); COMMIT",
                             NULL, NULL, NULL) != SQLITE_OK ||
                count(db, after)))
        rc = -EIO;
    if (rc) {
        vh_errorf("symbolize", "%s: %s", path, sqlite3_errmsg(db));
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        sqlite3_close(db);
        return VH_EXIT_DATA;
    }
    sqlite3_close(db);
    const char *shown = path;
    struct out_val v[] = { OV_S(shown),      OV_I(after[0]),  OV_I(before[1]),
                           OV_I(after[1]),  OV_I(before[2]), OV_I(after[2]) };
    if (out__object(fmt, stdout, "symbolize", cols, sizeof cols / sizeof *cols, v)) {
        vh_errorf("symbolize", "writing the output failed");
        return VH_EXIT_DATA;
    }
    return VH_EXIT_OK;
}
