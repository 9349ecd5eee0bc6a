/* cmd/load.c — `vheap-analyze load CAPTURE [DB]`: the command-line face of
 * load.c. Query commands load captures by themselves (load__ensure); this
 * command is for choosing the DB path, loading ahead of time, and scripts. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "analyze/cmd/cli.h"
#include "analyze/store/db.h"
#include "analyze/load/load.h"
#include "analyze/render/output.h"
#include "analyze/symbols/symbols.h"

static int run_load(int argc, char **argv);

VH_COMMAND(cmd_load, {
    .name = "load",
    .summary = "load a capture into a SQLite database",
    .order = 20,
    .run = run_load,
    .usage =
        "usage: vheap-analyze load [OPTIONS] CAPTURE [DB]\n"
        "\n"
        "Reads CAPTURE once and writes DB (default: CAPTURE" VH_DB_SUFFIX "), a SQLite\n"
        "database that the query commands (summary, leaks, top, peak) and the\n"
        "sqlite3 CLI read; its tables are described in docs/schema.md. Frames are\n"
        "symbolized (function, file, line) on a second thread while CAPTURE is\n"
        "read, and written into DB at the end of the load. The DB is\n"
        "written under a temporary name and renamed when complete; an existing DB\n"
        "is replaced, any other existing file is refused. A capture whose program\n"
        "still runs is loaded as far as it is written now.\n"
        "\n"
        "options:\n"
        "  --no-symbols    keep frames as module + offset (faster; no debug info)\n"
        SYMBOLS_PLACES_HELP
        "  --format FMT    the closing line: table (default, on stderr), json or csv\n"
        "                  (on stdout: capture, db, records, stacks, frames, ...)\n"
        "  --progress      show a progress bar on stderr (default: when a tty)\n"
        "  --no-progress   never show it\n"
        "  -q, --quiet     no closing line on stderr\n"
        "  -v, --verbose   also print the time each phase took (symbols: the wait\n"
        "                  for the symbolizer's thread and writing what it found)\n"
        "\n"
        "examples:\n"
        "  vheap-analyze load vheap.myprog.1234.vhcap\n"
        "  vheap-analyze load run.vhcap run.sqlite\n"
        "  vheap-analyze load run.vhcap --exe-path /build/bin=/home/me/bin   # moved since\n"
        "  vheap-analyze load run.vhcap --format json\n"
        "  sqlite3 run.sqlite 'SELECT heap, allocations, peak_bytes, leaked_bytes FROM summary'\n"
        "\n"
        "exit status: 0 loaded; 1 unreadable or damaged capture (a damaged one is\n"
        "still loaded as far as it is valid, and the damage is stored in meta);\n"
        "2 usage error.\n",
});

/* --format json/csv: the closing line's numbers, for scripts. */
static int print_stats(enum out_format fmt, const char *capture, const char *db,
                       const struct load_stats *st)
{
    static const struct out_col cols[] = {
        { "capture", "capture", OUT_TEXT, 0 },
        { "db", "database", OUT_TEXT, 0 },
        { "records", "records", OUT_INT, 0 },
        { "stacks", "stacks", OUT_INT, 0 },
        { "frames", "frames", OUT_INT, 0 },
        { "blocks_live", "blocks live at the end", OUT_INT, 0 },
        { "reordered", "records settled", OUT_INT, 0 },
        { "seconds", "seconds", OUT_REAL, 0 },
        { "symbols", "symbols", OUT_TEXT, 0 },
        { "damage", "damage", OUT_TEXT, 0 },
        { "damage_count", "damaged regions", OUT_INT, 0 },
    };
    struct out_val v[] = {
        OV_S(capture), OV_S(db), OV_I(st->records), OV_I(st->stacks), OV_I(st->frames),
        OV_I(st->leaks), OV_I(st->reordered), OV_R(st->seconds),
        OV_S(st->symbols[0] ? st->symbols : "resolved"),
        OV_S(st->damage_count ? st->damage : NULL), OV_I(st->damage_count),
    };
    if (out__object(fmt, stdout, "load", cols, sizeof cols / sizeof *cols, v)) {
        vh_errorf("load", "writing the output failed");
        return -EIO;
    }
    return 0;
}

