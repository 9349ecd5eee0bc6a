/* report/frag_chart.c — `frag --series --svg`: fragmentation over time as
 * an SVG chart (render/svg.h): live, slack and free-but-unusable bytes
 * stacked, the footprint and RSS as lines, the program's marks. The points
 * are query/frag_series.c's. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/query/frame_rule.h"
#include "analyze/render/svg.h"
#include "analyze/report/frag_chart.h"
#include "analyze/store/sql.h"
#include "analyze/util/diag.h"

int frag_chart__write(const struct frag_run *c, uint64_t page_size, const struct frag_point *p,
                      size_t n, const char *path)
{
    double *x = malloc((n ? n : 1) * sizeof *x), *y[5];
    struct svg_chart *ch = NULL;
    char sub[320], pb[32];
    double stack_max = 0, line_max = 0;
    int rc = -ENOMEM;

    for (int k = 0; k < 5; k++)
        y[k] = malloc((n ? n : 1) * sizeof **y);
    if (!x || !y[0] || !y[1] || !y[2] || !y[3] || !y[4])
        goto out;
    for (size_t i = 0; i < n; i++) {
        const struct frag_totals *t = &p[i].t;
        x[i] = (double)p[i].time;
        y[0][i] = (double)t->requested;
        y[1][i] = (double)(t->usable - t->requested);
        y[2][i] = (double)t->unusable;
        y[3][i] = (double)t->footprint;
        y[4][i] = p[i].rss >= 0 ? (double)p[i].rss : NAN;
        if (y[0][i] + y[1][i] + y[2][i] > stack_max)
            stack_max = y[0][i] + y[1][i] + y[2][i];
        if (y[3][i] > line_max)
            line_max = y[3][i];
    }
    snprintf(sub, sizeof sub, "%s%s%zu heap%s%s%s; free-but-unusable: free bytes in holes, in "
                              "pieces smaller than a page (%s)",
             c->exe ? vh_base_name(c->exe) : "", c->exe ? ": " : "", c->nh, c->nh == 1 ? "" : "s",
             c->heap ? " chosen by --heap " : "", c->heap ? c->heap : "",
             out__human_bytes((int64_t)page_size, pb, sizeof pb));
    struct svg_chart_opts co = { .title = "Fragmentation over time", .subtitle = sub,
                                 .x_title = "time since start", .y_title = "bytes",
                                 .x_axis = SVG_AXIS_TIME_NS, .y_axis = SVG_AXIS_BYTES };
    if (!(ch = svg_chart__new(&co)) || (rc = svg_chart__set_x(ch, x, n)))
        goto out;
    /* a footprint far above the live bytes (a loom reserved at full size)
     * or a large RSS is drawn clipped rather than flattening everything
     * else; its legend says how high it goes */
    double rss_max = 0;
    char foot_note[96], rss_note[96], hb[32];
    for (size_t i = 0; i < n; i++)
        if (p[i].rss > 0 && (double)p[i].rss > rss_max)
            rss_max = (double)p[i].rss;
    int foot_off = stack_max > 0 && line_max > 4 * stack_max;
    int rss_off = stack_max > 0 && rss_max > 4 * stack_max;
    snprintf(foot_note, sizeof foot_note, "heap regions%s%s%s",
             foot_off ? "; up to " : "",
             foot_off ? out__human_bytes((int64_t)line_max, hb, sizeof hb) : "",
             foot_off ? ", off the chart" : "");
    snprintf(rss_note, sizeof rss_note, "whole process%s%s%s", rss_off ? "; up to " : "",
             rss_off ? out__human_bytes((int64_t)rss_max, hb, sizeof hb) : "",
             rss_off ? ", off the chart" : "");
    struct svg_series s[5] = {
        { .style = SVG_AREA, .label = "live (requested)", .y = y[0] },
        { .style = SVG_AREA, .label = "slack (usable - requested)", .y = y[1] },
        { .style = SVG_AREA, .label = "free but unusable", .note = "holes: pieces < a page",
          .y = y[2] },
        { .style = SVG_LINE, .label = "footprint", .note = foot_note, .no_scale = foot_off,
          .dashed = 1, .y = y[3] },
        { .style = SVG_LINE, .label = "RSS", .note = rss_note, .no_scale = rss_off, .y = y[4] },
    };
    for (int k = 0; k < (c->nrss ? 5 : 4); k++)
        if ((rc = svg_chart__add(ch, &s[k])))
            goto out;
    /* the program's marks (vheap_mark) inside the window */
    sqlite3_stmt *mst = NULL;
    if (n && !vh_prepare(c->cmd, c->db,
                         "SELECT time, label FROM marks WHERE time BETWEEN ?1 AND ?2"
                         " ORDER BY time LIMIT 100",
                         &mst)) {
        sqlite3_bind_int64(mst, 1, (int64_t)p[0].time);
        sqlite3_bind_int64(mst, 2, (int64_t)p[n - 1].time);
        while (!rc && sqlite3_step(mst) == SQLITE_ROW)
            rc = svg_chart__add_mark(ch, (double)sqlite3_column_int64(mst, 0),
                                     (const char *)sqlite3_column_text(mst, 1));
        sqlite3_finalize(mst);
        if (rc)
            goto out;
    }
    if ((rc = svg_chart__write_file(ch, path))) {
        vh_errorf(c->cmd, "writing %s: %s", path, strerror(-rc));
        goto out;
    }
    vh_errorf(c->cmd, "wrote %s", path);
out:
    if (rc == -ENOMEM)
        vh_errorf(c->cmd, "out of memory");
    svg_chart__free(ch);
    free(x);
    for (int k = 0; k < 5; k++)
        free(y[k]);
    return rc;
}
