/* export.c — what every export format shares (export.h): its notes on
 * stderr, its queries, file names. The command line is cmd/export.c. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "analyze/export/export.h"
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
