/* capture_format.h — the one definition of the vheap capture layout.
 *
 * Shared by the writer (preload/, inside the profiled process) and every
 * reader (analyze/). Changing a layout here means bumping VH_CAPTURE_VERSION
 * and docs/capture-format.md together. All integers are little-endian (the
 * capture is read on the machine kind that wrote it; the reader refuses a
 * foreign byte order through the magic). */
#ifndef VHEAP_CAPTURE_FORMAT_H
#define VHEAP_CAPTURE_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define VH_CAPTURE_MAGIC "VHEAPCAP"       /* 8 bytes, no NUL stored */
#define VH_CAPTURE_VERSION 1u
#define VH_HEADER_SIZE 4096u              /* the header page */
#define VH_DEFAULT_CHUNK_SIZE (1u << 20)  /* bytes per chunk, header included */
#define VH_CHUNK_MAGIC 0x4b434856u        /* "VHCK" */
#define VH_MAX_DEPTH 256u                 /* hard cap on recorded frames */
#define VH_ARGV_MAX 2048u
#define VH_EXE_MAX 1024u

/* ---- File layout --------------------------------------------------------
 * [0, 4096)                       struct vh_capture_header
 * [chunk_offset + i*chunk_size)   chunk i, i < chunks_claimed
 * A chunk starts with struct vh_chunk_header; records follow it back to
 * back, 8-byte aligned. Only bytes below the chunk's `used` word are valid:
 * the writer stores `used` with release semantics after each record, so a
 * reader never sees a torn record even while the program runs. */

enum vh_header_flags {
    VH_HDR_ENDED = 1u << 0,        /* the END record was written (clean exit) */
    VH_HDR_DISABLED = 1u << 1,     /* recording stopped (disk full, ...)      */
    VH_HDR_FORKED = 1u << 2,       /* this process is a fork child            */
    VH_HDR_ARGV_TRUNC = 1u << 3,   /* argv did not fit VH_ARGV_MAX            */
};

enum vh_unwind_kind { VH_UNWIND_LIBUNWIND = 0, VH_UNWIND_FP = 1 };

struct vh_capture_header {
    char magic[8];                 /* VH_CAPTURE_MAGIC                       */
    uint32_t version;              /* VH_CAPTURE_VERSION                     */
    uint32_t header_size;          /* VH_HEADER_SIZE                         */
    uint32_t chunk_size;           /* bytes per chunk                        */
    uint32_t chunk_header_size;    /* sizeof(struct vh_chunk_header)         */
    uint64_t chunk_offset;         /* file offset of chunk 0                 */
    uint64_t chunks_claimed;       /* atomic: chunks handed out so far       */
    uint32_t pid, ppid;
    uint64_t start_realtime_ns;    /* CLOCK_REALTIME at capture start        */
    uint64_t start_monotonic_ns;   /* CLOCK_MONOTONIC origin of record times */
    uint32_t page_size;            /* sysconf(_SC_PAGESIZE)                  */
    uint32_t flags;                /* atomic: enum vh_header_flags           */
    uint64_t phys_pages;           /* sysconf(_SC_PHYS_PAGES)                */
    uint64_t end_time;             /* atomic: ns of the END record, or 0     */
    uint64_t last_time;            /* atomic: ns of a recent event (liveness)*/
    /* Loss accounting: events that happened but are not in the capture.    */
    uint64_t dropped_events;       /* atomic: recording disabled / no space  */
    uint64_t nested_events;        /* atomic: allocator calls made while the
                                      thread was inside the shim's own
                                      bookkeeping (signal handler), passed
                                      through unrecorded                     */
    uint64_t stack_table_full;     /* atomic: events recorded with stack 0   */
    uint32_t max_depth;            /* VHEAP_DEPTH in force                   */
    uint32_t unwind;               /* enum vh_unwind_kind                    */
    uint32_t argv_len;             /* bytes used in argv[] (NUL-separated)   */
    uint32_t exec_generation;      /* 0, or n-th exec image of this pid      */
    uint64_t parent_start_realtime_ns; /* fork child: the parent's start     */
    char exe[VH_EXE_MAX];          /* NUL-terminated executable path         */
    char argv[VH_ARGV_MAX];        /* argv strings, each NUL-terminated      */
    uint8_t reserved[VH_HEADER_SIZE - 144 - VH_EXE_MAX - VH_ARGV_MAX];
};

