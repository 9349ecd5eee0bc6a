/* top_event.h — `top --by-event` and `series --by-event`: the events a
 * program marked (event_spans), ranked or in time order (cmd/top_event.c). */
#ifndef VHEAP_TOP_EVENT_H
#define VHEAP_TOP_EVENT_H

struct vh_query;

/* Lists the events of q's open DB: ranked by measure `by` (NULL: bytes),
 * at most q's --limit; or, with `in_time` set, every event in time order
 * with the loom's in-use bytes and headroom. 0 or an error already said. */
int vh_top_events(struct vh_query *q, const char *by, int in_time);

#endif
