/* stacks.h — a DB's stacks as the renderer shows them (render/output.h's
 * out_stack): innermost frame first, each with its module, symbol, file and
 * line and the functions inlined into it, at most max_depth frames (the rest
 * counted as omitted). */
#ifndef VHEAP_STACKS_H
#define VHEAP_STACKS_H

#include <sqlite3.h>
#include <stdint.h>

#include "analyze/render/output.h"

struct vh_stacks;
int vh_stacks__new(sqlite3 *db, int64_t max_depth, struct vh_stacks **out);
/* vh_stacks__new for a command: a failure is reported as "reading stacks". */
int vh_stacks__open(const char *cmd, sqlite3 *db, int64_t max_depth, struct vh_stacks **out);
/* The stack `id` (NULL-free: an empty stack when it has no frames), or NULL
 * with *err set on a database error. */
struct out_stack *vh_stacks__get(struct vh_stacks *s, int64_t id, int *err);
void vh_stacks__free(struct vh_stacks *s);

#endif
