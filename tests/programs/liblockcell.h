/* liblockcell.h — what liblockcell.so's constructor leaves for lockcell:
 * the cell it ran (NULL: $VH_CELL named none) and the objects the cell made,
 * which lockcell uses again so their locks are taken a second time. */
#ifndef VHEAP_LIBLOCKCELL_H
#define VHEAP_LIBLOCKCELL_H

#include <iconv.h>
#include <pthread.h>
#include <stdio.h>

struct lc_state {
    const char *cell;
    pthread_once_t once;
    void *once_block;
    void *ctor_lib;
    FILE *file;
    iconv_t cd;
    char thread_error[512];
};

extern struct lc_state lc_state;
void lc_list(void);

#endif
