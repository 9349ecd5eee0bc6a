/* recording.c — reads how a capture was recorded back out of its DB (see
 * recording.h). */
#include <stdio.h>
#include <string.h>

#include "analyze/util/diag.h"
#include "analyze/render/output.h"
#include "analyze/query/recording.h"

int64_t vh_rec_sample_rate(sqlite3 *db)
{
    sqlite3_stmt *st;
    int64_t r = 0;

    if (sqlite3_prepare_v2(db, "SELECT sample_rate FROM processes ORDER BY id LIMIT 1", -1, &st,
                           NULL))
        return 0;
    if (sqlite3_step(st) == SQLITE_ROW)
        r = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return r > 0 ? r : 0;
}

const char *vh_rec_no_frag(sqlite3 *db)
{
    return vh_rec_sample_rate(db)
               ? "a sampled capture (VHEAP_SAMPLE) holds a sample of the blocks, not the heap's "
                 "layout: fragmentation cannot be estimated from it; record in full for it"
               : NULL;
}

int vh_rec_windows(sqlite3 *db, char *buf, size_t n, int64_t *on_ns)
{
    sqlite3_stmt *st;
    int64_t runtime = 0, on = 0, count = 0, first = 0, last = 0;
    size_t len;
    char a[32], b[32];

    buf[0] = 0;
    *on_ns = 0;
    if (sqlite3_prepare_v2(db,
                           "SELECT (SELECT runtime_ns FROM processes ORDER BY id LIMIT 1),"
                           "       count(*), coalesce(sum(end_time - start_time), 0),"
                           "       min(start_time), max(end_time) FROM windows",
                           -1, &st, NULL))
        return 0;
    if (sqlite3_step(st) == SQLITE_ROW) {
        runtime = sqlite3_column_int64(st, 0);
        count = sqlite3_column_int64(st, 1);
        on = sqlite3_column_int64(st, 2);
        first = sqlite3_column_int64(st, 3);
        last = sqlite3_column_int64(st, 4);
    }
    sqlite3_finalize(st);
    *on_ns = on;
    if (count == 1 && first == 0 && last >= runtime)
        return 0;                      /* on throughout */
    len = (size_t)snprintf(buf, n, "%lld window%s, %s of %s", (long long)count,
                           count == 1 ? "" : "s", out__human_ns(on, a, sizeof a),
                           out__human_ns(runtime, b, sizeof b));
    if (!count) {
        snprintf(buf + (len < n ? len : n - 1), n - (len < n ? len : n - 1),
                 ": nothing recorded");
        return 1;
    }
    if (sqlite3_prepare_v2(db, "SELECT start_time, end_time FROM windows ORDER BY start_time",
                           -1, &st, NULL))
        return 1;
    for (const char *sep = ": "; len < n && sqlite3_step(st) == SQLITE_ROW; sep = ", ") {
        size_t room = n - len;
        int k = snprintf(buf + len, room, "%s%s-%s", sep,
                         out__human_ns(sqlite3_column_int64(st, 0), a, sizeof a),
                         out__human_ns(sqlite3_column_int64(st, 1), b, sizeof b));
        if (k < 0 || (size_t)k >= room - 5) {   /* keep room for ", ..." */
            buf[len] = 0;
            snprintf(buf + len, room, ", ...");
            break;
        }
        len += (size_t)k;
    }
    sqlite3_finalize(st);
    return 1;
}

void vh_rec_notes(const char *cmd, sqlite3 *db)
{
    char w[256], r[32];
    int64_t on, rate = vh_rec_sample_rate(db);

    if (rate)
        vh_errorf(cmd, "note: sampled capture (one sample every %s allocated, on average): "
                       "the numbers are estimates",
                  out__human_bytes(rate, r, sizeof r));
    if (vh_rec_windows(db, w, sizeof w, &on))
        vh_errorf(cmd, "note: recording was on over %s; the numbers (leaks and peak among "
                       "them) cover those windows only",
                  w);
}
