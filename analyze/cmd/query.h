/* cmd/query.h — what the query commands (summary, leaks, top, peak, ...)
 * share: their option parsing (with a table for a command's own options),
 * opening the DB (or loading a capture) read-only, resolving --heap, reading
 * symbolized stacks for the renderer, and a run's startup and cleanup. */
#ifndef VHEAP_QUERY_OPTS_H
#define VHEAP_QUERY_OPTS_H

#include <sqlite3.h>
#include <stdint.h>

#include "analyze/cmd/cli.h"
#include "analyze/render/output.h"
#include "analyze/query/heap_sel.h"
#include "analyze/query/shadow.h"
#include "analyze/query/stacks.h"
#include "analyze/store/sql.h"
#include "analyze/util/parse_time.h"

/* The --help lines of the shared options, word for word in every command. */
#define VH_HELP_HEAP                                                               \
    "  --heap NAME      only this heap ('malloc' is the system allocator);\n"      \
    "                   NAME/* adds the heaps nested in it\n"
#define VH_HELP_DEPTH "  --depth N        at most N frames per stack (default: all)\n"
#define VH_HELP_TEMPORARY                                                          \
    "  --temporary D    whose definition of a temporary allocation: vheap\n"     \
    "                   (default: freed by its thread with nothing between) or\n"  \
    "                   heaptrack (1.4: a free right after an allocation of the\n" \
    "                   same size and stack, any thread or block)\n"
#define VH_HELP_BYTES_HELP                                                         \
    "  --bytes          exact byte counts instead of 2.20K-style sizes\n"          \
    "  -h, --help       this text\n"

/* Options a command accepts besides --format, --limit, --heap, --bytes and
 * --depth, which all query commands take. */
enum vh_qopt_extra {
    VH_QOPT_MIN_BYTES = 1u << 0,   /* --min-bytes N                          */
    VH_QOPT_BY = 1u << 1,          /* --by MEASURE                           */
    VH_QOPT_BY_TAG = 1u << 2,      /* --by-tag                               */
    VH_QOPT_TEMPORARY = 1u << 3,   /* --temporary vheap|heaptrack            */
};

struct vh_qopts {
    const char *input;             /* DB or capture path (the one operand)   */
    enum out_format format;        /* --format, default table                */
    int64_t limit;                 /* --limit, default 10; 0 = no limit      */
    int limit_given;               /* --limit was on the command line        */
    const char *heap;              /* --heap NAME|ID, NULL = every heap      */
    int raw_bytes;                 /* --bytes                                */
    int64_t depth;                 /* --depth: frames per stack, 0 = all     */
    int64_t min_bytes;             /* --min-bytes, default 0                 */
    const char *by;                /* --by, NULL if not given                */
    int by_tag;                    /* --by-tag                               */
    enum vh_temporary temporary;   /* --temporary: whose definition          */
};

/* One of a command's own options, taken out of argv before the shared ones
 * are parsed (vh_query__parse). Write them with the macros below. */
struct vh_opt {
    const char *name;              /* "--interval", "-o"; NULL: left out     */
    int has_value;                 /* "NAME VALUE" or "NAME=VALUE"; else a
                                      flag, matched exactly                  */
    const char **value;            /* the value goes here                    */
    int *flag;                     /* a flag given sets this to 1            */
};
#define VH_OPT_VALUE(n, dst) { .name = (n), .has_value = 1, .value = (dst) }
#define VH_OPT_FLAG(n, dst) { .name = (n), .flag = (dst) }
/* An option the shared parser knows that this command refuses: "unknown
 * option" at once, as for any other. */
#define VH_OPT_REFUSE_VALUE(n) { .name = (n), .has_value = 1 }
#define VH_OPT_REFUSE_FLAG(n) { .name = (n) }
/* An array of struct vh_opt as vh_query__parse()'s (own, nown). */
#define VH_OPTS(a) (a), sizeof(a) / sizeof((a)[0])

/* Binds --heap (text or NULL) to parameter `idx` (VH_HEAP_SEL). */
int vh_bind_heap(sqlite3_stmt *st, int idx, const struct vh_qopts *o);

/* The chosen heaps into `sel` (a temp table with an `id` column, emptied
 * first): see above. Returns how many, 0 when none matched, or -errno with
 * the reason in err. Exposed for tests. */
int vh_heap_select(sqlite3 *db, const char *heap, const char *sel, char *err, size_t errlen);

/* The value of column `i` as a renderer cell (INTEGER, REAL, TEXT or NULL).
 * The text stays valid until the next step: out__row() copies it. */
struct out_val vh_col_val(sqlite3_stmt *st, int i);

/* Renders: out__end() with a one-line error when the output failed. */
int vh_out_end(const struct vh_command *cmd, struct out *o);