struct vh_chunk_header {
    uint64_t used;                 /* atomic: bytes valid, this header incl. */
    uint32_t magic;                /* VH_CHUNK_MAGIC                         */
    uint32_t index;                /* position in the file                   */
    uint64_t reserved[2];
};

/* ---- Records ------------------------------------------------------------
 * Every record starts with this 8-byte word. Types below 0x80 have a fixed
 * size (vh_record_size); types from 0x80 up carry their total size in
 * 8-byte words in `a`, so a reader can skip one it does not know. */
struct vh_rec_hdr {
    uint8_t type;
    uint8_t flags;
    uint16_t a;                    /* heap id, or length in words (>= 0x80)  */
    uint32_t b;                    /* stack id / tid / heap id / ...         */
};

enum vh_rec_type {
    VH_REC_ALLOC = 0x01,           /* struct vh_rec_alloc                    */
    VH_REC_FREE = 0x02,            /* struct vh_rec_free                     */
    VH_REC_RESIZE = 0x03,          /* struct vh_rec_alloc: in-place resize   */
    VH_REC_RSS = 0x04,             /* struct vh_rec_value: RSS in bytes      */
    VH_REC_THREAD = 0x05,          /* struct vh_rec_time, b = tid: the
                                      records that follow in this chunk are
                                      that thread's                          */
    VH_REC_MODULE_UNLOAD = 0x06,   /* struct vh_rec_value: load bias         */
    VH_REC_HEAP_DESTROY = 0x07,    /* struct vh_rec_time, a = heap           */
    VH_REC_MOVE = 0x08,            /* struct vh_rec_move                     */
    VH_REC_END = 0x09,             /* struct vh_rec_time: clean exit         */
    VH_REC_THREAD_EXIT = 0x0a,     /* struct vh_rec_time, b = tid            */

    VH_REC_VARIABLE = 0x80,
    VH_REC_STACK = 0x81,           /* struct vh_rec_stack + frames           */
    VH_REC_MODULE = 0x82,          /* struct vh_rec_module + path            */
    VH_REC_HEAP_CREATE = 0x83,     /* struct vh_rec_heap + name              */
    VH_REC_MARK = 0x84,            /* struct vh_rec_label + label            */
    VH_REC_TAG = 0x85,             /* struct vh_rec_label, b = tag id        */
};

/* Which entry point produced an ALLOC / FREE / RESIZE (vh_rec_hdr.flags
 * holds enum vh_rec_flags; the function is in the record body). */
enum vh_func {
    VH_FN_NONE = 0,
    VH_FN_MALLOC, VH_FN_CALLOC, VH_FN_REALLOC, VH_FN_REALLOCARRAY, VH_FN_FREE,
    VH_FN_POSIX_MEMALIGN, VH_FN_ALIGNED_ALLOC, VH_FN_MEMALIGN, VH_FN_VALLOC,
    VH_FN_PVALLOC, VH_FN_MALLOCX, VH_FN_RALLOCX, VH_FN_XALLOCX, VH_FN_SDALLOCX,
    VH_FN_DALLOCX, VH_FN_CUSTOM, VH_FN_HEAPTRACK_API,
    VH_FN_COUNT
};

enum vh_rec_flags {
    VH_RF_FAILED = 1u << 0,        /* ALLOC: the call returned NULL / error  */
    VH_RF_SLACK_CLAMPED = 1u << 1, /* ALLOC: usable - size did not fit u32   */
    VH_RF_REALLOC = 1u << 2,       /* FREE/ALLOC half of a moving realloc    */
    VH_RF_TRUNCATED = 1u << 3,     /* STACK: deeper than max_depth           */
    VH_RF_MAIN_EXE = 1u << 4,      /* MODULE: the main executable            */
};

/* Heap ids: 0 is the system allocator (malloc family); custom heaps made
 * through the public API (preload/vheap.h) get ids from 1 up. */
#define VH_HEAP_SYSTEM 0u

struct vh_rec_time {               /* THREAD, HEAP_DESTROY, END, THREAD_EXIT */
    struct vh_rec_hdr h;
    uint64_t time;                 /* ns since start_monotonic_ns            */
};

struct vh_rec_value {              /* RSS, MODULE_UNLOAD                     */
    struct vh_rec_hdr h;
    uint64_t time;
    uint64_t value;
};

struct vh_rec_alloc {              /* ALLOC, RESIZE; h.a = heap, h.b = stack */
    struct vh_rec_hdr h;
    uint64_t time;
    uint64_t addr;                 /* 0 when VH_RF_FAILED                    */
    uint64_t size;                 /* requested bytes                        */
    uint32_t slack;                /* usable - requested                     */
    uint16_t func;                 /* enum vh_func                           */
    uint16_t tag;                  /* innermost tag id, 0 = none             */
};

