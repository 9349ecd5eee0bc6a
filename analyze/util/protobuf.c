/* protobuf.c — the protocol buffers wire format, writing only (protobuf.h):
 * a field is a key varint (field number << 3 | wire type) and a value,
 * varint (type 0) or length-prefixed bytes (type 2). */
#include <stdlib.h>
#include <string.h>

#include "common/leb128.h"

#include "analyze/util/grow.h"
#include "analyze/util/protobuf.h"

static void put(struct pb *b, const void *p, size_t n)
{
    if (b->oom)
        return;
    while (b->cap - b->len < n)
        if (vh_grow(&b->p, &b->cap, b->cap, 1, 256)) {
            b->oom = 1;
            return;
        }
    if (n)
        memcpy(b->p + b->len, p, n);
    b->len += n;
}

static void varint(struct pb *b, uint64_t v)
{
    uint8_t buf[VH_ULEB_MAX];
    put(b, buf, (size_t)(vh_uleb_put(buf, v) - buf));
}

void pb_uint(struct pb *b, uint32_t field, uint64_t v)
{
    varint(b, (uint64_t)field << 3);
    varint(b, v);
}

void pb_bytes(struct pb *b, uint32_t field, const void *p, size_t n)
{
    varint(b, (uint64_t)field << 3 | 2);
    varint(b, n);
    put(b, p, n);
}

void pb_packed(struct pb *b, uint32_t field, const uint64_t *v, size_t n)
{
    size_t len = 0;
    if (!n)
        return;
    for (size_t i = 0; i < n; i++) {
        uint64_t x = v[i];
        do
            len++;
        while (x >>= 7);
    }
    varint(b, (uint64_t)field << 3 | 2);
    varint(b, len);
    for (size_t i = 0; i < n; i++)
        varint(b, v[i]);
}

void pb_msg(struct pb *b, uint32_t field, struct pb *sub)
{
    if (sub->oom)
        b->oom = 1;
    pb_bytes(b, field, sub->p, sub->len);
    sub->len = 0;
    sub->oom = 0;
}

void pb_free(struct pb *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}
