/* recording.h — what a loaded DB says about how its capture was recorded:
 * sampled or not (processes.sample_rate) and when recording was on (the
 * windows table); the notes every query prints when its numbers are
 * estimates or cover only part of the run. */
#ifndef VHEAP_RECORDING_H
#define VHEAP_RECORDING_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/* The capture's VHEAP_SAMPLE in bytes, 0 when every call was recorded. */
int64_t vh_rec_sample_rate(sqlite3 *db);

/* Why fragmentation is not computed for this capture, one line, or NULL.
 * A sampled capture holds a Poisson sample of blocks: holes, page use and
 * footprint depend on where every block lies, which a sample does not say
 * and no estimate from it bounds (1 M live blocks sampled as 43 read as a
 * page utilization of 1.37 %). So `frag` and the report refuse it. */
const char *vh_rec_no_frag(sqlite3 *db);

/* When recording was not on for the whole run: 1, and `buf` says over
 * which windows ("2 windows, 3.000s of 10.000s: 1.000s-2.000s,
 * 5.000s-7.000s"; long lists end in ", ..."); recorded ns in *on_ns. 0
 * (buf "") when it was on throughout. */
int vh_rec_windows(sqlite3 *db, char *buf, size_t n, int64_t *on_ns);

/* SQL for the weight of a leaks-table row of requested size `col` at a
 * sample rate bound as parameter `rate` (1/p, weight.h, clamped as
 * vh_sample_p_clamped does at 2^40): a real. */
#define VH_SQL_WEIGHT(col, rate)                                               \
    "(CASE WHEN " col " = 0 THEN 1.0 ELSE 1.0 / max(1.0 - exp(-1.0 * " col " / " rate "), " \
    "9.094947017729282e-13) END)"

/* Notes on stderr (diagnostics, whatever the format) for command `cmd`:
 * "numbers are estimates" for a sampled capture, the windows for a partial
 * one. Nothing for a full capture recorded throughout. */
void vh_rec_notes(const char *cmd, sqlite3 *db);

#endif
