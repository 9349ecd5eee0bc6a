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

#include "common/leb128.h"          /* the records' varints */

#define VH_CAPTURE_MAGIC "VHEAPCAP"       /* 8 bytes, no NUL stored */
#define VH_CAPTURE_VERSION 4u             /* what the shim writes          */
#define VH_CAPTURE_VERSION_V3 3u          /* still read: no freed-block forms */
#define VH_CAPTURE_VERSION_V2 2u          /* still read: no short forms    */
#define VH_CAPTURE_VERSION_V1 1u          /* still read: all records fixed */
#define VH_HEADER_SIZE 4096u              /* the header page */
#define VH_DEFAULT_CHUNK_SIZE (1u << 20)  /* bytes per chunk, header included */
#define VH_CHUNK_MAGIC 0x4b434856u        /* "VHCK" */
#define VH_MAX_DEPTH 256u                 /* hard cap on recorded frames */
#define VH_ARGV_MAX 2048u
#define VH_EXE_MAX 1024u
#define VH_EXEC_PATH_MAX 512u

/* ---- File layout --------------------------------------------------------
 * [0, 4096)                       struct vh_capture_header
 * [chunk_offset + i*chunk_size)   chunk i, i < chunks_claimed
 * A chunk starts with struct vh_chunk_header; records follow it back to
 * back. Only bytes below the chunk's `used` word are valid: the writer
 * stores `used` with release semantics after each record, so a reader never
 * sees a torn record even while the program runs. A chunk's header is
 * complete before chunks_claimed counts it (version 2).
 *
 * Version 2 stores the hot records (ALLOC, RESIZE, FREE) compact, byte
 * packed (see "Compact records" below); every other record keeps its
 * version 1 struct layout at an 8-aligned offset, PAD bytes before it. In
 * version 1 every record is a struct, 8-byte aligned, with no PAD. */

enum vh_header_flags {
    VH_HDR_ENDED = 1u << 0,        /* the END record was written (clean exit) */
    VH_HDR_DISABLED = 1u << 1,     /* recording stopped (disk full, ...)      */
    VH_HDR_FORKED = 1u << 2,       /* this process is a fork child            */
    VH_HDR_ARGV_TRUNC = 1u << 3,   /* argv did not fit VH_ARGV_MAX            */
    VH_HDR_EXITED = 1u << 4,       /* a clean exit after recording stopped
                                      (DISABLED): no END record, end_time set */
    VH_HDR_EXEC = 1u << 5,         /* the image called execve (exec_path): set
                                      before the call, cleared if it failed */
    VH_HDR_START_PAUSED = 1u << 6, /* recording was paused from the start
                                      (VHEAP_START=paused, or a fork child
                                      of a paused parent): the first WINDOW
                                      0 is not a pause after a window   */
};

enum vh_unwind_kind { VH_UNWIND_LIBUNWIND = 0, VH_UNWIND_FP = 1 };

/* Requests of `vheap-analyze ctl` in the header's ctl word. */
enum vh_ctl { VH_CTL_NONE = 0, VH_CTL_START = 1, VH_CTL_STOP = 2,
              VH_CTL_REACH = 3 /* a reachability scan now (full mode) */ };

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
    /* Record times below precise_from come from the kernel's coarse clock
     * (coarse_res_ns apart: the writer uses it while one thread records);
     * from precise_from on they are exact. coarse_res_ns 0: exact
     * throughout (and in captures from before these fields). */
    uint64_t precise_from;         /* atomic: UINT64_MAX while still coarse  */
    uint32_t coarse_res_ns;
    /* A fork child: chunk 0's `used` when its start records (modules, the
     * inherited heaps, tags) were written, chunk 0 the only chunk; else 0.
     * Its chunk 0 still ending there, and no other chunk: the child
     * recorded nothing of its own (preload/handover.c). */
    uint32_t start_used;
    /* Signals (preload/signals.c): handler calls held back until the
     * thread left the shim's bookkeeping; and guards found stale and
     * cleared (a handler installed behind the shim's back left it by
     * longjmp). Neither loses an event; 0 in older captures. */
    uint64_t deferred_signals;     /* atomic                                 */
    uint64_t guard_resets;         /* atomic                                 */
    /* Sampling (VHEAP_SAMPLE): 0, every call is recorded; else the mean
     * number of bytes allocated between two samples. An allocation of s
     * bytes is recorded with probability 1 - exp(-s / sample_rate) (each
     * byte equally likely to be sampled), a free only when its block's
     * allocation was recorded. */
    uint64_t sample_rate;
    /* Recording on demand: `vheap-analyze ctl` writes ctl (a VH_CTL_*
     * request) and, for a mark, ctl_mark (NUL-terminated) then bumps
     * ctl_mark_seq; the shim acts on them at its next RSS tick, or at the
     * next allocator call while paused. `recording` is the shim's state
     * (1 recording, 0 paused); WINDOW records say when it changed. */
    uint32_t ctl;                  /* atomic: enum vh_ctl                    */
    uint32_t ctl_mark_seq;         /* atomic                                 */
    char ctl_mark[64];
    uint32_t recording;            /* atomic                                 */
    uint32_t reserved32b;
    /* What this image exec'd (VH_HDR_EXEC), made absolute against the
     * working directory then, NUL-terminated, cut at VH_EXEC_PATH_MAX - 1:
     * a program whose exec'd image wrote no capture (static, set-ID, an
     * environment without LD_PRELOAD) is named by it. */
    char exec_path[VH_EXEC_PATH_MAX];
    uint8_t reserved[VH_HEADER_SIZE - 272 - VH_EXE_MAX - VH_ARGV_MAX - VH_EXEC_PATH_MAX];
    /* The header's last 8 bytes (new fields take reserved from its front):
     * CLOCK_MONOTONIC at the END record, exact (ns since start), whatever
     * clock the records used; 0: not written (no clean end, older writer).
     * With coarse times a short run may fit in one tick: the reader spreads
     * the coarse times over the real span (docs/capture-format.md). */
    uint64_t exact_end;            /* atomic                                 */
};

struct vh_chunk_header {
    uint64_t used;                 /* atomic: bytes valid, this header incl. */
    uint32_t magic;                /* VH_CHUNK_MAGIC                         */
    uint32_t index;                /* position in the file                   */
    uint64_t reserved[2];
};

