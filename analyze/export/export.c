/* export.c — what every export format shares (export.h): its notes on
 * stderr, its queries, file names. The command line is cmd/export.c. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/export/export.h"
#include "analyze/util/path.h"
#include "analyze/store/events.h"
#include "analyze/store/sql.h"

void vh_export_note(const struct vh_export *x, const char *fmt, ...)
{
    FILE *f = x->notes_f ? x->notes_f : stderr;
    va_list ap;
    fprintf(f, "vheap-analyze: %s: ", x->cmd);
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
}

const char *vh_export_dest(const struct vh_export *x)
{
    return strcmp(x->out_path, "-") ? x->out_path : "stdout";
}

int vh_export_prepare(const struct vh_export *x, const char *sql, sqlite3_stmt **st)
{
    return vh_prepare(x->cmd, x->db, sql, st) ? -EIO : 0;
}

char *vh_export_frame_label(uint64_t addr, const char *fn, const char *file, int64_t line,
                            const char *module)
{
    char *s = NULL;
    int n;
    if (fn && file && line > 0)
        n = asprintf(&s, "0x%" PRIx64 ": %s (%s:%" PRId64 ")", addr, fn,
                     vh_base_name(file), line);
    else if (fn && module)
        n = asprintf(&s, "0x%" PRIx64 ": %s (in %s)", addr, fn, module);
    else if (fn)
        n = asprintf(&s, "0x%" PRIx64 ": %s", addr, fn);
    else if (module)
        n = asprintf(&s, "0x%" PRIx64 ": ??? (in %s)", addr, module);
    else
        n = asprintf(&s, "0x%" PRIx64 ": ???", addr);
    return n < 0 ? NULL : s;
}

int vh_export_block_move(struct vh_map *blocks, const struct vh_ev *ev)
{
    struct vh_map_ent *b = vh_map__find(blocks, ev->heap_id, ev->addr);
    int existed;
    if (!b)
        return 0;
    uint64_t v1 = b->v1, v2 = b->v2;
    vh_map__remove(blocks, b);
    if (!(b = vh_map__insert(blocks, ev->heap_id, ev->to, &existed)))
        return -ENOMEM;
    b->v1 = v1;
    b->v2 = v2;
    return 0;
}