struct vh_rec_free {               /* FREE; h.a = heap                       */
    struct vh_rec_hdr h;
    uint64_t time;
    uint64_t addr;
    uint64_t func;                 /* enum vh_func (64-bit keeps 8-alignment)*/
};

struct vh_rec_move {               /* MOVE; h.a = heap                       */
    struct vh_rec_hdr h;
    uint64_t time;
    uint64_t from;
    uint64_t to;
};

struct vh_rec_stack {              /* STACK; h.a = words, h.b = stack id      */
    struct vh_rec_hdr h;           /* frames = h.a - 2, innermost first: the
                                      first frame is the return address in
                                      the allocator's caller                 */
    uint64_t time;
    uint64_t frames[];
};

struct vh_rec_module {             /* MODULE; h.a = words                    */
    struct vh_rec_hdr h;           /* h.b = build-id length in bytes         */
    uint64_t time;
    uint64_t bias;                 /* dlpi_addr: ELF vaddr + bias = address  */
    uint64_t lo, hi;               /* lowest and highest mapped address      */
    uint8_t build_id[32];
    char path[];                   /* NUL-terminated, padded to 8 bytes      */
};

struct vh_rec_heap {               /* HEAP_CREATE; h.a = words, h.b = heap   */
    struct vh_rec_hdr h;
    uint64_t time;
    uint32_t parent;               /* enclosing heap id, 0 = none            */
    uint32_t heap_flags;
    uint64_t base, size;           /* bounds, 0 when unknown                 */
    char name[];                   /* NUL-terminated, padded                 */
};

struct vh_rec_label {              /* MARK, TAG; h.a = words                 */
    struct vh_rec_hdr h;           /* TAG: h.b = tag id                      */
    uint64_t time;
    char label[];                  /* NUL-terminated, padded                 */
};

_Static_assert(sizeof(struct vh_capture_header) == VH_HEADER_SIZE, "header page");
_Static_assert(sizeof(struct vh_chunk_header) == 32, "chunk header");
_Static_assert(sizeof(struct vh_rec_hdr) == 8, "record header");
_Static_assert(sizeof(struct vh_rec_time) == 16, "time record");
_Static_assert(sizeof(struct vh_rec_value) == 24, "value record");
_Static_assert(sizeof(struct vh_rec_alloc) == 40, "alloc record");
_Static_assert(sizeof(struct vh_rec_free) == 32, "free record");
_Static_assert(sizeof(struct vh_rec_move) == 32, "move record");
_Static_assert(sizeof(struct vh_rec_stack) == 16, "stack record");
_Static_assert(sizeof(struct vh_rec_module) == 72, "module record");
_Static_assert(sizeof(struct vh_rec_heap) == 40, "heap record");
_Static_assert(sizeof(struct vh_rec_label) == 16, "label record");

/* Size in bytes of the record starting with `h`, or 0 if the type is
 * unknown and fixed-size (the reader cannot go on past it). */
static inline size_t vh_record_size(const struct vh_rec_hdr *h)
{
    if (h->type >= VH_REC_VARIABLE)
        return (size_t)h->a * 8u;
    switch (h->type) {
    case VH_REC_ALLOC:
    case VH_REC_RESIZE: return sizeof(struct vh_rec_alloc);
    case VH_REC_FREE: return sizeof(struct vh_rec_free);
    case VH_REC_MOVE: return sizeof(struct vh_rec_move);
    case VH_REC_RSS:
    case VH_REC_MODULE_UNLOAD: return sizeof(struct vh_rec_value);
    case VH_REC_THREAD:
    case VH_REC_HEAP_DESTROY:
    case VH_REC_END:
    case VH_REC_THREAD_EXIT: return sizeof(struct vh_rec_time);
    default: return 0;
    }
}

/* Stable lowercase names, used by `vheap-analyze dump` and the schema. */
static inline const char *vh_func_name(unsigned f)
{
    static const char *const names[VH_FN_COUNT] = {
        "none", "malloc", "calloc", "realloc", "reallocarray", "free",
        "posix_memalign", "aligned_alloc", "memalign", "valloc", "pvalloc",
        "mallocx", "rallocx", "xallocx", "sdallocx", "dallocx", "custom",
        "heaptrack_api",
    };
    return f < VH_FN_COUNT ? names[f] : "unknown";
}

#endif