/* ---- Records ------------------------------------------------------------
 * A struct record starts with this 8-byte word and has its time at offset
 * 8. Types below 0x80 have a fixed size (vh_record_size); types from 0x80
 * up carry their total size in 8-byte words in `a`, so a reader can skip
 * one it does not know. In version 2, ALLOC / RESIZE / FREE are compact
 * instead (their first byte is the type), and the reader hands them out
 * decoded into these same structs. */
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
    VH_REC_WINDOW = 0x0b,          /* struct vh_rec_time, a = 1: recording
                                      from here on, 0: paused from here on
                                      (VHEAP_START=paused, vheap-analyze ctl) */
    /* v3: the short forms of the compact records ("Compact records"). */
    VH_REC_ALLOC_NEXT = 0x0e,      /* ALLOC of the chunk's last ALLOC's kind */
    VH_REC_FREE_NEXT = 0x0f,       /* FREE of the chunk's last FREE's kind   */
    VH_REC_FREE_RECENT = 0x10,     /* ... of a block allocated recently      */
    VH_REC_ALLOC_TICK = 0x11,      /* ALLOC_NEXT 1 ns after the last record  */
    VH_REC_FREE_TICK = 0x12,       /* FREE_NEXT 1 ns after the last record   */
    /* v4: allocations of a block the run freed lately, and of the other
     * kind ("Compact records"). */
    VH_REC_ALLOC_FREED = 0x13,     /* ALLOC_NEXT at a recently freed address */
    VH_REC_ALLOC_FREED_ALT = 0x14, /* ... of the alternate kind KB           */
    VH_REC_ALLOC_ALT = 0x15,       /* ALLOC_NEXT of kind KB or KA[RF] and
                                      version 4's slack                      */
    VH_REC_FREE_FAR = 0x16,        /* FREE_RECENT of one of the last 64      */
    VH_REC_PAD = 0x7f,             /* v2: one byte of padding before a struct
                                      record; never at an 8-aligned offset  */

    VH_REC_VARIABLE = 0x80,
    VH_REC_STACK = 0x81,           /* struct vh_rec_stack + frames           */
    VH_REC_MODULE = 0x82,          /* struct vh_rec_module + path            */
    VH_REC_HEAP_CREATE = 0x83,     /* struct vh_rec_heap + name              */
    VH_REC_MARK = 0x84,            /* struct vh_rec_label + label            */
    VH_REC_TAG = 0x85,             /* struct vh_rec_label, b = tag id        */
    /* Variable-size types although their size is fixed, so that a reader
     * from before them skips them (h.a holds the length, the heap is h.b). */
    VH_REC_RANGE = 0x86,           /* struct vh_rec_range                    */
    VH_REC_REGION = 0x87,          /* struct vh_rec_region                   */
    VH_REC_REACH = 0x88,           /* struct vh_rec_reach + entries          */
    VH_REC_REACH_END = 0x89,       /* struct vh_rec_reach_end                */
    /* Ownership snapshots (preload/vheap.h: vheap_own_*): h.b as below. */
    VH_REC_OWN_BEGIN = 0x8a,       /* struct vh_rec_own + label, b = heap    */
    VH_REC_OWNER = 0x8b,           /* struct vh_rec_owner + label, b = node  */
    VH_REC_OWNED = 0x8c,           /* struct vh_rec_owned + entries, b = node */
    VH_REC_OWN_END = 0x8d,         /* struct vh_rec_own_end, b = heap        */
    VH_REC_STACK_PACKED = 0x8e,    /* STACK with packed frames: struct
                                      vh_rec_stack's header and time, then
                                      LEB128 varints: the frame count, then
                                      each frame's zigzag delta from the one
                                      before it (the first's from 0); zero
                                      bytes pad it to h.a words. A reader
                                      yields it as the STACK it packs      */
    VH_REC_STACK_DIFF = 0x8f,      /* STACK as the frames that differ from an
                                      earlier stack of the same run (the
                                      previous one the thread wrote since
                                      its THREAD record): struct
                                      vh_rec_stack's header and time, then
                                      common/stack_diff.h's varints; zero
                                      bytes pad it to h.a words. A reader
                                      yields it as the STACK it stands for */
};

/* Reachability at exit (preload/reach.c): memcheck's four classes of a
 * live block of the system heap. Numbered from the most to the least
 * held, so that "at least possibly lost" is class >= POSSIBLE. */
enum vh_reach_class {
    VH_REACH_REACHABLE = 0,        /* a start pointer from a root, or from a
                                      reachable block                        */
    VH_REACH_POSSIBLE = 1,         /* only interior pointers on the way      */
    VH_REACH_INDIRECT = 2,         /* reachable only from lost blocks        */
    VH_REACH_LOST = 3,             /* no pointer to it at all                */
    VH_REACH_CLASSES = 4,
};
#define VH_REACH_CLASS_MASK 3u

/* Scans on request (`vheap-analyze ctl reach`), in vh_rec_hdr.flags: a
 * REACH with BEGIN and no entries is written when the snapshot is taken
 * (the live set it classifies is the one at that record); the REACH_END
 * of such a scan has REQUEST. The scan at exit has neither. */
enum vh_reach_flags {
    VH_REACH_F_BEGIN = 1u << 0,
    VH_REACH_F_REQUEST = 1u << 1,
};

/* How the scan ended (vh_rec_reach_end.status). */
enum vh_reach_status {
    VH_REACH_DONE = 0,             /* every live block classified            */
    VH_REACH_TIMEOUT = 1,          /* VHEAP_REACH_TIMEOUT passed: stopped    */
    VH_REACH_FAILED = 2,           /* no child or no pipe (see the log)      */
};

/* What a RANGE record does to the blocks whose address lies in
 * [from, from + len) (vh_rec_hdr.flags). */
enum vh_range_op {
    VH_RANGE_MOVE = 0,             /* each moves by to - from                */
    VH_RANGE_FREE = 1,             /* each is freed                          */
};

/* What a REGION of a heap holds instead of blocks (vh_rec_hdr.flags);
 * the same numbers as VHEAP_REGION_* in preload/vheap.h. */
enum vh_region_kind {
    VH_REGION_NONE = 0,            /* the region ends (size 0)               */
    VH_REGION_META = 1,            /* the allocator's own metadata           */
    VH_REGION_UNUSED = 2,          /* not heap: a stack, a reserved gap      */
    VH_REGION_KIND_MAX = 2,
};