static int run_load(int argc, char **argv)
{
    struct load_opts opts = { .progress = -1 };
    struct symbols_places places = { 0 };
    struct load_stats st;
    const char *capture = NULL, *db = NULL, *format = NULL;
    enum out_format fmt = OUT_TABLE;
    char dflt[4096], err[512];
    int quiet = 0, verbose = 0, rc;

    static const struct option lo[] = {
        { "exe-path", required_argument, NULL, 'e' },
        { "search-dir", required_argument, NULL, 'd' }, { "format", required_argument, NULL, 'f' },
        { "no-symbols", no_argument, NULL, 'n' }, { "progress", no_argument, NULL, 'p' },
        { "no-progress", no_argument, NULL, 'P' }, { "quiet", no_argument, NULL, 'q' },
        { "verbose", no_argument, NULL, 'v' }, { 0 },
    };
    const char *opt;
    opts.symbols = &places.o;
    optind = 0;
    while ((rc = vh_getopt(&cmd_load, argc, argv, ":qv", lo, &opt)) != -1) {
        switch (rc) {
        case 'e':
        case 'd':
            if (symbols__add_place(&places, "load", rc == 'e', optarg))
                return VH_EXIT_USAGE;
            break;
        case 'f':
            format = optarg;
            if (out__parse_format(format, &fmt)) {
                vh_errorf("load", "--format: '%s' is not table, json or csv", format);
                return VH_EXIT_USAGE;
            }
            break;
        case 'n': opts.no_symbols = 1; break;
        case 'p': opts.progress = 1; break;
        case 'P': opts.progress = 0; break;
        case 'q': quiet = 1; break;
        case 'v': verbose = 1; break;
        case ':':
            if (!strcmp(opt, "--format"))  /* as before getopt */
                vh_errorf("load", "--format: '' is not table, json or csv");
            else
                vh_errorf("load", "%s needs a value", opt);
            return VH_EXIT_USAGE;
        default:
            return VH_EXIT_USAGE;
        }
    }
    capture = optind < argc ? argv[optind] : NULL;
    db = optind + 1 < argc ? argv[optind + 1] : NULL;
    if (optind + 2 < argc) {
        vh_errorf("load", "too many arguments (see vheap-analyze load --help)");
        return VH_EXIT_USAGE;
    }
    if (!capture) {
        vh_errorf("load", "no capture given (see vheap-analyze load --help)");
        return VH_EXIT_USAGE;
    }
    if (!db) {
        if (db__default_path(capture, dflt, sizeof dflt)) {
            vh_errorf("load", "%s: path too long", capture);
            return VH_EXIT_DATA;
        }
        db = dflt;
    }
    if (load__capture(capture, db, &opts, &st, err, sizeof err)) {
        vh_errorf("load", "%s", err);
        return VH_EXIT_DATA;
    }
    if (st.symbols[0] && !opts.no_symbols)
        vh_errorf("load", "warning: symbols: %s", st.symbols);
    if (fmt != OUT_TABLE && print_stats(fmt, capture, db, &st))
        return VH_EXIT_DATA;
    if (!quiet && fmt == OUT_TABLE)
        vh_notef("loaded %llu records into %s: %llu stacks, %llu frames, %llu blocks live at "
                 "the end (%.2f s, %.1fM records/s)",
                (unsigned long long)st.records, db, (unsigned long long)st.stacks,
                (unsigned long long)st.frames, (unsigned long long)st.leaks, st.seconds,
                st.stream_seconds > 0 ? st.records / st.stream_seconds / 1e6 : 0.0);
    if (verbose)
        fprintf(stderr,
                "phases: stream %.3f s (CPU %.3f s, %.1fM records/CPU s), write %.3f s, "
                "symbols %.3f s, indexes %.3f s\n",
                st.stream_seconds, st.stream_cpu_seconds,
                st.stream_cpu_seconds > 0 ? st.records / st.stream_cpu_seconds / 1e6 : 0.0,
                st.write_seconds, st.symbols_seconds, st.index_seconds);
    if (verbose && st.reordered)
        fprintf(stderr, "settled %llu cross-thread misorders (meta.reordered)\n",
                (unsigned long long)st.reordered);
    if (st.damage_count) {
        if (st.damage_count > 1)
            vh_errorf("load", "%s: %s (%u damaged regions)", capture, st.damage, st.damage_count);
        else
            vh_errorf("load", "%s: %s", capture, st.damage);
        return VH_EXIT_DATA;
    }
    return VH_EXIT_OK;
}
