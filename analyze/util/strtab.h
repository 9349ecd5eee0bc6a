/* strtab.h — interned strings: ids 1, 2, ... in order of first
 * appearance, each string stored once (frame names, file names). */
#ifndef VHEAP_STRTAB_H
#define VHEAP_STRTAB_H

#include <stddef.h>
#include <stdint.h>

struct vh_strtab;

struct vh_strtab *vh_strtab__new(void);            /* NULL on ENOMEM */
void vh_strtab__free(struct vh_strtab *t);
/* The id of s[0..len), adding it (*added = 1) when new. 0 on ENOMEM. */
uint32_t vh_strtab__intern(struct vh_strtab *t, const char *s, size_t len, int *added);
const char *vh_strtab__get(const struct vh_strtab *t, uint32_t id);
size_t vh_strtab__len(const struct vh_strtab *t, uint32_t id);
uint32_t vh_strtab__count(const struct vh_strtab *t);

#endif
