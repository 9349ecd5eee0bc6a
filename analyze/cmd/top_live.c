/* cmd/top_live.c — `vheap-analyze top --live CAPTURE|PID`: a running
 * program's live bytes, allocation rate and top stacks, looked at again
 * every interval: the capture followed (load/follow.h: each look reads
 * only what was added, its stacks named in a scratch DB), its counters
 * ranked by query/live.h, drawn full-screen with keys (render/term.h) or,
 * when the output is not a terminal, printed look after look as plain
 * text. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analyze/cmd/cli.h"
#include "analyze/cmd/livecap.h"
#include "analyze/cmd/top_live.h"
#include "analyze/load/follow.h"
#include "analyze/query/live.h"
#include "analyze/query/stacks.h"
#include "analyze/render/output.h"
#include "analyze/render/term.h"
#include "analyze/util/grow.h"

struct view {
    const struct vh_command *cmd;
    struct vh_livecap lc;
    struct vh_live *live;
    enum vh_live_by by;
    long limit, iterations;
    double interval;
    int screen;                    /* full-screen (1) or plain text (0)      */
    int exited;                    /* the program has ended                  */
    char dir[64], db_path[96];     /* the scratch DB                         */
    struct load_follow *follow;    /* the capture as read so far             */
    struct vh_live_in_row *rows;   /* its counters, for query/live.h         */
    size_t caprows;
    double load_s;                 /* what the last look's reading took      */
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Intervals on the monotonic clock; a look's time on the wall clock, which
 * the capture's start is on (query/live.h). */
static uint64_t now_ns(void)
{
    return clock_ns(CLOCK_MONOTONIC);
}

/* ---- options ------------------------------------------------------------------ */

static int by_name(const char *s, enum vh_live_by *by)
{
    for (int i = 0; i < VH_LIVE_BY_N; i++)
        if (!strcmp(s, vh_live__by_name((enum vh_live_by)i))) {
            *by = (enum vh_live_by)i;
            return 0;
        }
    return -1;
}

static int parse(struct view *v, int argc, char **argv)
{
    static const struct option lo[] = {
        { "live", no_argument, NULL, 'L' },      { "by", required_argument, NULL, 'b' },
        { "limit", required_argument, NULL, 'n' }, { "interval", required_argument, NULL, 'i' },
        { "iterations", required_argument, NULL, 'c' }, { NULL, 0, NULL, 0 },
    };
    const char *opt;
    char *end;
    int c;
    optind = 0;
    while ((c = vh_getopt(v->cmd, argc, argv, ":", lo, &opt)) != -1) {
        switch (c) {
        case 'L':
            break;
        case 'b':
            if (by_name(optarg, &v->by)) {
                vh_errorf(v->cmd->name, "--live --by: '%s' is not live, growth or rate", optarg);
                return -1;
            }
            break;
        case 'n':
        case 'c': {
            long n = strtol(optarg, &end, 10);
            if (*end || end == optarg || n < 0 || n > 1000000) {
                vh_errorf(v->cmd->name, "%s: '%s' is not a count", opt, optarg);
                return -1;
            }
            *(c == 'n' ? &v->limit : &v->iterations) = n;
            break;
        }
        case 'i':
            v->interval = strtod(optarg, &end);
            if (*end || end == optarg || !(v->interval >= 0.1 && v->interval <= 3600)) {
                vh_errorf(v->cmd->name, "--interval: '%s' is not 0.1 to 3600 seconds", optarg);
                return -1;
            }
            break;
        case ':':
            vh_errorf(v->cmd->name, "%s needs a value", opt);
            return -1;
        default:                   /* vh_getopt said which */
            return -1;
        }
    }
    if (argc - optind != 1) {
        vh_errorf(v->cmd->name, "--live wants one CAPTURE or PID of a running program");
        return -1;
    }
    return 0;
}

/* ---- one look ----------------------------------------------------------------- */

/* The counters read so far, handed to query/live.h. */
static int rank(struct view *v)
{
    struct load_follow_totals t;
    size_t n = load__follow_count(v->follow);

    if (vh_reserve(&v->rows, &v->caprows, n ? n : 1, sizeof *v->rows, 256))
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        struct load_follow_stack s;
        load__follow_stack(v->follow, i, &s);
        v->rows[i] = (struct vh_live_in_row){ .stack_id = s.stack,
                                              .live_bytes = (double)s.live_bytes,
                                              .live_blocks = (double)s.live_blocks,
                                              .allocated = (double)s.allocated };
    }
    load__follow_totals(v->follow, &t);
    struct vh_live_in in = { .live_bytes = (double)t.live_bytes,
                             .live_blocks = (double)t.live_blocks,
                             .allocated = (double)t.allocated,
                             .start_realtime_ns = t.start_realtime_ns,
                             .last_time_ns = t.last_time,
                             .sample_rate = (int64_t)t.sample_rate };
    return vh_live__look(v->live, &in, v->rows, n, clock_ns(CLOCK_REALTIME));
}

