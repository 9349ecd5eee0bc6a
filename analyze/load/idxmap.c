/* idxmap.c — growing the loader's (u64, u64) -> u32 map (idxmap.h). */
#include <errno.h>
#include <stdlib.h>

#include "analyze/load/idxmap.h"
#include "analyze/util/grow.h"

int idxmap__put(struct idxmap *m, uint64_t a, uint64_t b, uint32_t v)
{
    if ((m->count + 1) * 2 > m->mask + 1 || !m->s) {
        size_t n = m->s ? (m->mask + 1) * 2 : 1024;
        struct idx_slot *s = vh_calloc_table(n, sizeof *s);
        if (!s)
            return -ENOMEM;
        for (size_t i = 0; m->s && i <= m->mask; i++) {
            if (!m->s[i].v)
                continue;
            size_t j = idxmap__mix(m->s[i].a, m->s[i].b) & (n - 1);
            while (s[j].v)
                j = (j + 1) & (n - 1);
            s[j] = m->s[i];
        }
        free(m->s);
        m->s = s;
        m->mask = n - 1;
    }
    size_t i = idxmap__mix(a, b) & m->mask;
    while (m->s[i].v)
        i = (i + 1) & m->mask;
    m->s[i] = (struct idx_slot){ .a = a, .b = b, .v = v + 1 };
    m->count++;
    return 0;
}

void idxmap__clear(struct idxmap *m)
{
    free(m->s);
    m->s = NULL;
    m->mask = m->count = 0;
}