/* ---- a query command's run ---------------------------------------------------
 * Every query command starts the same way (parse its options, open the DB,
 * start the output, open the stack reader) and ends the same way (render,
 * close everything, map the outcome to an exit code). vh_query_run() does
 * both around a function of the command's; a command with options of its
 * own, or checks before opening, calls the same steps itself:
 *
 *     struct vh_query q;
 *     int rc = vh_query__parse(&q, &cmd_x, extra, VH_OPTS(own), argc, argv);
 *     if (!rc) rc = ...checks, or vh_query__usage(&q, "...")...;
 *     if (!rc) rc = vh_query__open(&q, VH_QUERY_OUTPUT | VH_QUERY_STACKS);
 *     if (!rc) rc = ...vh_query__prepare(&q, sql, &st)..., q.out, q.stacks...;
 *     return vh_query__finish(&q, rc);
 */
#define VH_QUERY_STMTS 4

struct vh_query {
    const struct vh_command *cmd;
    struct vh_qopts o;
    sqlite3 *db;
    struct out *out;               /* stdout in o's format; NULL if not asked */
    struct vh_stacks *stacks;      /* o.depth frames a stack; NULL if not asked */
    sqlite3_stmt *st[VH_QUERY_STMTS];   /* finalized by vh_query__finish()    */
    sqlite3 *also[2];              /* vh_query__open_also()'s, closed too    */
    int nalso;
    int nst;
    int usage;                     /* a usage error: exit 2                  */
};

/* Clears q and parses argv (argv[0] is the command name): first the
 * command's own options (`own`, nown entries; none with NULL, 0) are taken
 * out of argv (everything after "--" is left), then the shared ones (--format,
 * --limit, --heap, --bytes, --depth and those `extra` asks for) and the one
 * operand are parsed. 0; -EINVAL after printing the usage error (one line
 * naming the problem: the command exits 2); -ENOMEM (not printed). */
int vh_query__parse(struct vh_query *q, const struct vh_command *cmd, unsigned extra,
                    const struct vh_opt *own, size_t nown, int argc, char **argv);

/* A usage error of the command's own (vh_errorf's text): printed; returns
 * -EINVAL and vh_query__finish() exits 2. */
int vh_query__usage(struct vh_query *q, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* What vh_query__open() starts besides the DB. */
enum vh_query_open_flags {
    VH_QUERY_OUTPUT = 1u << 0,     /* q->out: stdout, rendered by __finish   */
    VH_QUERY_STACKS = 1u << 1,     /* q->stacks: o.depth frames a stack      */
};

/* Opens q->o.input read-only, loading it first if it is a capture; resolves
 * --heap into the set of heaps it chooses (below), which must not be empty;
 * puts the shadow tables in place (shadow.h: libstdc++'s pool not leaked,
 * --temporary); then starts what `flags` ask for. 0 or -errno, the error
 * printed. */
int vh_query__open(struct vh_query *q, unsigned flags);

/* Opens another run, `input`, the same way with the same options (diff's
 * and report's baseline) into *db; vh_query__finish() closes it. */
int vh_query__open_also(struct vh_query *q, const char *input, sqlite3 **db);

/* Hands q->out to the caller, who renders (out__end) or drops (out__abort)
 * it: for a command whose output must come out before later work (series
 * draws its charts after the table). */
struct out *vh_query__take_out(struct vh_query *q);

/* With rc 0, renders q->out (vh_out_end); then frees everything. Returns
 * the exit code: 2 after a usage error, 1 after any other error, else 0. */
int vh_query__finish(struct vh_query *q, int rc);

/* Parse (no options of the command's own), open with `flags`, `body`,
 * finish: the exit code. */
int vh_query_run(const struct vh_command *cmd, unsigned extra, unsigned flags, int argc,
                 char **argv, int (*body)(struct vh_query *q));

/* Renders the current row of `st` (its first `ncols` columns, at most
 * VH_ROW_MAX) into q->out with the stack (read by q->stacks) whose id is in
 * column `stack_col` (none when stack_col is negative). For vh_step_all()
 * row callbacks of the per-stack lists (leaks, top, peak). */
#define VH_ROW_MAX 32
int vh_query__stack_row(struct vh_query *q, sqlite3_stmt *st, int ncols, int stack_col);

/* vh_prepare() of a statement that q finalizes. */
int vh_query__prepare(struct vh_query *q, const char *sql, sqlite3_stmt **st);

/* --limit as a SQL LIMIT: -1 (none) for 0. */
static inline int64_t vh_qopts_sql_limit(const struct vh_qopts *o)
{
    return o->limit ? o->limit : -1;
}

#endif