/* Which entry point produced an ALLOC / FREE / RESIZE (vh_rec_hdr.flags
 * holds enum vh_rec_flags; the function is in the record body). */
enum vh_func {
    VH_FN_NONE = 0,
    VH_FN_MALLOC, VH_FN_CALLOC, VH_FN_REALLOC, VH_FN_REALLOCARRAY, VH_FN_FREE,
    VH_FN_POSIX_MEMALIGN, VH_FN_ALIGNED_ALLOC, VH_FN_MEMALIGN, VH_FN_VALLOC,
    VH_FN_PVALLOC, VH_FN_MALLOCX, VH_FN_RALLOCX, VH_FN_XALLOCX, VH_FN_SDALLOCX,
    VH_FN_DALLOCX, VH_FN_CUSTOM, VH_FN_HEAPTRACK_API,
    /* C++'s replaceable global operator new / delete (preload/hooks_cxx.c),
     * in the order of its table: array forms, nothrow, align_val_t, sized. */
    VH_FN_OPERATOR_NEW, VH_FN_OPERATOR_NEW_ARRAY, VH_FN_OPERATOR_NEW_NOTHROW,
    VH_FN_OPERATOR_NEW_ARRAY_NOTHROW, VH_FN_OPERATOR_NEW_ALIGNED,
    VH_FN_OPERATOR_NEW_ARRAY_ALIGNED, VH_FN_OPERATOR_NEW_ALIGNED_NOTHROW,
    VH_FN_OPERATOR_NEW_ARRAY_ALIGNED_NOTHROW,
    VH_FN_OPERATOR_DELETE, VH_FN_OPERATOR_DELETE_ARRAY, VH_FN_OPERATOR_DELETE_SIZED,
    VH_FN_OPERATOR_DELETE_ARRAY_SIZED, VH_FN_OPERATOR_DELETE_ALIGNED,
    VH_FN_OPERATOR_DELETE_ARRAY_ALIGNED, VH_FN_OPERATOR_DELETE_SIZED_ALIGNED,
    VH_FN_OPERATOR_DELETE_ARRAY_SIZED_ALIGNED, VH_FN_OPERATOR_DELETE_NOTHROW,
    VH_FN_OPERATOR_DELETE_ARRAY_NOTHROW, VH_FN_OPERATOR_DELETE_ALIGNED_NOTHROW,
    VH_FN_OPERATOR_DELETE_ARRAY_ALIGNED_NOTHROW,
    /* The address space a program maps itself (preload/hooks_mmap.c), the
     * built-in heap "mmap"; MMAP_BLOCK: a block the allocator mapped alone
     * (VHEAP_MMAP=all). */
    VH_FN_MMAP, VH_FN_MUNMAP, VH_FN_MREMAP, VH_FN_SBRK, VH_FN_BRK, VH_FN_MMAP_BLOCK,
    VH_FN_COUNT
};

enum vh_rec_flags {
    VH_RF_FAILED = 1u << 0,        /* ALLOC: the call returned NULL / error  */
    VH_RF_SLACK_CLAMPED = 1u << 1, /* ALLOC: usable - size did not fit u32   */
    VH_RF_REALLOC = 1u << 2,       /* FREE/ALLOC half of a moving realloc    */
    VH_RF_TRUNCATED = 1u << 3,     /* STACK: deeper than max_depth           */
    VH_RF_MAIN_EXE = 1u << 4,      /* MODULE: the main executable            */
};

