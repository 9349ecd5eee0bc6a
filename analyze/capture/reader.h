/* reader.h — reading a vheap capture: validation and the merged event stream.
 *
 * A capture is a set of per-thread chunks (common/capture_format.h). The
 * reader maps the file read-only, takes one snapshot of how much each chunk
 * holds (so a capture whose program still runs reads consistently), indexes
 * the STACK records in a first pass, and then yields every record of every
 * chunk merged into one stream ordered by time (ties: file offset).
 * Damage (a bad or missing chunk header, a record that runs past `used`, an
 * unknown fixed-size type, a malformed compact record, time going
 * backwards) ends that chunk only: everything valid elsewhere is still
 * yielded, and the damage is reported. Versions 1 and 2 are read. */
#ifndef VHEAP_CAPTURE_H
#define VHEAP_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#include "common/capture_format.h"

struct capture;

/* One record of the stream. `rec` is always an aligned struct of the
 * version 1 layout: a struct record inside the mapping, or a compact one
 * (version 2 ALLOC / RESIZE / FREE) decoded into this event's own `dec`.
 * So `rec` stays valid as long as this vh_event is neither overwritten
 * (say, by a later capture__next into it) nor copied: a copy's `rec` still
 * points into the original. */
struct vh_event {
    const struct vh_rec_hdr *rec;  /* the record (see above)                */
    size_t size;                   /* its encoded size in the file, bytes   */
    uint64_t time;                 /* ns since start (0 for none)           */
    uint64_t offset;               /* file offset of the record             */
    uint32_t tid;                  /* thread that wrote it (THREAD records) */
    uint32_t chunk;                /* chunk index                           */
    union vh_rec_compact dec;      /* rec of a decoded compact record       */
};

/* Opens and validates `path`. Returns 0, or -errno / -EINVAL with a one-line
 * reason in err (e.g. "not a vheap capture (bad magic)"). */
int capture__open(const char *path, struct capture **out, char *err, size_t errlen);

const struct vh_capture_header *capture__header(const struct capture *c);
uint64_t capture__file_size(const struct capture *c);
uint32_t capture__chunks(const struct capture *c);   /* chunks in snapshot */

/* argv strings of the header, NUL-separated; *len bytes. */
const char *capture__argv(const struct capture *c, size_t *len);

/* The frames of stack `id` (innermost first), or NULL if no STACK record with
 * that id is in the capture. */
const uint64_t *capture__stack(const struct capture *c, uint32_t id, uint32_t *depth,
                               uint8_t *flags);
uint32_t capture__max_stack_id(const struct capture *c);
/* Stack ids are below this and dense enough (the capture's STACK records
 * at least a quarter of them) to index arrays by; 0 when they are not. */
uint32_t capture__dense_stacks(const struct capture *c);

/* Next record in time order: 1 with *ev filled, 0 at the end. PAD bytes
 * are skipped, never yielded. */
int capture__next(struct capture *c, struct vh_event *ev);

/* Restarts the merged stream from the beginning (same snapshot). */
void capture__rewind(struct capture *c);

/* Follows a capture whose program still writes it: once capture__next has
 * returned 0, takes a new snapshot (the file may have grown, more chunks
 * been claimed, each chunk holds more) and makes the stream the records
 * added since the last one, merged by time as before; capture__rewind
 * then goes back to the first of those. Each chunk's pass one goes on
 * from where it stopped, so the cost is what was added, not the file's
 * size. A record added in one thread's chunk may be older than one
 * already read from another's (it was published later): the stream is in
 * time order within each snapshot. Stacks stay indexed across snapshots.
 * 0, or -errno with a one-line reason in err. */
int capture__follow(struct capture *c, char *err, size_t errlen);

/* Damage found so far: count, and the first message, which names the file
 * offset ("chunk 3 at offset 0x301000: record at 0x3012a8 runs past used"). */
unsigned capture__damage(const struct capture *c, const char **first);

/* Bytes of records consumed so far / in total (their encoded sizes, PAD
 * not counted), for progress bars. */
uint64_t capture__progress(const struct capture *c, uint64_t *total);

/* The NUL-terminated text that ends a MODULE (path), HEAP_CREATE (name),
 * MARK or TAG (label) record: *len bytes before the first NUL or the end of
 * the record, whichever comes first. NULL (and *len 0) for other types. */
const char *vh_event_text(const struct vh_event *ev, size_t *len);

void capture__close(struct capture *c);

#endif
