/* feeder.c — reading the capture into batches on a thread of its own
 * (feeder.h), coarse times mapped on the way. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/capture/coarse.h"
#include "analyze/load/feeder.h"

static void batch_clear(struct batch *b)
{
    for (size_t i = 0; i < b->ncopies; i++)
        free(b->copies[i]);
    b->ncopies = 0;
}

/* Keeps ev->rec valid for as long as the batch: 0 or -ENOMEM. */
static int batch_keep(struct feeder *F, struct batch *b, struct vh_event *ev)
{
    const char *r = (const char *)ev->rec;
    size_t size;
    void *copy;

    if ((r >= F->lo && r < F->hi) ||
        (r >= (const char *)&ev->dec && r < (const char *)(&ev->dec + 1)))
        return 0;
    size = vh_record_size(ev->rec);
    if (size < ev->size)
        size = ev->size;
    if (size < sizeof(struct vh_rec_hdr))
        size = sizeof(struct vh_rec_hdr);
    if (b->ncopies == b->capcopies) {
        size_t n = b->capcopies ? b->capcopies * 2 : 16;
        void **p = realloc(b->copies, n * sizeof *p);
        if (!p)
            return -ENOMEM;
        b->copies = p;
        b->capcopies = n;
    }
    if (!(copy = malloc(size)))
        return -ENOMEM;
    memcpy(copy, r, size);
    b->copies[b->ncopies++] = copy;
    ev->rec = copy;
    return 0;
}

static void batch_fill(struct feeder *F, struct batch *b)
{
    size_t n = 0;
    int more = 1;

    batch_clear(b);
    while (n < BATCH && (more = capture__next(F->cap, &b->ev[n]) == 1)) {
        if (F->coarse)
            b->ev[n].time = coarse__map(F->coarse, b->ev[n].time);
        if (batch_keep(F, b, &b->ev[n])) {
            F->oom = 1;
            more = 0;
            break;
        }
        n++;
    }
    b->n = n;
    b->last = !more;
    b->done = capture__progress(F->cap, &b->total);
}

static void *feeder_main(void *arg)
{
    struct feeder *F = arg;

    for (uint64_t k = 0;; k++) {
        int quit;
        pthread_mutex_lock(&F->mu);
        while (!F->quit && k - F->released >= NBATCH) {
            F->pwait = 1;
            pthread_cond_wait(&F->cv, &F->mu);
        }
        F->pwait = 0;
        quit = F->quit;
        pthread_mutex_unlock(&F->mu);
        if (quit)
            break;
        struct batch *b = &F->b[k % NBATCH];
        batch_fill(F, b);
        pthread_mutex_lock(&F->mu);
        F->filled = k + 1;
        if (F->cwait)
            pthread_cond_broadcast(&F->cv);
        pthread_mutex_unlock(&F->mu);
        if (b->last)
            break;
    }
    return NULL;
}

int feeder__start(struct feeder *F, struct capture *cap)
{
    memset(F, 0, sizeof *F);
    F->cap = cap;
    F->lo = (const char *)capture__header(cap);
    F->hi = F->lo + capture__file_size(cap);
    if (!(F->b = calloc(NBATCH, sizeof *F->b)) || coarse__build(cap, &F->coarse))
        return -ENOMEM;
    if (pthread_mutex_init(&F->mu, NULL))
        return 0;
    if (pthread_cond_init(&F->cv, NULL)) {
        pthread_mutex_destroy(&F->mu);
        return 0;
    }
    if (pthread_create(&F->thread, NULL, feeder_main, F)) {
        pthread_cond_destroy(&F->cv);
        pthread_mutex_destroy(&F->mu);
        return 0;
    }
    F->threaded = 1;
    return 0;
}

struct batch *feeder__take(struct feeder *F, uint64_t k)
{
    struct batch *b = &F->b[k % NBATCH];

    if (!F->threaded) {
        while (F->filled <= k) {
            batch_fill(F, &F->b[F->filled % NBATCH]);
            F->filled++;
        }
        return b;
    }
    pthread_mutex_lock(&F->mu);
    while (F->filled <= k) {
        F->cwait = 1;
        pthread_cond_wait(&F->cv, &F->mu);
    }
    F->cwait = 0;
    pthread_mutex_unlock(&F->mu);
    return b;
}

void feeder__release(struct feeder *F, uint64_t k)
{
    struct batch *b = &F->b[k % NBATCH];

    if (b->nskip) {
        memset(b->skip, 0, sizeof b->skip);
        b->nskip = 0;
    }
    if (!F->threaded)
        return;
    /* a waiting feeder is woken when half the ring is free, not for each
     * batch: fewer sleeps and wake-ups on both sides */
    pthread_mutex_lock(&F->mu);
    F->released = k + 1;
    if (F->pwait && F->filled - F->released <= NBATCH / 2)
        pthread_cond_broadcast(&F->cv);
    pthread_mutex_unlock(&F->mu);
}

void feeder__stop(struct feeder *F)
{
    if (F->threaded) {
        pthread_mutex_lock(&F->mu);
        F->quit = 1;
        pthread_cond_broadcast(&F->cv);
        pthread_mutex_unlock(&F->mu);
        pthread_join(F->thread, NULL);
        pthread_cond_destroy(&F->cv);
        pthread_mutex_destroy(&F->mu);
        F->threaded = 0;
    }
    for (size_t i = 0; F->b && i < NBATCH; i++) {
        batch_clear(&F->b[i]);
        free(F->b[i].copies);
    }
    free(F->b);
    F->b = NULL;
    coarse__free(F->coarse);
    F->coarse = NULL;
}
