/* feeder.h — the capture is read on a thread of its own. Decoding and
 * merging the capture's per-thread streams costs about as much as
 * everything the loader then does with an event, so a second thread reads
 * it: capture__next() straight into batches of BATCH events, NBATCH of
 * them in a ring. An event's rec points into the mapping (which lives as
 * long as the capture) or into the event's own `dec`, so an event stays
 * usable in its batch slot until the batch is released; a record found
 * anywhere else is copied out. Without a thread the loader's own thread
 * fills each batch when it first needs it. The loader may take batch
 * k + 1 before it releases k (settle() looks ahead); a batch taken again
 * is handed out as it is. */
#ifndef VHEAP_LOAD_FEEDER_H
#define VHEAP_LOAD_FEEDER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "analyze/capture/reader.h"

#define BATCH 1024u                   /* events handed over at once: the ring
                                         stays in the caches (80 KiB each)   */
#define NBATCH 8u                     /* batches in flight                   */

struct batch {
    struct vh_event ev[BATCH];
    size_t n;
    int last;                          /* the stream ends with this batch    */
    uint64_t done, total;              /* capture__progress() after it       */
    void **copies;                     /* records copied out, freed with it  */
    size_t ncopies, capcopies;
    size_t nskip;                      /* records settle() processed ahead of */
    uint8_t skip[BATCH];               /* their turn: 1 at their index; the
                                          loader's own (it clears them before
                                          releasing the batch)               */
};

struct feeder {
    struct capture *cap;
    struct coarse_map *coarse;         /* NULL: times are taken as they are  */
    const char *lo, *hi;               /* the mapping                        */
    struct batch *b;                   /* NBATCH                             */
    uint64_t filled, released;         /* batches, counting from 0           */
    int threaded, quit, oom;
    int pwait, cwait;                  /* the feeder / the loader is waiting */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

/* Starts reading cap: 0 or -ENOMEM; a feeder without a thread is not an
 * error. */
int feeder__start(struct feeder *F, struct capture *cap);
/* Batch k, once it is complete. */
struct batch *feeder__take(struct feeder *F, uint64_t k);
/* Batch k is done with: its slot may be filled again. */
void feeder__release(struct feeder *F, uint64_t k);
/* Stops the thread (wherever it is) and frees the batches; idempotent. */
void feeder__stop(struct feeder *F);

#endif