/* One look: the records added since the last (all of them the first
 * time), then the ranking. */
static int look(struct view *v)
{
    char err[512];
    uint64_t t0 = now_ns();
    int rc;

    rc = v->follow ? load__follow_step(v->follow, err, sizeof err)
                   : load__follow_open(v->lc.path, v->db_path, NULL, &v->follow, err, sizeof err);
    if (rc) {
        vh_errorf(v->cmd->name, "%s", err);
        return rc;
    }
    if ((rc = rank(v))) {
        vh_errorf(v->cmd->name, "out of memory");
        return rc;
    }
    v->load_s = (double)(now_ns() - t0) / 1e9;
    return 0;
}

/* ---- drawing ------------------------------------------------------------------ */

static const char *bytes(double b, char *buf, size_t n)
{
    if (b < 0) {
        char tmp[32];
        snprintf(buf, n, "-%s", out__human_bytes((int64_t)(-b + 0.5), tmp, sizeof tmp));
        return buf;
    }
    return out__human_bytes((int64_t)(b + 0.5), buf, n);
}

/* "function (file:line) < caller" for a stack, into buf. */
static void stack_label(struct vh_stacks *s, int64_t id, char *buf, size_t n)
{
    int err = 0;
    struct out_stack *st = s ? vh_stacks__get(s, id, &err) : NULL;
    size_t at = 0;
    buf[0] = 0;
    for (size_t i = 0; st && i < st->n && i < 2 && at < n; i++) {
        const struct out_frame *f = &st->frames[i];
        const char *fn = f->function ? f->function : "???";
        const char *file = f->file ? strrchr(f->file, '/') : NULL;
        file = file ? file + 1 : f->file;
        if (file && f->line > 0)
            at += (size_t)snprintf(buf + at, n - at, "%s%s (%s:%" PRId64 ")", i ? " < " : "",
                                   fn, file, f->line);
        else
            at += (size_t)snprintf(buf + at, n - at, "%s%s", i ? " < " : "", fn);
    }
    if (!buf[0])
        snprintf(buf, n, "[stack %" PRId64 "]", id);
    out_stack__free(st);
}

static void draw(struct view *v)
{
    const struct vh_live_totals *t = vh_live__totals(v->live);
    char a[32], b[32], c[32], label[512];
    int cols = 1 << 20, rows = 1 << 20;
    struct vh_stacks *stacks = NULL;

    if (v->screen) {
        vh_term__size(&cols, &rows);
        fputs(VH_TERM_HOME, stdout);
    } else {
        printf("--- look %u\n", t->looks);
    }
    printf("pid %" PRIu32 "  %s%s\n", v->lc.pid, v->lc.path,
           v->exited ? "  (the program has exited)" : "");
    printf("live %s in %.0f blocks   allocating %s/s   live %s since the view started   "
           "run %.1fs\n",
           bytes(t->live_bytes, a, sizeof a), t->live_blocks, bytes(t->rate, b, sizeof b),
           bytes(t->growth, c, sizeof c), (double)t->runtime_ns / 1e9);
    if (t->sample_rate)
        printf("sampled every %s: every number is an estimate\n",
               bytes((double)t->sample_rate, a, sizeof a));
    printf("ranked by %s%s (read %.2fs)\n", vh_live__by_name(v->by),
           v->screen ? "   keys: l live  g growth  r rate  q quit" : "", v->load_s);
    printf("%10s %10s %10s %12s  %s\n", "live", "blocks", "growth", "rate/s", "stack");
    size_t n = (size_t)v->limit;
    if (v->screen && rows > 7 && n > (size_t)rows - 7)
        n = (size_t)rows - 7;
    const struct vh_live_row *r = vh_live__top(v->live, v->by, &n);
    if (n && vh_stacks__new(load__follow_db(v->follow), 0, &stacks))
        stacks = NULL;             /* then named by id */
    for (size_t i = 0; i < n; i++) {
        stack_label(stacks, r[i].stack_id, label, sizeof label);
        int w = printf("%10s %10.0f %10s %12s  ", bytes(r[i].live_bytes, a, sizeof a),
                       r[i].live_blocks, bytes(r[i].growth, b, sizeof b),
                       bytes(r[i].rate, c, sizeof c));
        int room = cols - w > 8 ? cols - w : 8;
        printf("%.*s\n", room, label);
    }
    if (!n)
        printf("(no stack has anything to show for %s)\n", vh_live__by_name(v->by));
    vh_stacks__free(stacks);
    if (!v->screen)
        putchar('\n');
    fflush(stdout);
}

