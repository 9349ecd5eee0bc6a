/* coarse.h — record times of a coarse-clock run made honest: the records
 * that read the same tick of the kernel's coarse clock are spread evenly
 * over the span they are known to lie in, so that a run shorter than a
 * tick or two gets a real runtime, real rates and a real timeline. */
#ifndef VHEAP_COARSE_H
#define VHEAP_COARSE_H

#include <stdint.h>

#include "analyze/capture/reader.h"

struct coarse_map;

/* Reads the capture's stream once (and rewinds it) when its header says
 * every time was coarse; *out stays NULL when nothing is mapped (exact
 * times, a run that switched to the exact clock, or one of more than 64
 * ticks). 0 or -ENOMEM. */
int coarse__build(struct capture *cap, struct coarse_map **out);
/* The time of the next record of the stream, in stream order, mapped. */
uint64_t coarse__map(struct coarse_map *m, uint64_t time);
/* How many tick groups the coarse part held. */
uint64_t coarse__groups(const struct coarse_map *m);
void coarse__free(struct coarse_map *m);

#endif