/* vh_rec_heap.heap_flags: a heap the shim records into by itself. */
enum vh_heap_flags {
    VH_HEAPF_MMAP = 1u << 0,       /* "mmap": the address space the program
                                      maps itself (preload/hooks_mmap.c)     */
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

struct vh_rec_range {              /* RANGE; h.a = words (5), h.b = heap,
                                      h.flags = enum vh_range_op             */
    struct vh_rec_hdr h;
    uint64_t time;
    uint64_t from, to;             /* to: MOVE only (0 for FREE)             */
    uint64_t len;                  /* bytes                                  */
};

struct vh_rec_region {             /* REGION; h.a = words (5), h.b = heap,
                                      h.flags = enum vh_region_kind          */
    struct vh_rec_hdr h;
    uint64_t time;
    uint64_t base, size;           /* size 0: region `id` of the heap ends   */
    uint32_t id;                   /* the program's number for the region,
                                      one per heap: a later REGION with the
                                      same (heap, id) replaces it            */
    uint32_t pad;
};

/* REACH: classes of live system-heap blocks, as the scan at exit found
 * them; h.a = words, h.b = entries. An entry is a block's address with
 * its enum vh_reach_class in the low 2 bits (malloc's blocks are at least
 * 8-aligned; a block that is not 4-aligned is counted in `misaligned`
 * and has no entry). Valid only once the REACH_END that follows says
 * VH_REACH_DONE. */
struct vh_rec_reach {
    struct vh_rec_hdr h;
    uint64_t time;
    uint64_t entry[];
};

/* REACH_END: the scan's totals; h.a = words (11). */
struct vh_rec_reach_end {
    struct vh_rec_hdr h;
    uint64_t time;
    uint64_t blocks;               /* live blocks the scan knew              */
    uint64_t root_bytes;           /* bytes of roots read                    */
    uint64_t heap_bytes;           /* bytes of blocks read                   */
    uint64_t unreadable_bytes;     /* skipped: no read permission, or a fault */
    uint64_t nonresident_bytes;    /* skipped: never touched (mincore)       */
    uint64_t scan_ns;              /* the child's time, live set included    */
    uint32_t threads;              /* other threads of the process           */
    uint32_t threads_unseen;       /* of those, stack scanned whole: the
                                      stack pointer was not known            */
    uint32_t status;               /* enum vh_reach_status                   */
    uint32_t misaligned;           /* blocks without an entry                */
    uint64_t cpu_ns;               /* the child's CPU time (scan_ns is wall
                                      time, which a loaded machine stretches) */
};

/* Ownership snapshots: an allocator's marking walk (Vere's `urbit grab`, a
 * GC's mark phase) says for each live block it reaches which owner path it
 * reached it from. A snapshot is OWN_BEGIN, then OWNER records (one per
 * push: a node of the owner tree, numbered from 1 within the snapshot, its
 * parent 0 at the top) and OWNED records (blocks reached under one node),
 * then OWN_END; all from the walking thread, in its order. A snapshot whose
 * OWN_END is missing (the program died in the walk) is incomplete. */
enum vh_own_flags {
    VH_OWN_CUT = 1u << 0,          /* OWN_BEGIN, OWNER: the label was longer
                                      than 255 bytes and is cut there       */
};

/* OWN_BEGIN: h.a = words, h.b = the heap walked (its nested heaps too),
 * then a NUL-terminated label ("grab"), padded to 8. */
struct vh_rec_own {
    struct vh_rec_hdr h;
    uint64_t time;
    uint32_t snapshot;             /* 1, 2, ... per process                 */
    uint32_t pad;
};

/* OWNER: h.a = words, h.b = node id (> 0), h.flags = enum vh_own_flags,
 * then a NUL-terminated label, padded to 8. */
struct vh_rec_owner {
    struct vh_rec_hdr h;
    uint64_t time;
    uint32_t snapshot;
    uint32_t parent;               /* node id, 0: a top-level owner         */
};

/* OWNED: h.a = words, h.b = node id (0: no owner pushed), then `count`
 * entries of two ULEB128 varints each: the block's address as a zigzag
 * delta from the previous entry's (the first's from 0), and the bytes the
 * walk counted for it; padded to 8 with zeros. Address 0: bytes the walk
 * counted that are no block (the allocator's own tables). */
struct vh_rec_owned {
    struct vh_rec_hdr h;
    uint64_t time;
    uint32_t snapshot;
    uint32_t count;
    uint8_t entry[];
};

/* OWN_END: h.a = words (5), h.b = the heap. The walk's totals as the shim
 * saw them: a reader that finds fewer entries lost some (dropped). */
struct vh_rec_own_end {
    struct vh_rec_hdr h;
    uint64_t time;
    uint32_t snapshot;
    uint32_t nodes;                /* OWNER records written                 */
    uint64_t entries;              /* OWNED entries written                 */
    uint64_t depth_lost;           /* pushes deeper than the shim keeps
                                      (VHEAP_OWN_DEPTH): their blocks go to
                                      the deepest kept owner                 */
};

_Static_assert(sizeof(struct vh_capture_header) == VH_HEADER_SIZE, "header page");
_Static_assert(offsetof(struct vh_capture_header, sample_rate) == 3248 &&
                   offsetof(struct vh_capture_header, ctl) == 3256 &&
                   offsetof(struct vh_capture_header, ctl_mark) == 3264 &&
                   offsetof(struct vh_capture_header, recording) == 3328 &&
                   offsetof(struct vh_capture_header, exec_path) == 3336,
               "header fields as docs/capture-format.md places them");
_Static_assert(offsetof(struct vh_capture_header, exact_end) == VH_HEADER_SIZE - 8, "exact_end");
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
_Static_assert(sizeof(struct vh_rec_range) == 40, "range record");
_Static_assert(sizeof(struct vh_rec_region) == 40, "region record");
_Static_assert(sizeof(struct vh_rec_reach) == 16, "reach record");
_Static_assert(sizeof(struct vh_rec_reach_end) == 88, "reach end record");
_Static_assert(sizeof(struct vh_rec_own) == 24 && sizeof(struct vh_rec_owner) == 24 &&
                   sizeof(struct vh_rec_owned) == 24 && sizeof(struct vh_rec_own_end) == 40,
               "ownership records");

/* Size in bytes of the struct record starting with `h` (every record of
 * version 1; in version 2 all but the compact ones), or 0 if the type is
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
    case VH_REC_THREAD_EXIT:
    case VH_REC_WINDOW: return sizeof(struct vh_rec_time);
    default: return 0;
    }
}

/* ---- Compact records (versions 2 and 3) -------------------------------
 * ALLOC (0x01), RESIZE (0x03) and FREE (0x02) are byte-packed, in this
 * order, with no alignment:
 *   ALLOC/RESIZE: type u8, dt, da, size, slack, stack, meta [, heap] [, tag]
 *   FREE:         type u8, dt, da, meta [, heap]
 * Every field after the type is an unsigned LEB128 varint: 7 bits a byte,
 * least significant group first, high bit set on every byte but the last;
 * at most 10 bytes, and a 10th byte holds only bit 63 (0 or 1).
 * A chunk keeps a cursor (time T, address A, the kinds KA[0..1] and KF of
 * its last ALLOCs and FREE, the flag RF, the addresses R of its last 8
 * ALLOC/RESIZE records), all 0 where the chunk starts. Each record moves
 * it; the reader replays the same moves:
 *   THREAD:                 T = its time, the rest 0 (a new owner: a new base)
 *   any other struct record: T = its time
 *   compact record:         T += dt; A += unzigzag(da) (mod 2^64);
 *                           the record's time is T, its address A;
 *                           ALLOC: KA[RF] = its kind; ALLOC/RESIZE: A
 *                           pushed on R, RF = 0; FREE: KF = its kind,
 *                           RF = its realloc flag (a moving realloc's
 *                           ALLOC half follows its FREE half: KA[1])
 *   PAD:                    nothing
 * zigzag maps a signed delta to unsigned (0, -1, 1, -2 -> 0, 1, 2, 3), so
 * a block just below the previous one costs as little as one above it. A
 * writer whose clock went back clamps dt to 0 (the time then reads as T).
 * meta: bits 0-5 func (enum vh_func), bit 6 the `realloc` flag, bit 7: a
 * heap varint follows (heap != 0), bit 8: a tag varint follows (ALLOC and
 * RESIZE only, tag != 0), bits 9-16 the other record flags (enum
 * vh_rec_flags, `realloc` 0 there); higher bits are 0. So a system-heap
 * record's meta is one byte, a moving realloc's halves included. Ranges:
 * slack and stack fit 32 bits, heap and tag 16 bits; anything else is
 * damage. A record's kind is meta | heap << 17 | tag << 33.
 *
 * Version 3 adds short forms that leave out what the cursor predicts
 * (most events: a thread's allocations are mostly of one function, a
 * glibc block's slack is its chunk's rounding, one thread's coarse clock
 * moves 1 ns a record, a block is often freed soon):
 *   ALLOC_NEXT 0x0e:   type u8, dt, da, size, stack
 *   ALLOC_TICK 0x11:   type u8, da, size, stack            (dt = 1)
 *   FREE_NEXT 0x0f:    type u8, dt, da
 *   FREE_TICK 0x12:    type u8, da                         (dt = 1)
 *   FREE_RECENT 0x10:  type u8, dt << 3 | k                (A = R[k])
 * An ALLOC short form is an ALLOC of kind KA[RF] whose slack is
 * vh_usual_slack(size); a FREE short form has kind KF. R[k] is the k-th
 * last address pushed (k = 0 the last; k must be below the count pushed).
 * They move the cursor as the long forms do, and decode to the same
 * records.
 *
 * Version 4 adds to the cursor the alternate ALLOC kind KB and the
 * addresses F of the run's last 64 FREE records (the blocks glibc's tcache
 * and fastbins hand back next), both 0 / empty where the chunk starts:
 *   ALLOC (any form) of kind K with RF = 0 and K != KA[0]: KB = KA[0]
 *   (before KA[0] = K);  FREE: its address pushed on F
 * and three forms of an ALLOC whose slack is vh_form4_slack(kind, size)
 * (glibc's rounding on the system heap as before, 0 on a custom heap):
 *   ALLOC_FREED 0x13:     type u8, dt << 6 | k, size, stack   (A = F[k])
 *   ALLOC_FREED_ALT 0x14: as ALLOC_FREED, of kind KB
 *   ALLOC_ALT 0x15:       type u8, dt, da, size, stack << 1 | b
 *                         (kind KB if b is 1, else KA[RF]: where
 *                         ALLOC_NEXT's slack rule does not hold)
 * ALLOC_FREED is of kind KA[RF]. F[k] is the k-th last address pushed on
 * F (k = 0 the last; k below the count pushed); the block's address is
 * then written not at all, its index in 6 bits of the dt varint. R
 * holds the last 64 addresses pushed (8 before), and
 *   FREE_FAR 0x16:        type u8, dt << 6 | k                (A = R[k])
 * frees one of them (k below the count pushed), of kind KF. */
#define VH_META_FUNC 0x3fu
#define VH_META_REALLOC (1u << 6)
#define VH_META_HEAP (1u << 7)
#define VH_META_TAG (1u << 8)
#define VH_META_FLAGS_SHIFT 9
#define VH_META_BITS 17

/* The meta varint of a record (see above). */
static inline uint32_t vh_meta(unsigned func, uint8_t flags, uint16_t heap, uint16_t tag)
{
    return (func & VH_META_FUNC) | ((flags & VH_RF_REALLOC) ? VH_META_REALLOC : 0) |
           (heap ? VH_META_HEAP : 0) | (tag ? VH_META_TAG : 0) |
           (uint32_t)(flags & ~VH_RF_REALLOC & 0xff) << VH_META_FLAGS_SHIFT;
}

/* The record flags (enum vh_rec_flags) a meta holds. */
static inline uint8_t vh_meta_flags(uint64_t meta)
{
    return (uint8_t)((meta >> VH_META_FLAGS_SHIFT) & ~VH_RF_REALLOC) |
           ((meta & VH_META_REALLOC) ? VH_RF_REALLOC : 0);
}

/* Longest encodings (the writer reserves this much, commits what it used):
 * type, 64-bit varints, 32-bit ones (5 bytes), 17-bit meta and 16-bit
 * heap / tag (3 bytes each). */
#define VH_ENC_ALLOC_MAX (1u + 3 * VH_ULEB_MAX + 5 + 5 + 3 + 3 + 3)
#define VH_ENC_FREE_MAX (1u + 2 * VH_ULEB_MAX + 3 + 3)

_Static_assert(VH_FN_COUNT <= VH_META_FUNC + 1, "func fits meta's 6 bits");
_Static_assert(offsetof(struct vh_rec_time, time) == 8 && offsetof(struct vh_rec_value, time) == 8 &&
               offsetof(struct vh_rec_move, time) == 8 && offsetof(struct vh_rec_stack, time) == 8 &&
               offsetof(struct vh_rec_module, time) == 8 && offsetof(struct vh_rec_heap, time) == 8 &&
               offsetof(struct vh_rec_label, time) == 8 &&
               offsetof(struct vh_rec_range, time) == 8 &&
               offsetof(struct vh_rec_region, time) == 8 &&
               offsetof(struct vh_rec_reach, time) == 8 &&
               offsetof(struct vh_rec_reach_end, time) == 8 &&
               offsetof(struct vh_rec_own, time) == 8 && offsetof(struct vh_rec_owner, time) == 8 &&
               offsetof(struct vh_rec_owned, time) == 8 &&
               offsetof(struct vh_rec_own_end, time) == 8,
               "every struct record has its time at offset 8 (the cursor reads it there)");

/* The per-chunk state both sides keep (see above); zeroed where a chunk,
 * or a THREAD record, starts. */
#define VH_RECENT 8u                      /* FREE_RECENT's reach in R */
#define VH_RECENT_FAR 64u                 /* FREE_FAR's, R's length (v4) */
#define VH_FREED 64u
struct vh_cursor {
    uint64_t time;                 /* T: time of the chunk's last record    */
    uint64_t addr;                 /* A: address of its last compact record */
    uint64_t akind[2];             /* KA: kinds of its last ALLOC [1] right
                                      after a realloc's FREE half, [0] else */
    uint64_t fkind;                /* KF: kind of its last FREE             */
    uint64_t rf;                   /* 1: its last compact record is a FREE
                                      with the realloc flag                 */
    uint64_t nrecent;              /* addresses pushed on R so far          */
    uint64_t recent[VH_RECENT_FAR]; /* R: recent[n % 64] is the n-th pushed */
    uint64_t kb;                   /* KB: the ALLOC kind before KA[0] (v4)  */
    uint64_t nfreed;               /* addresses pushed on F so far          */
    uint64_t freed[VH_FREED];      /* F: freed[n % 64] is the n-th pushed   */
};

/* A compact record decoded: what a version 1 capture stores. */
union vh_rec_compact {
    struct vh_rec_hdr h;
    struct vh_rec_alloc alloc;
    struct vh_rec_free free;
};

static inline int vh_rec_is_compact(uint8_t type)
{
    return type == VH_REC_ALLOC || type == VH_REC_FREE || type == VH_REC_RESIZE ||
           (type >= VH_REC_ALLOC_NEXT && type <= VH_REC_FREE_FAR);
}

/* The ALLOC forms, short or long (the others are RESIZE and the FREEs). */
static inline int vh_rec_is_alloc_form(uint8_t type)
{
    return type == VH_REC_ALLOC || type == VH_REC_ALLOC_NEXT || type == VH_REC_ALLOC_TICK ||
           (type >= VH_REC_ALLOC_FREED && type <= VH_REC_ALLOC_ALT);
}

/* A struct record of `type` at `time` moves the cursor (see above). */
static inline void vh_cursor_struct(struct vh_cursor *cur, uint8_t type, uint64_t time)
{
    if (type == VH_REC_THREAD)
        *cur = (struct vh_cursor){ .time = time };
    else
        cur->time = time;
}

/* The slack glibc's malloc gives a block of `size` bytes from an arena:
 * its chunk (size + 8 rounded up to 16, at least 32) less the 8-byte
 * header; the slack ALLOC_NEXT implies. A block mapped alone, or another
 * allocator's, differs and takes the long form. */
static inline uint64_t vh_usual_slack(uint64_t size)
{
    uint64_t chunk = size + 8 + 15 < 32 ? 32 : (size + 8 + 15) & ~(uint64_t)15;
    return size >> 60 ? UINT64_MAX : chunk - 8 - size;
}

/* The slack version 4's forms imply for a block of `size` of `kind`:
 * glibc's on the system heap, none on a custom heap (an allocator that
 * tells its usable size through vheap.h mostly tells the size). */
static inline uint64_t vh_form4_slack(uint64_t kind, uint64_t size)
{
    return (kind >> VH_META_BITS) & 0xffff ? 0 : vh_usual_slack(size);
}

static inline uint64_t vh_kind(uint32_t meta, uint16_t heap, uint16_t tag)
{
    return meta | (uint64_t)heap << VH_META_BITS | (uint64_t)tag << (VH_META_BITS + 16);
}

/* The cursor after a compact record of `type` (ALLOC, RESIZE or FREE) at
 * dt from the cursor's time (already clamped) and `addr`. */
static inline void vh_cursor_move(struct vh_cursor *cur, uint8_t type, uint64_t dt, uint64_t addr,
                                  uint64_t kind)
{
    cur->time += dt;
    cur->addr = addr;
    if (type != VH_REC_FREE) {
        if (type == VH_REC_ALLOC) {
            if (!cur->rf && kind != cur->akind[0])
                cur->kb = cur->akind[0];
            cur->akind[cur->rf] = kind;
        }
        cur->recent[cur->nrecent++ % VH_RECENT_FAR] = addr;
        cur->rf = 0;
    } else {
        cur->fkind = kind;
        cur->rf = (kind & VH_META_REALLOC) != 0;
        cur->freed[cur->nfreed++ % VH_FREED] = addr;
    }
}

/* F[k]'s slot: k-th last address freed. */
static inline uint64_t vh_freed(const struct vh_cursor *cur, unsigned k)
{
    return cur->freed[(cur->nfreed - 1 - k) % VH_FREED];
}

/* Which of F holds addr (the most recent first), or VH_FREED: the linear
 * search, for writers without the shim's index (preload/internal.h). */
static inline unsigned vh_freed_find(const struct vh_cursor *cur, uint64_t addr)
{
    for (unsigned k = 0; k < VH_FREED && k < cur->nfreed; k++)
        if (vh_freed(cur, k) == addr)
            return k;
    return VH_FREED;
}

/* R[k]'s slot: k-th last address pushed. */
static inline uint64_t vh_recent(const struct vh_cursor *cur, unsigned k)
{
    return cur->recent[(cur->nrecent - 1 - k) % VH_RECENT_FAR];
}

/* The short ALLOC form of a record of `kind`: its type byte and the
 * address (F[k] when k < VH_FREED, else a delta), or NULL when the cursor
 * predicts neither the kind nor the slack (version 3's forms imply
 * glibc's, version 4's vh_form4_slack). */
static inline uint8_t *vh_enc_alloc_short(uint8_t *p, const struct vh_cursor *cur, uint64_t kind,
                                          uint64_t dt, uint64_t addr, uint64_t size,
                                          uint32_t slack, unsigned k, uint64_t *stack)
{
    int alt = kind != cur->akind[cur->rf], v4 = slack == vh_form4_slack(kind, size);
    int v3 = !alt && slack == vh_usual_slack(size);
    if ((alt && kind != cur->kb) || !(v3 || v4))
        return NULL;
    if (v4 && k < VH_FREED && dt < (1ull << 57)) {
        *p++ = alt ? VH_REC_ALLOC_FREED_ALT : VH_REC_ALLOC_FREED;
        return vh_uleb_put(p, dt << 6 | k);
    }
    if (!v3)
        *stack = *stack << 1 | (unsigned)alt;   /* ALLOC_ALT says which kind */
    *p++ = !v3 ? VH_REC_ALLOC_ALT : dt == 1 ? VH_REC_ALLOC_TICK : VH_REC_ALLOC_NEXT;
    if (!v3 || dt != 1)
        p = vh_uleb_put(p, dt);
    return vh_uleb_put(p, vh_zigzag(addr - cur->addr));
}

/* Encodes an ALLOC or RESIZE at p (room for VH_ENC_ALLOC_MAX bytes) and
 * moves the cursor; returns the end of the record. The short forms where
 * the cursor predicts the rest (versions 3 and 4); `freed`: addr's index
 * in F (vh_freed_find), VH_FREED if not there. */
static inline uint8_t *vh_enc_alloc(uint8_t *p, struct vh_cursor *cur, uint8_t type,
                                    uint8_t flags, uint16_t heap, unsigned func, uint64_t time,
                                    uint64_t addr, uint64_t size, uint32_t slack, uint32_t stack,
                                    uint16_t tag, unsigned freed)
{
    uint64_t dt = time > cur->time ? time - cur->time : 0;
    uint32_t meta = vh_meta(func, flags, heap, tag);
    uint64_t kind = vh_kind(meta, heap, tag);
    uint64_t sv = stack;
    uint8_t *q;

    if (type == VH_REC_ALLOC &&
        (q = vh_enc_alloc_short(p, cur, kind, dt, addr, size, slack, freed, &sv))) {
        p = vh_uleb_put(q, size);
        p = vh_uleb_put(p, sv);
    } else {
        *p++ = type;
        p = vh_uleb_put(p, dt);
        p = vh_uleb_put(p, vh_zigzag(addr - cur->addr));
        p = vh_uleb_put(p, size);
        p = vh_uleb_put(p, slack);
        p = vh_uleb_put(p, stack);
        p = vh_uleb_put(p, meta);
        if (heap)
            p = vh_uleb_put(p, heap);
        if (tag)
            p = vh_uleb_put(p, tag);
    }
    vh_cursor_move(cur, type, dt, addr, kind);
    return p;
}

/* Which of R holds addr (the most recent first), or VH_RECENT_FAR: the
 * linear search, for writers without the shim's index. */
static inline unsigned vh_recent_find(const struct vh_cursor *cur, uint64_t addr)
{
    for (unsigned k = 0; k < VH_RECENT_FAR && k < cur->nrecent; k++)
        if (vh_recent(cur, k) == addr)
            return k;
    return VH_RECENT_FAR;
}

/* Encodes a FREE at p (room for VH_ENC_FREE_MAX bytes) and moves the
 * cursor; returns the end of the record. `k`: addr's index in R
 * (vh_recent_find), VH_RECENT_FAR if not there. FREE_RECENT or FREE_FAR
 * when R holds the block: never longer than FREE_NEXT or FREE_TICK (the
 * index takes 3 or 6 bits of dt's varint, the delta at least a byte). */
static inline uint8_t *vh_enc_free(uint8_t *p, struct vh_cursor *cur, uint8_t flags,
                                   uint16_t heap, unsigned func, uint64_t time, uint64_t addr,
                                   unsigned k)
{
    uint64_t dt = time > cur->time ? time - cur->time : 0;
    uint32_t meta = vh_meta(func, flags, heap, 0);
    uint64_t kind = vh_kind(meta, heap, 0), da = vh_zigzag(addr - cur->addr);

    if (kind != cur->fkind) {
        *p++ = VH_REC_FREE;
        p = vh_uleb_put(p, dt);
        p = vh_uleb_put(p, da);
        p = vh_uleb_put(p, meta);
        if (heap)
            p = vh_uleb_put(p, heap);
    } else if (k < VH_RECENT && dt < (1ull << 56)) {
        *p++ = VH_REC_FREE_RECENT;
        p = vh_uleb_put(p, dt << 3 | k);
    } else if (k < VH_RECENT_FAR && dt < (1ull << 57)) {
        *p++ = VH_REC_FREE_FAR;
        p = vh_uleb_put(p, dt << 6 | k);
    } else if (dt == 1) {
        *p++ = VH_REC_FREE_TICK;
        p = vh_uleb_put(p, da);
    } else {
        *p++ = VH_REC_FREE_NEXT;
        p = vh_uleb_put(p, dt);
        p = vh_uleb_put(p, da);
    }
    vh_cursor_move(cur, VH_REC_FREE, dt, addr, kind);
    return p;
}

/* One varint of a compact record: without bound checks when the longest
 * record fits before the end (`near`, the common case). */
static inline int vh_dec_field(const uint8_t **q, const uint8_t *end, int near, uint64_t *v)
{
    return near ? vh_uleb_get_near(q, v) : vh_uleb_get(q, end, v);
}

/* The fields of a compact record as its form gives them or the cursor
 * predicts them: dt, the address (absolute), and for an ALLOC its size,
 * slack, stack; the kind. */
struct vh_dec_fields {
    uint64_t dt, addr, size, slack, stack, kind;
};

/* The long forms (every version-2 record): 0 or an enum vh_dec_error. */
static inline int vh_dec_long(const uint8_t **q, const uint8_t *end, int near, int alloc,
                              const struct vh_cursor *cur, struct vh_dec_fields *f)
{
    uint64_t da, meta, heap = 0, tag = 0;
    int rc;

    if ((rc = vh_dec_field(q, end, near, &f->dt)) || (rc = vh_dec_field(q, end, near, &da)))
        return rc;
    if (alloc && ((rc = vh_dec_field(q, end, near, &f->size)) ||
                  (rc = vh_dec_field(q, end, near, &f->slack)) ||
                  (rc = vh_dec_field(q, end, near, &f->stack))))
        return rc;
    if ((rc = vh_dec_field(q, end, near, &meta)))
        return rc;
    if ((meta & VH_META_HEAP) && (rc = vh_dec_field(q, end, near, &heap)))
        return rc;
    if ((meta & VH_META_TAG) && (!alloc || (rc = vh_dec_field(q, end, near, &tag))))
        return alloc ? rc : VH_DEC_RANGE;
    if ((meta >> VH_META_BITS) | ((meta >> VH_META_FLAGS_SHIFT) & VH_RF_REALLOC) | (heap >> 16) |
        (tag >> 16))
        return VH_DEC_RANGE;
    f->addr = cur->addr + vh_unzigzag(da);
    f->kind = vh_kind((uint32_t)meta, (uint16_t)heap, (uint16_t)tag);
    return 0;
}

/* The short forms (version 3): 0 or an enum vh_dec_error. */
static inline int vh_dec_short(const uint8_t **q, const uint8_t *end, int near, uint8_t type,
                               const struct vh_cursor *cur, struct vh_dec_fields *f)
{
    uint64_t v, da;
    int rc;

    if (type == VH_REC_FREE_RECENT || type == VH_REC_FREE_FAR) {
        unsigned bits = type == VH_REC_FREE_RECENT ? 3 : 6;
        if ((rc = vh_dec_field(q, end, near, &v)))
            return rc;
        if ((v & ((1u << bits) - 1)) >= cur->nrecent)
            return VH_DEC_RANGE;
        f->dt = v >> bits;
        f->addr = vh_recent(cur, (unsigned)(v & ((1u << bits) - 1)));
        f->kind = cur->fkind;
        return 0;
    }
    f->dt = 1;
    if (type == VH_REC_ALLOC_FREED || type == VH_REC_ALLOC_FREED_ALT) {
        if ((rc = vh_dec_field(q, end, near, &v)))
            return rc;
        if ((v & (VH_FREED - 1)) >= cur->nfreed)
            return VH_DEC_RANGE;
        f->dt = v >> 6;
        f->addr = vh_freed(cur, (unsigned)(v & (VH_FREED - 1)));
    } else {
        if ((type == VH_REC_ALLOC_NEXT || type == VH_REC_FREE_NEXT || type == VH_REC_ALLOC_ALT) &&
            (rc = vh_dec_field(q, end, near, &f->dt)))
            return rc;
        if ((rc = vh_dec_field(q, end, near, &da)))
            return rc;
        f->addr = cur->addr + vh_unzigzag(da);
    }
    if (type == VH_REC_FREE_NEXT || type == VH_REC_FREE_TICK) {
        f->kind = cur->fkind;
        return 0;
    }
    if ((rc = vh_dec_field(q, end, near, &f->size)) || (rc = vh_dec_field(q, end, near, &f->stack)))
        return rc;
    int alt = type == VH_REC_ALLOC_FREED_ALT;
    if (type == VH_REC_ALLOC_ALT) {
        alt = f->stack & 1;
        f->stack >>= 1;
    }
    f->kind = alt ? cur->kb : cur->akind[cur->rf];
    f->slack = type >= VH_REC_ALLOC_FREED ? vh_form4_slack(f->kind, f->size)
                                          : vh_usual_slack(f->size);
    return 0;
}

/* Decodes the compact record at [p, end) (p[0] is its type, one of
 * vh_rec_is_compact) into *out with cur's bases, and moves the cursor.
 * Returns its length, or a negative enum vh_dec_error (cursor unchanged). */
static inline long vh_dec_compact(const uint8_t *p, const uint8_t *end, struct vh_cursor *cur,
                                  union vh_rec_compact *out)
{
    const uint8_t *q = p + 1;
    struct vh_dec_fields f = { 0 };
    /* The whole record lies before end, however long: read without bound
     * checks. */
    int near = end - p >= (long)VH_ENC_ALLOC_MAX, rc;
    uint8_t type = vh_rec_is_alloc_form(p[0])   ? VH_REC_ALLOC
                   : p[0] == VH_REC_RESIZE ? VH_REC_RESIZE
                                           : VH_REC_FREE;
    int alloc = type != VH_REC_FREE;