/* The scratch DB and what SQLite may have left beside it. */
static void scratch_remove(const struct view *v)
{
    static const char *const suffix[] = { "", "-journal", "-wal", "-shm" };
    char p[128];
    for (size_t i = 0; i < sizeof suffix / sizeof suffix[0]; i++) {
        snprintf(p, sizeof p, "%s%s", v->db_path, suffix[i]);
        unlink(p);
    }
    rmdir(v->dir);
}

/* ---- the loop ----------------------------------------------------------------- */

/* Waits out the interval from `t0`, acting on keys: 1 to quit. */
static int wait_keys(struct view *v, uint64_t t0)
{
    for (;;) {
        uint64_t el = now_ns() - t0, want = (uint64_t)(v->interval * 1e9);
        if (stop)
            return 1;
        if (!v->screen) {
            if (el >= want)
                return 0;
            struct timespec ts = { 0, (long)((want - el) % 1000000000ull) };
            ts.tv_sec = (time_t)((want - el) / 1000000000ull);
            nanosleep(&ts, NULL);
            continue;
        }
        /* exited: shown until q */
        int ms = v->exited ? 1000 : el >= want ? 0 : (int)((want - el) / 1000000) + 1;
        if (!v->exited && el >= want)
            return 0;
        int k = vh_term__key(ms);
        enum vh_live_by by = v->by;
        if (k == 'q' || k == 'Q' || k < 0)
            return 1;
        if (k == 'l')
            by = VH_LIVE_BY_LIVE;
        else if (k == 'g')
            by = VH_LIVE_BY_GROWTH;
        else if (k == 'r')
            by = VH_LIVE_BY_RATE;
        else if (k == '\t')
            by = (enum vh_live_by)((v->by + 1) % VH_LIVE_BY_N);
        if (by != v->by) {
            v->by = by;
            draw(v);
        }
    }
}

static int loop(struct view *v)
{
    for (long i = 0; !stop; i++) {
        uint64_t t0 = now_ns();
        int running = vh_livecap__running(&v->lc);
        if (look(v))
            return VH_EXIT_DATA;
        v->exited = !running;
        draw(v);
        if (!v->screen && (v->exited || (v->iterations && i + 1 >= v->iterations)))
            break;
        if (wait_keys(v, t0))
            break;
    }
    return VH_EXIT_OK;
}

int vh_top_live(const struct vh_command *cmd, int argc, char **argv)
{
    struct view v = { .cmd = cmd, .limit = 10, .interval = 1.0 };
    int rc = VH_EXIT_USAGE, term = 0;

    if (parse(&v, argc, argv))
        return VH_EXIT_USAGE;
    if (vh_livecap__find(cmd->name, argv[optind], &v.lc))
        return VH_EXIT_DATA;
    const char *tmp = getenv("TMPDIR");
    snprintf(v.dir, sizeof v.dir, "%.40s/vheap-live.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(v.dir)) {
        vh_errorf(cmd->name, "cannot make a scratch directory %s: %s", v.dir, strerror(errno));
        return VH_EXIT_DATA;
    }
    snprintf(v.db_path, sizeof v.db_path, "%s/live.sqlite", v.dir);
    if (!(v.live = vh_live__new())) {
        vh_errorf(cmd->name, "out of memory");
        rc = VH_EXIT_DATA;
        goto out;
    }
    struct sigaction sa = { .sa_handler = on_signal };
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    if ((term = vh_term__open()) < 0) {
        vh_errorf(cmd->name, "cannot set up the terminal: %s", strerror(-term));
        rc = VH_EXIT_DATA;
        goto out;
    }
    v.screen = term;
    rc = loop(&v);
out:
    vh_term__close();
    load__follow_close(v.follow);
    free(v.rows);
    vh_live__free(v.live);
    scratch_remove(&v);
    return rc;
}
