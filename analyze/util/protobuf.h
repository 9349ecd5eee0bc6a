/* protobuf.h — just enough of the protocol buffers wire format to write a
 * message (pprof's profile.proto): varints, length-delimited fields and
 * packed repeated integers, appended to a growing buffer. Nested messages
 * are built in a buffer of their own and added with pb_msg(). */
#ifndef VHEAP_PROTOBUF_H
#define VHEAP_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>

struct pb {
    uint8_t *p;
    size_t len, cap;
    int oom;                       /* an append failed: the message is short */
};

/* field = varint (int64, uint64, bool). 0 is written too (proto3 readers
 * take a missing field as 0 anyway: callers skip it to save room). */
void pb_uint(struct pb *b, uint32_t field, uint64_t v);
void pb_bytes(struct pb *b, uint32_t field, const void *p, size_t n);
/* A packed repeated varint field; nothing when n is 0. */
void pb_packed(struct pb *b, uint32_t field, const uint64_t *v, size_t n);
/* `sub` as a length-delimited field of b; sub is emptied for reuse. */
void pb_msg(struct pb *b, uint32_t field, struct pb *sub);
void pb_free(struct pb *b);

#endif
