/* cmd_load.c — `vheap-analyze load CAPTURE [DB]`: the command-line face of
 * load.c. Query commands load captures by themselves (db__ensure); this
 * command is for choosing the DB path, loading ahead of time, and scripts. */
#include <stdio.h>
#include <string.h>

#include "analyze/cli.h"
#include "analyze/db.h"
#include "analyze/load.h"

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
        "symbolized (function, file, line) at the end of the load. The DB is\n"
        "written under a temporary name and renamed when complete; an existing DB\n"
        "is replaced, any other existing file is refused. A capture whose program\n"
        "still runs is loaded as far as it is written now.\n"
        "\n"
        "options:\n"
        "  --no-symbols    keep frames as module + offset (faster; no debug info)\n"
        "  --progress      show a progress bar on stderr (default: when a tty)\n"
        "  --no-progress   never show it\n"
        "  -q, --quiet     no closing line on stderr\n"
        "  -v, --verbose   also print the time each phase took\n"
        "\n"
        "examples:\n"
        "  vheap-analyze load vheap.myprog.1234.vhcap\n"
        "  vheap-analyze load run.vhcap run.sqlite\n"
        "  sqlite3 run.sqlite 'SELECT heap, allocations, peak_bytes, leaked_bytes FROM summary'\n"
        "\n"
        "exit status: 0 loaded; 1 unreadable or damaged capture (a damaged one is\n"
        "still loaded as far as it is valid, and the damage is stored in meta);\n"
        "2 usage error.\n",
});

static int run_load(int argc, char **argv)
{
    struct load_opts opts = { .progress = -1 };
    struct load_stats st;
    const char *capture = NULL, *db = NULL;
    char dflt[4096], err[512];
    int quiet = 0, verbose = 0, dashdash = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!dashdash && a[0] == '-' && a[1]) {
            if (!strcmp(a, "--"))
                dashdash = 1;
            else if (!strcmp(a, "--no-symbols"))
                opts.no_symbols = 1;
            else if (!strcmp(a, "--progress"))
                opts.progress = 1;
            else if (!strcmp(a, "--no-progress"))
                opts.progress = 0;
            else if (!strcmp(a, "-q") || !strcmp(a, "--quiet"))
                quiet = 1;
            else if (!strcmp(a, "-v") || !strcmp(a, "--verbose"))
                verbose = 1;
            else {
                vh_errorf("load", "unknown option '%s' (see vheap-analyze load --help)", a);
                return VH_EXIT_USAGE;
            }
        } else if (!capture) {
            capture = a;
        } else if (!db) {
            db = a;
        } else {
            vh_errorf("load", "too many arguments (see vheap-analyze load --help)");
            return VH_EXIT_USAGE;
        }
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
    if (!quiet)
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
