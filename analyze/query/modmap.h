/* modmap.h — module names of one run read as another's. `diff A B` and
 * `report B --diff A` match stacks by function and module names (the
 * modules' file names): the same program under another file name
 * (prog-1.2, prog-1.3) would match nothing, so A's main program reads as
 * B's, and --map-module names other pairs. */
#ifndef VHEAP_MODMAP_H
#define VHEAP_MODMAP_H

#include <sqlite3.h>
#include <stddef.h>

struct vh_modmap;

struct vh_modmap *vh_modmap__new(void);
void vh_modmap__free(struct vh_modmap *m);

/* Adds the pairs of `spec`, "OLD=NEW[,OLD=NEW...]" (paths are reduced to
 * file names). 0, -EINVAL (a pair without '=' or with an empty side) or
 * -ENOMEM. A name mapped twice keeps its first pair. */
int vh_modmap__parse(struct vh_modmap *m, const char *spec);

/* Adds "A's main program reads as B's" (after the pairs given, so those
 * win). 0, also when either run has no main program; -EIO with the reason
 * in err; -ENOMEM. */
int vh_modmap__mains(struct vh_modmap *m, sqlite3 *a, sqlite3 *b, char *err, size_t errlen);

/* What module file name `name` reads as: its pair's NEW, else itself (also
 * for a NULL map). */
const char *vh_modmap__get(const struct vh_modmap *m, const char *name);

#endif