    rc = p[0] <= VH_REC_RESIZE ? vh_dec_long(&q, end, near, alloc, cur, &f)
                               : vh_dec_short(&q, end, near, p[0], cur, &f);
    if (rc)
        return rc < 0 ? rc : VH_DEC_RANGE;   /* (rc is negative: says so to the compiler) */
    if ((f.slack >> 32) | (f.stack >> 32))
        return VH_DEC_RANGE;
    uint32_t meta = (uint32_t)(f.kind & ((1u << VH_META_BITS) - 1));
    uint16_t heap = (uint16_t)(f.kind >> VH_META_BITS), tag = (uint16_t)(f.kind >> (VH_META_BITS + 16));
    vh_cursor_move(cur, type, f.dt, f.addr, f.kind);
    if (alloc) {
        out->alloc = (struct vh_rec_alloc){
            .h = { .type = type,
                   .flags = vh_meta_flags(meta), .a = heap, .b = (uint32_t)f.stack },
            .time = cur->time,
            .addr = cur->addr,
            .size = f.size,
            .slack = (uint32_t)f.slack,
            .func = (uint16_t)(meta & VH_META_FUNC),
            .tag = tag,
        };
    } else {
        out->free = (struct vh_rec_free){
            .h = { .type = VH_REC_FREE, .flags = vh_meta_flags(meta), .a = heap },
            .time = cur->time,
            .addr = cur->addr,
            .func = meta & VH_META_FUNC,
        };
    }
    return (long)(q - p);
}

/* The time of the compact record at [p, end) without decoding the rest:
 * 0 and *time, or a negative enum vh_dec_error. */
static inline int vh_dec_compact_time(const uint8_t *p, const uint8_t *end,
                                      const struct vh_cursor *cur, uint64_t *time)
{
    const uint8_t *q = p + 1;
    uint64_t dt = 1;
    int rc = 0;

    if (p[0] != VH_REC_ALLOC_TICK && p[0] != VH_REC_FREE_TICK)
        rc = vh_uleb_get(&q, end, &dt);
    if (!rc)
        *time = cur->time + (p[0] == VH_REC_FREE_RECENT                               ? dt >> 3
                             : p[0] == VH_REC_ALLOC_FREED || p[0] == VH_REC_ALLOC_FREED_ALT ||
                                       p[0] == VH_REC_FREE_FAR
                                   ? dt >> 6
                                                                                     : dt);
    return rc;
}

static inline const char *vh_dec_why(int err)
{
    return err == VH_DEC_CUT      ? "runs past used"
           : err == VH_DEC_VARINT ? "has a varint longer than 64 bits"
                                  : "has a field out of range";
}

/* Stable lowercase names, used by `vheap-analyze dump` and the schema. */
static inline const char *vh_func_name(unsigned f)
{
    static const char *const names[] = {
        "none", "malloc", "calloc", "realloc", "reallocarray", "free",
        "posix_memalign", "aligned_alloc", "memalign", "valloc", "pvalloc",
        "mallocx", "rallocx", "xallocx", "sdallocx", "dallocx", "custom",
        "heaptrack_api",
        /* one word each (no spaces: dump lines split on them) */
        "operator_new", "operator_new_array", "operator_new_nothrow",
        "operator_new_array_nothrow", "operator_new_aligned",
        "operator_new_array_aligned", "operator_new_aligned_nothrow",
        "operator_new_array_aligned_nothrow",
        "operator_delete", "operator_delete_array", "operator_delete_sized",
        "operator_delete_array_sized", "operator_delete_aligned",
        "operator_delete_array_aligned", "operator_delete_sized_aligned",
        "operator_delete_array_sized_aligned", "operator_delete_nothrow",
        "operator_delete_array_nothrow", "operator_delete_aligned_nothrow",
        "operator_delete_array_aligned_nothrow",
        "mmap", "munmap", "mremap", "sbrk", "brk", "mmap_block",
    };
    _Static_assert(sizeof names / sizeof *names == VH_FN_COUNT, "a name for every vh_func");
    return f < VH_FN_COUNT ? names[f] : "unknown";
}

#endif
