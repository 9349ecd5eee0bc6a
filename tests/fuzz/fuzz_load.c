/* fuzz_load.c — libFuzzer target: the loader (analyze/load/load.c: capture ->
 * SQLite) and then every query command on the DB it wrote, as a user would
 * run them: whatever the capture holds, load either refuses it with one
 * line or writes a DB that db__open_read accepts, leaves no temporary file
 * behind, and summary, leaks, top and peak answer that DB with exit 0 in
 * the format the input picks, and its stack tree gives every stack its
 * depth in frames. The DB lives on tmpfs. Inputs whose header
 * pid is 1 modulo 8 are also symbolized (module paths and frames from the
 * input against whatever files exist here); the others load with
 * --no-symbols, which is much faster. */
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>

#include "analyze/cmd/cli.h"
#include "analyze/store/db.h"
#include "analyze/load/load.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64], db_path[128];

static void setup(void)
{
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";

    fz_init();
    snprintf(dir, sizeof dir, "%s/vheap-fuzz-load.XXXXXX", base);
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        abort();
    }
    snprintf(db_path, sizeof db_path, "%s/fuzz.sqlite", dir);
}

/* Files in the private directory other than the DB: temporaries left. */
static int strays(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    FZ_CHECK(d, "opendir %s", dir);
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
            strcmp(e->d_name, "fuzz.sqlite"))
            n++;
    closedir(d);
    return n;
}

/* Every query command in one format (each costs a DB open: one format per
 * input keeps the target fast enough to be useful). summary of a damaged
 * capture shows what is valid and exits 1; every other answer is 0. */
static void query_all(const char *format, int damaged)
{
    static const char *const cmds[] = { "summary", "leaks", "top", "peak" };

    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        const struct vh_command *cmd = vh_command_find(cmds[i]);
        char *argv[] = { (char *)cmds[i], (char *)"--format", (char *)format,
                         (char *)"--limit", (char *)"0", db_path, NULL };
        int x;
        if (!cmd)
            continue;                /* not linked in this tree yet */
        x = cmd->run(6, argv);
        int want = damaged && !strcmp(cmds[i], "summary") ? VH_EXIT_DATA : VH_EXIT_OK;
        FZ_CHECK(x == want, "%s --format %s on the loaded DB exited %d, want %d", cmds[i],
                 format, x, want);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct load_opts opts = { .progress = 0, .no_symbols = 1 };
    struct load_stats st;
    char err[512];
    const char *path;
    int rc;

    if (!dir[0])
        setup();
    path = fz_file(data, size);
    static const char *const formats[] = { "table", "json", "csv" };
    const char *format = formats[size > 44 ? data[44] % 3 : 0];

    /* pid % 8 == 1: symbolize (slow); ppid % 3: the output format. */
    if (size >= 44 && (data[40] & 7) == 1)
        opts.no_symbols = 0;
    unlink(db_path);

    rc = load__capture(path, db_path, &opts, &st, err, sizeof err);
    FZ_CHECK(strays() == 0, "temporary files left in %s (load returned %d)", dir, rc);
    if (rc) {
        struct stat sb;
        FZ_CHECK(rc < 0, "load returned %d", rc);
        fz_one_line("load__capture", err);
        FZ_CHECK(stat(db_path, &sb) != 0, "a refused load left a DB: %s", err);
        return 0;
    }
    if (st.damage_count)
        fz_one_line("damage", st.damage);
    {
        sqlite3 *db = NULL;
        sqlite3_stmt *st = NULL;
        FZ_CHECK(db__open_read(db_path, &db, err, sizeof err) == 0, "loaded DB refused: %s",
                 err);
        /* the call tree holds every stack whole: a stack's frames (the
         * stack_frames view's walk up from its node) are as many as its
         * depth, and parents come before their children */
        FZ_CHECK(sqlite3_prepare_v2(db,
                                    "SELECT (SELECT count(*) FROM stack_frames),"
                                    " (SELECT coalesce(sum(depth), 0) FROM stacks),"
                                    " (SELECT count(*) FROM stack_nodes WHERE parent >= id)",
                                    -1, &st, NULL) == SQLITE_OK &&
                     sqlite3_step(st) == SQLITE_ROW,
                 "reading the stack tree: %s", sqlite3_errmsg(db));
        FZ_CHECK(sqlite3_column_int64(st, 0) == sqlite3_column_int64(st, 1) &&
                     sqlite3_column_int64(st, 2) == 0,
                 "stack tree: %lld frames for a depth of %lld, %lld nodes after their children",
                 (long long)sqlite3_column_int64(st, 0), (long long)sqlite3_column_int64(st, 1),
                 (long long)sqlite3_column_int64(st, 2));
        sqlite3_finalize(st);
        sqlite3_close(db);
    }
    query_all(format, st.damage_count > 0);
    return 0;
}
