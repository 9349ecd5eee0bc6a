/* capture.c — the capture file: creation, header page, growth, chunks.
 *
 * One virtual range is reserved once; the file is mapped into it MAP_SHARED
 * in extents as it grows, so header and chunks are one linear range whose
 * pages live in the page cache and survive the process's death. An extent
 * is only sized (sparse); a page gets its space just before it is first
 * written, in the writer's populate steps (back_pages: a write to a hole
 * that the disk cannot back would be a SIGBUS; the populate says EFAULT,
 * fallocate ENOSPC instead). Any failure to grow disables recording:
 * events are then only counted. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <sched.h>
#include <unistd.h>

#include "preload/internal.h"
#include "preload/lock.h"
#include "preload/sys.h"

#define CHUNK_HDR ((uint64_t)sizeof(struct vh_chunk_header))
#define MAX_EXTENT (64ull << 20)
#define FREE_MAX 4096u

static vh_lock_t chunk_lock;             /* claims, growth, the free list         */
/* Chunks of exited threads, with the time of their last record: a chunk is
 * only handed to a thread whose next record is not earlier (a reader finds
 * time going backwards inside a chunk a sign of damage). */
struct free_chunk {
    uint32_t index;
    uint64_t time;
};
static struct free_chunk free_chunks[FREE_MAX];
static uint32_t nfree;
static char display_path[4096];    /* the name as the user will look for it */
static char start_cwd[4096];       /* relative patterns resolve against it  */
static char exe_path[VH_EXE_MAX];
static long page_size = 4096;     /* the RSS's unit: statm counts pages  */

/* ---- the name -------------------------------------------------------------- */
static size_t append(char *dst, size_t len, size_t cap, const char *s)
{
    while (*s && len + 1 < cap)
        dst[len++] = *s++;
    dst[len < cap ? len : cap - 1] = '\0';
    return len;
}

/* Expands %p, %e, %% of `pattern`; sets *has_pid. Returns -ENAMETOOLONG. */
static int expand(char *dst, size_t cap, const char *pattern, pid_t pid, int *has_pid)
{
    const char *exe = strrchr(exe_path, '/');
    exe = exe ? exe + 1 : (exe_path[0] ? exe_path : "unknown");
    size_t len = 0;
    *has_pid = 0;
    dst[0] = '\0';
    for (const char *p = pattern; *p; p++) {
        char num[24];
        if (p[0] == '%' && p[1] == 'p') {
            vh_format(num, sizeof num, "%d", (int)pid);
            len = append(dst, len, cap, num);
            *has_pid = 1;
            p++;
        } else if (p[0] == '%' && p[1] == 'e') {
            len = append(dst, len, cap, exe);
            p++;
        } else if (p[0] == '%' && p[1] == '%') {
            len = append(dst, len, cap, "%");
            p++;
        } else {
            char c[2] = { *p, 0 };
            len = append(dst, len, cap, c);
        }
    }
    return len + 1 < cap ? 0 : -ENAMETOOLONG;
}

/* A directory anyone may write to without the sticky bit lets another user
 * replace or pre-create our capture: refuse it. */
static int check_dir(const char *path)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash) {
        memcpy(dir, ".", 2);
    } else if (slash == path) {
        memcpy(dir, "/", 2);
    } else {
        size_t n = (size_t)(slash - path);
        if (n >= sizeof dir)
            return -ENAMETOOLONG;
        memcpy(dir, path, n);
        dir[n] = '\0';
    }
    struct stat st;
    if (stat(dir, &st) < 0)
        return -errno;
    if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX)) {
        vh_log("refusing to write a capture into %s: world-writable without the sticky "
               "bit; recording nothing", dir);
        return -EPERM;
    }
    return 0;
}

/* Descriptors. The shim keeps none: every number it held was one the
 * program could not open (a program that opens files until EMFILE got
 * fewer under the shim, and any number kept "out of the way" is still one
 * of RLIMIT_NOFILE's). The capture is mapped, so its file is opened again
 * by name only for the rare moment that needs a descriptor (an extent of
 * growth, the truncation at exit) and closed at once; statm likewise for
 * each RSS sample (below). */

/* Opens the capture exclusively, adding ".1", ".2", ... while the name is
 * taken. Returns the fd and the suffix number in *gen. */
static int open_exclusive(const char *abs, const char *disp, int *gen)
{
    char try_abs[4096], try_disp[4096];
    for (int n = 0; n < 1000; n++) {
        if (n == 0) {
            vh_format(try_abs, sizeof try_abs, "%s", abs);
            vh_format(try_disp, sizeof try_disp, "%s", disp);
        } else {
            vh_format(try_abs, sizeof try_abs, "%s.%d", abs, n);
            vh_format(try_disp, sizeof try_disp, "%s.%d", disp, n);
        }
        int fd = vh_sys_open(try_abs, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0) {
            *gen = n;
            memcpy(vh_cap.path, try_abs, strlen(try_abs) + 1);
            memcpy(display_path, try_disp, strlen(try_disp) + 1);
            return fd;
        }
        if (errno == EINTR) {
            n--;
            continue;
        }
        if (errno != EEXIST)
            return -errno;
    }
    return -EEXIST;
}

/* ---- space ----------------------------------------------------------------- */
/* The capture's file opened again for one step of growth or the end's
 * truncation, trusted only if it is the same inode; the caller closes it.
 * -1 when the file is gone (or no descriptor is free: the program holds
 * them all, and the growth that needed it stops recording, counted). */
static int capture_fd(void)
{
    int fd = vh_sys_open(vh_cap.path, O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) < 0 || st.st_dev != vh_cap.dev || st.st_ino != vh_cap.ino) {
        vh_sys_close(fd);
        return -1;
    }
    return fd;
}

/* RLIMIT_FSIZE: the kernel answers a write past it with SIGXFSZ, which
 * kills the program. The capture never asks for space past it: recording
 * stops there instead (said once, later events counted as dropped). */
static int within_fsize(uint64_t end)
{
    struct rlimit rl;
    return getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
           end <= (uint64_t)rl.rlim_cur;
}

/* Gives [off, off+len) of the file real blocks. */
static int take_space(int fd, uint64_t off, uint64_t len)
{
    if (!within_fsize(off + len))
        return -EFBIG;
    for (;;) {
        if (vh_sys_fallocate(fd, 0, (off_t)off, (off_t)len) == 0)
            return 0;
        if (errno == EINTR)
            continue;
        if (errno != EOPNOTSUPP)
            return -errno;
        break;
    }
    /* No fallocate on this filesystem: write zeros, which also reports
     * ENOSPC up front. */
    static const char zeros[16384];
    while (len) {
        size_t n = len < sizeof zeros ? (size_t)len : sizeof zeros;
        ssize_t w = vh_sys_pwrite(fd, zeros, n, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? -errno : -ENOSPC;
        off += (uint64_t)w;
        len -= (uint64_t)w;
    }
    return 0;
}

/* Sizes the file to `end` bytes (sparse: no space is taken, see
 * back_pages), never past RLIMIT_FSIZE. */
static int extend(int fd, uint64_t end)
{
    if (!within_fsize(end))
        return -EFBIG;
    while (ftruncate(fd, (off_t)end) != 0)
        if (errno != EINTR)
            return -errno;
    return 0;
}

/* Gives the mapped pages [from, to) of the capture real space before
 * anything writes to them. MADV_POPULATE_WRITE (Linux 5.14) faults them in
 * writable, which takes the filesystem's space for a hole, and answers
 * EFAULT where the write would have raised SIGBUS (a full disk); where it
 * fails or is missing, fallocate through a descriptor opened for the
 * moment says yes or no for sure. Taking the space here, a populate step
 * at a time as the writer goes, instead of for a whole extent when mapped,
 * spares a short run allocating (and at exit freeing) the 2 MiB of its
 * first extent on tmpfs: a quarter of /bin/true's time under the shim.
 * 0 or -errno. */
static int populate_missing;      /* atomic: the kernel has no MADV_POPULATE_WRITE */

static int back_pages(char *from, char *to)
{
    if (!__atomic_load_n(&populate_missing, __ATOMIC_RELAXED)) {
        if (madvise(from, (size_t)(to - from), MADV_POPULATE_WRITE) == 0)
            return 0;
        if (errno == EINVAL)
            __atomic_store_n(&populate_missing, 1, __ATOMIC_RELAXED);
    }
    int fd = capture_fd();
    if (fd < 0)
        return -EBADF;
    int rc = take_space(fd, (uint64_t)(from - vh_cap.base), (uint64_t)(to - from));
    vh_sys_close(fd);
    return rc;
}

/* Maps [off, off + len) of the capture at `at`. Without read-around: the
 * kernel's fault on a file page not cached reads (zeroes, for space just
 * taken) the pages around it too, up to megabytes with large folios,
 * which were most of a short run's cost under the shim (a third of
 * /bin/ls's CPU time, in the header's first fault); the writer faults
 * its pages in itself, in steps (populate), so nothing is lost. */
static void *map_file(void *at, size_t len, int fd, off_t off)
{
    void *p = vh_sys_mmap(at, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, off);
    if (p != MAP_FAILED)
        madvise(p, len, MADV_RANDOM);      /* best effort */
    return p;
}

/* Extends the file and the mapping to at least `need` bytes. Chunk lock.
 * Under an address-space limit the file grows two chunks at a time, so
 * that what is mapped stays close to what is written. */
static int grow(uint64_t need)
{
    while (vh_cap.mapped < need) {
        uint64_t body = vh_cap.mapped - VH_HEADER_SIZE;
        uint64_t step = body < MAX_EXTENT && !vh_cap.as_limited ? body : MAX_EXTENT;
        if (step < 2ull * vh_cap.chunk_size || vh_cap.as_limited)
            step = 2ull * vh_cap.chunk_size;
        step = (step + vh_cap.chunk_size - 1) / vh_cap.chunk_size * vh_cap.chunk_size;
        if (vh_cap.mapped + step > vh_cap.reserved) {
            step = (vh_cap.reserved - vh_cap.mapped) / vh_cap.chunk_size * vh_cap.chunk_size;
            if (vh_cap.mapped + step < need)
                return -ENOMEM;
        }
        int fd = capture_fd();
        if (fd < 0)
            return -EBADF;         /* the file is gone, or no number free */
        int rc = extend(fd, vh_cap.mapped + step);
        if (rc == -EFBIG && step > vh_cap.chunk_size && vh_cap.mapped + vh_cap.chunk_size >= need) {
            step = vh_cap.chunk_size;   /* nearly at the limit: take what is needed */
            rc = extend(fd, vh_cap.mapped + step);
        }
        void *at = MAP_FAILED;
        if (rc == 0) {
            at = map_file(vh_cap.base + vh_cap.mapped, step, fd, (off_t)vh_cap.mapped);
            if (at == MAP_FAILED)
                rc = -errno;
        }
        vh_sys_close(fd);
        if (rc < 0)
            return rc;
        vh_cap.mapped += step;
    }
    return 0;
}

/* ---- creation -------------------------------------------------------------- */
static void read_cmdline(struct vh_capture_header *h)
{
    int fd = vh_sys_open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        return;
    size_t len = 0;
    char extra;
    for (;;) {
        ssize_t r = vh_sys_read(fd, h->argv + len, VH_ARGV_MAX - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        len += (size_t)r;
        if (len == VH_ARGV_MAX)
            break;
    }
    if (len == VH_ARGV_MAX && vh_sys_read(fd, &extra, 1) == 1) {
        h->flags |= VH_HDR_ARGV_TRUNC;
    }
    if (len == VH_ARGV_MAX) {
        h->argv[VH_ARGV_MAX - 1] = '\0';
    } else if (len && h->argv[len - 1] != '\0') {
        h->argv[len++] = '\0';
    }
    h->argv_len = (uint32_t)len;
    vh_sys_close(fd);
}

/* The capture's virtual range. Without an address-space limit, 64 GiB
 * (never backed: PROT_NONE, MAP_NORESERVE). Under RLIMIT_AS every byte of
 * it would count against the program's own allocations, so it is a
 * quarter of the limit, and when the program's allocator runs out of
 * address space the part not yet mapped is given back at once
 * (vh_capture_give_back, silently: if the capture then runs out of room,
 * that is said): the program's allocations fail no earlier than without
 * the shim but for what the capture has mapped so far. */
static int reserve_range(void)
{
    uint64_t cap = 64ull << 30;
    struct rlimit rl;
    vh_cap.as_limited = getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY;
    if (vh_cap.as_limited && (uint64_t)rl.rlim_cur / 4 < cap)
        cap = (uint64_t)rl.rlim_cur / 4;
    uint64_t floor = VH_HEADER_SIZE + 2ull * vh_opt.chunk_size;
    for (uint64_t size = cap; size >= floor; size /= 2) {
        size = (size + 4095) & ~4095ull;
        void *p = vh_sys_mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
        if (p != MAP_FAILED) {
            vh_cap.base = p;
            vh_cap.reserved = size;
            return 0;
        }
    }
    return -ENOMEM;
}

int vh_capture_give_back(void)
{
    if (!vh_cap.as_limited || !vh_cap.base)
        return 0;
    vh_lock(&chunk_lock);
    uint64_t tail = vh_cap.reserved - vh_cap.mapped;
    if (tail) {
        vh_sys_munmap(vh_cap.base + vh_cap.mapped, tail);
        vh_cap.reserved = vh_cap.mapped;
    }
    vh_unlock(&chunk_lock);
    return tail != 0;
}

/* The capture's name: VHEAP_OUT expanded into disp (as said to people)
 * and abs (from the start directory); a fork child whose pattern has no
 * %p gets ".<pid>" so it never shares the parent's file. 0 or -errno,
 * said. */
static int capture_name(int forked, pid_t pid, char disp[4096], char abs[4096])
{
    int has_pid;
    int rc = expand(disp, 4096, vh_opt.out, pid, &has_pid);
    if (rc == 0 && forked && !has_pid) {
        size_t l = strlen(disp);
        if (vh_format(disp + l, 4096 - l, ".%d", (int)pid) + l + 1 >= 4096)
            rc = -ENAMETOOLONG;
    }
    if (rc < 0) {
        vh_log("capture path from VHEAP_OUT is too long; recording nothing");
        return rc;
    }
    if (disp[0] != '/' && start_cwd[0])
        vh_format(abs, 4096, "%s/%s", start_cwd, disp);
    else
        vh_format(abs, 4096, "%s", disp);
    rc = check_dir(abs);
    if (rc < 0 && rc != -EPERM)
        vh_log("cannot use the directory of %s: %s; recording nothing", disp, vh_errname(-rc));
    return rc;
}

/* The header page and the first two chunks of the file fd, mapped at the
 * start of the capture's range (reserved first). 0 or -errno, said. */
static int map_first(int fd, const char *disp)
{
    int rc;
    if (!vh_cap.base && (rc = reserve_range()) < 0) {
        vh_log("cannot reserve address space for the capture; recording nothing");
        return rc;
    }
    vh_cap.mapped = VH_HEADER_SIZE;
    uint64_t first = VH_HEADER_SIZE + 2ull * vh_cap.chunk_size;
    if ((rc = extend(fd, first)) < 0) {
        if (rc == -EFBIG)
            vh_log("the file size limit (ulimit -f) leaves no room for %s; recording nothing",
                   disp);
        else
            vh_log("cannot allocate space for %s: %s; recording nothing", disp,
                   vh_errname(-rc));
        return rc;
    }
    if (map_file(vh_cap.base, first, fd, 0) == MAP_FAILED) {
        rc = -errno;
        vh_log("cannot map %s: %s; recording nothing", disp, vh_errname(-rc));
        return rc;
    }
    vh_cap.mapped = first;
    if ((rc = back_pages(vh_cap.base, vh_cap.base + VH_HEADER_SIZE)) < 0) {
        vh_log("cannot allocate space for %s: %s; recording nothing", disp, vh_errname(-rc));
        return rc;
    }
    vh_cap.hdr = (struct vh_capture_header *)vh_cap.base;
    return 0;
}

/* Everything of the header but its magic. */
static void fill_header(struct vh_capture_header *h, int forked,
                        const struct vh_capture_header *parent, pid_t pid, int gen)
{
    struct timespec rt;
    if (!forked)
        vh_clock_init();           /* before the two start times: it takes a while */
    clock_gettime(CLOCK_REALTIME, &rt);
    vh_cap.start_mono = vh_clock_start(forked ? vh_tls.clocked : 0);
    h->version = VH_CAPTURE_VERSION;
    h->header_size = VH_HEADER_SIZE;
    h->chunk_size = vh_cap.chunk_size;
    h->chunk_header_size = (uint32_t)CHUNK_HDR;
    h->chunk_offset = VH_HEADER_SIZE;
    h->chunks_claimed = 0;
    h->pid = (uint32_t)pid;
    h->ppid = (uint32_t)(forked && parent ? parent->pid : (uint32_t)getppid());
    h->start_realtime_ns = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
    h->start_monotonic_ns = vh_cap.start_mono;
    page_size = sysconf(_SC_PAGESIZE);
    h->page_size = (uint32_t)page_size;
    h->phys_pages = (uint64_t)sysconf(_SC_PHYS_PAGES);
    h->max_depth = vh_opt.depth;
    h->unwind = vh_opt.unwind;
    h->exec_generation = (uint32_t)gen;
    h->coarse_res_ns = vh_clock_coarse_res();
    h->sample_rate = vh_sample_rate;
    h->recording = 1;
    h->precise_from = h->coarse_res_ns ? UINT64_MAX : 0;
    if (forked) {
        h->flags |= VH_HDR_FORKED;
        h->parent_start_realtime_ns = parent ? parent->start_realtime_ns : 0;
    }
    memcpy(h->exe, exe_path, strlen(exe_path) + 1);
    read_cmdline(h);
}

int vh_capture_create(int forked, const struct vh_capture_header *parent)
{
    pid_t pid = getpid();
    int rc;
    if (!forked) {
        const char *exe = vh_main_exe();  /* not /proc/self/exe: ld.so ./prog */
        memcpy(exe_path, exe, strlen(exe) + 1);
        if (!getcwd(start_cwd, sizeof start_cwd))
            start_cwd[0] = '\0';
    }
    char disp[4096], abs[4096];
    if ((rc = capture_name(forked, pid, disp, abs)) < 0)
        return rc;
    if (!forked)
        vh_handover_clear(abs);    /* the empty capture of the image we replaced */
    int gen = 0;
    int fd = open_exclusive(abs, disp, &gen);
    if (fd < 0) {
        vh_log("cannot create %s: %s; recording nothing", disp, vh_errname(-fd));
        return fd;
    }
    struct stat st;
    if (fstat(fd, &st) < 0) {
        rc = -errno;
        vh_sys_close(fd);
        return rc;
    }
    vh_cap.dev = st.st_dev;
    vh_cap.ino = st.st_ino;
    vh_cap.chunk_size = vh_opt.chunk_size;
    vh_cap.pid = pid;
    if ((rc = map_first(fd, disp)) < 0) {
        vh_sys_close(fd);
        vh_cap.hdr = NULL;
        unlink(vh_cap.path);
        return rc;
    }
    fill_header(vh_cap.hdr, forked, parent, pid, gen);
    /* The magic last: a reader that sees it sees a complete header. */
    __atomic_thread_fence(__ATOMIC_RELEASE);
    memcpy(vh_cap.hdr->magic, VH_CAPTURE_MAGIC, 8);
    nfree = 0;
    vh_sys_close(fd);              /* mapped: the shim holds no descriptor */
    return 0;
}

const char *vh_capture_display_path(void)
{
    return display_path;
}

/* ---- chunks ---------------------------------------------------------------- */
static struct vh_chunk_header *chunk_at(uint32_t idx)
{
    return (struct vh_chunk_header *)(vh_cap.base + VH_HEADER_SIZE +
                                      (uint64_t)idx * vh_cap.chunk_size);
}

/* A released chunk whose records all precede `time`, or -1. Chunk lock. */
static int pop_free(uint64_t time)
{
    for (uint32_t i = nfree; i-- > 0;) {
        if (free_chunks[i].time > time)
            continue;
        uint32_t idx = free_chunks[i].index;
        free_chunks[i] = free_chunks[--nfree];
        return (int)idx;
    }
    return -1;
}

/* A chunk for a thread whose first record has `time`: a released one, or a
 * new one. NULL if none. */
static struct vh_chunk_header *claim(uint64_t time)
{
    struct vh_capture_header *h = vh_cap.hdr;
    struct vh_chunk_header *c = NULL;
    int rc = 0, reuse;
    uint64_t idx = 0;
    vh_lock(&chunk_lock);
    if (h->flags & VH_HDR_DISABLED) {
        vh_unlock(&chunk_lock);
        return NULL;
    }
    if ((reuse = pop_free(time)) >= 0) {
        c = chunk_at((uint32_t)reuse);
    } else {
        idx = h->chunks_claimed;
        uint64_t need = VH_HEADER_SIZE + (idx + 1) * vh_cap.chunk_size;
        if (idx >= UINT32_MAX)
            rc = -E2BIG;
        else if (need > vh_cap.mapped)
            rc = grow(need);
        char *first_page = (char *)chunk_at((uint32_t)idx);   /* its header's */
        if (rc == 0)
            rc = back_pages(first_page, first_page + 4096);
        if (rc == 0) {
            /* The header first, then the count (release): every chunk a
             * reader counts has its header, so one without is damage, not
             * a claim in progress. */
            c = chunk_at((uint32_t)idx);
            c->magic = VH_CHUNK_MAGIC;
            c->index = (uint32_t)idx;
            __atomic_store_n(&c->used, CHUNK_HDR, __ATOMIC_RELAXED);
            __atomic_store_n(&h->chunks_claimed, idx + 1, __ATOMIC_RELEASE);
        }
    }
    vh_unlock(&chunk_lock);
    if (rc < 0)
        vh_capture_disable(rc == -EFBIG ? "the file size limit (ulimit -f) was reached"
                           : rc == -ENOMEM && vh_cap.as_limited
                               ? "the address-space limit (ulimit -v) leaves the capture no room"
                           : rc == -ENOMEM || rc == -E2BIG ? "the capture reached its size limit"
                           : rc == -EBADF ? "the capture file was removed"
                                          : "cannot grow the capture", -rc);
    return c;
}

/* Where this thread may write up to: the chunk is faulted in ahead of the
 * writer in steps (one madvise instead of a page fault every 4 KiB on the
 * hot path), and only in steps, so a thread that records little does not
 * map a whole chunk. A chunk its thread is done with is unmapped from the
 * process again (MADV_DONTNEED keeps a shared file's data): the capture's
 * pages would otherwise count in the program's RSS, growing with it. */
#define POPULATE_STEP (64u << 10)

static uint64_t resident;          /* atomic: bytes faulted in, still mapped */

uint64_t vh_capture_resident(void)
{
    return __atomic_load_n(&resident, __ATOMIC_RELAXED);
}

static int populate(struct vh_tls *t, size_t need)
{
    char *chunk_end = (char *)t->chunk + vh_cap.chunk_size;
    char *from = t->pop_start ? t->end : (char *)((uintptr_t)t->pos & ~(uintptr_t)4095);
    if (!t->pop_start)
        t->pop_start = from;
    /* The step doubles with what this chunk took so far, from a page to
     * POPULATE_STEP: a short run, or a thread that records a few events,
     * faults in (and takes the space of) a page or two, not 64 KiB. */
    size_t step = (size_t)(t->end - t->pop_start);
    step = step < 4096 ? 4096 : step > POPULATE_STEP ? POPULATE_STEP
                                : (size_t)1 << (63 - __builtin_clzll(step));
    char *to = (char *)(((uintptr_t)t->pos + need + step) & ~(uintptr_t)(step - 1));
    if (to > chunk_end)
        to = chunk_end;
    if (to > from) {
        int rc = back_pages(from, to);
        if (rc < 0)
            return rc;
        __atomic_fetch_add(&resident, (uint64_t)(to - from), __ATOMIC_RELAXED);
        t->end = to;
    }
    return 0;
}

/* No space for the pages the writer needs next: recording stops, as when
 * an extent cannot grow. NULL. */
static void *no_space(int rc)
{
    vh_capture_disable(rc == -EFBIG ? "the file size limit (ulimit -f) was reached"
                       : rc == -EBADF ? "the capture file was removed"
                                      : "cannot grow the capture", -rc);
    return NULL;
}

static void retire(struct vh_tls *t)
{
    if (!t->chunk || !t->pop_start)
        return;
    size_t len = (size_t)(t->end - t->pop_start);
    madvise(t->pop_start, len, MADV_DONTNEED);
    __atomic_fetch_sub(&resident, (uint64_t)len, __ATOMIC_RELAXED);
    t->pop_start = NULL;
}

void *vh_rec_begin_slow(struct vh_tls *t, size_t size, uint64_t time)
{
    struct vh_capture_header *h = vh_cap.hdr;
    const size_t thread_rec = sizeof(struct vh_rec_time);
    if (!h || (__atomic_load_n(&h->flags, __ATOMIC_RELAXED) & VH_HDR_DISABLED))
        return NULL;
    int rc;
    if (t->chunk && (size_t)((char *)t->chunk + vh_cap.chunk_size - t->pos) >= size) {
        if ((rc = populate(t, size)) < 0)
            return no_space(rc);
        return t->pos;             /* the chunk had room beyond what is faulted in */
    }
    retire(t);                     /* full: done with it */
    t->chunk = NULL;
    t->pos = t->end = NULL;
    if (size + thread_rec + 7 + CHUNK_HDR > vh_cap.chunk_size)
        return NULL;               /* can never fit (a giant path) */
    if (!t->tid)
        t->tid = (uint32_t)vh_gettid();
    for (;;) {
        struct vh_chunk_header *c = claim(time);
        if (!c)
            return NULL;
        char *pos = (char *)c + __atomic_load_n(&c->used, __ATOMIC_RELAXED);
        char *end = (char *)c + vh_cap.chunk_size;
        size_t pad = (size_t)(-(uintptr_t)pos & 7);   /* a reused chunk: compact tail */
        if ((size_t)(end - pos) < pad + thread_rec + size)
            continue;              /* a released chunk with too little room: drop it */
        t->chunk = c;
        t->pos = t->end = pos;
        t->pop_start = NULL;
        if ((rc = populate(t, pad + thread_rec + size)) < 0)
            return no_space(rc);
        if (!t->registered)
            vh_thread_register(t);
        for (; pad; pad--)
            *t->pos++ = (char)VH_REC_PAD;
        /* Records of a chunk are one thread's: say which. It also restarts
         * the chunk's time and address bases for the compact records. */
        struct vh_rec_time *r = (struct vh_rec_time *)(void *)t->pos;
        r->h = (struct vh_rec_hdr){ .type = VH_REC_THREAD, .b = t->tid };
        r->time = time;
        t->cur = (struct vh_cursor){ .time = time, .addr = 0 };
        t->runs++;
        t->pos += thread_rec;
        __atomic_store_n(&c->used, (uint64_t)(t->pos - (char *)c), __ATOMIC_RELEASE);
        return t->pos;
    }
}

void vh_chunk_abandon(struct vh_tls *t)
{
    retire(t);
    t->chunk = NULL;
    t->pos = t->end = NULL;
}

void vh_chunk_release(struct vh_tls *t)
{
    struct vh_chunk_header *c = t->chunk;
    retire(t);
    t->chunk = NULL;
    t->pos = t->end = NULL;
    if (!c || !vh_cap.hdr)
        return;
    uint64_t now = vh_now();       /* not before any record in the chunk */
    vh_lock(&chunk_lock);
    if (nfree < FREE_MAX && vh_cap.chunk_size - c->used > 4096)
        free_chunks[nfree++] = (struct free_chunk){ c->index, now };
    vh_unlock(&chunk_lock);
}

void vh_capture_disable(const char *why, int err)
{
    struct vh_capture_header *h = vh_cap.hdr;
    if (!h)
        return;
    uint32_t old = __atomic_fetch_or(&h->flags, VH_HDR_DISABLED, __ATOMIC_ACQ_REL);
    int expected = VH_MODE_ON;
    __atomic_compare_exchange_n(&vh_mode, &expected, VH_MODE_DROP, 0, __ATOMIC_ACQ_REL,
                                __ATOMIC_RELAXED);
    expected = VH_MODE_INIT;
    __atomic_compare_exchange_n(&vh_mode, &expected, VH_MODE_DROP, 0, __ATOMIC_ACQ_REL,
                                __ATOMIC_RELAXED);
    if (!(old & VH_HDR_DISABLED))
        vh_log("%s (%s): recording stopped, later events are only counted as dropped in %s",
               why, vh_errname(err), display_path);
}

/* ---- end and fork ------------------------------------------------------------ */
void vh_capture_end(void)
{
    struct vh_tls *t = &vh_tls;
    struct vh_capture_header *h = vh_cap.hdr;
    if (!h || (__atomic_load_n(&h->flags, __ATOMIC_ACQUIRE) & VH_HDR_ENDED))
        return;
    if (vh_handover_empty()) {     /* a fork child that recorded nothing */
        __atomic_fetch_or(&h->flags, VH_HDR_ENDED | VH_HDR_DISABLED, __ATOMIC_RELEASE);
        unlink(vh_cap.path);
        return;
    }
    vh_rss_sample(t);              /* a last RSS sample */
    uint64_t now = vh_now();
    /* exact, for a coarse-clock run that fit in a tick or two */
    __atomic_store_n(&h->exact_end, vh_mono_ns() - vh_cap.start_mono, __ATOMIC_RELEASE);
    vh_record_time(t, VH_REC_END, 0, 0, now);
    __atomic_store_n(&h->end_time, now, __ATOMIC_RELEASE);
    __atomic_store_n(&h->last_time, now, __ATOMIC_RELEASE);
    if (!(__atomic_load_n(&h->flags, __ATOMIC_RELAXED) & VH_HDR_DISABLED))
        __atomic_fetch_or(&h->flags, VH_HDR_ENDED, __ATOMIC_RELEASE);
    else
        __atomic_fetch_or(&h->flags, VH_HDR_EXITED, __ATOMIC_RELEASE);
    /* Give back the space taken ahead of need. Claimed chunks stay; a claim
     * after this (allocations after exit started) grows the file again. */
    vh_lock(&chunk_lock);
    uint64_t keep = VH_HEADER_SIZE + h->chunks_claimed * (uint64_t)vh_cap.chunk_size;
    if (keep < vh_cap.mapped) {
        int fd = capture_fd();
        if (fd >= 0 && ftruncate(fd, (off_t)keep) == 0)
            vh_cap.mapped = keep;
        if (fd >= 0)
            vh_sys_close(fd);
    }
    vh_unlock(&chunk_lock);
    if (!vh_opt.quiet) {
        uint64_t lost = __atomic_load_n(&h->dropped_events, __ATOMIC_RELAXED);
        if (lost)
            vh_say("capture written to %s (%llu events dropped)", display_path,
                   (unsigned long long)lost);
        else
            vh_say("capture written to %s", display_path);
    }
}

void vh_capture_fork_prepare(void)
{
    vh_lock(&chunk_lock);
}

void vh_capture_fork_parent(void)
{
    vh_unlock(&chunk_lock);
}

/* In the child: drop the parent's capture from our address space (the child
 * must never write into it), then start the child's own. */
void vh_capture_fork_child(void)
{
    struct vh_capture_header parent = { 0 };
    chunk_lock = 0;
    nfree = 0;
    resident = 0;
    if (vh_cap.hdr) {
        parent.pid = vh_cap.hdr->pid;
        parent.start_realtime_ns = vh_cap.hdr->start_realtime_ns;
    }
    if (vh_cap.base)
        vh_sys_mmap(vh_cap.base, vh_cap.reserved, PROT_NONE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    vh_cap.hdr = NULL;
    vh_cap.mapped = 0;
    vh_capture_create(1, &parent);
}

/* ---- exec ------------------------------------------------------------------------
 * execve replaces the image, which starts a capture of its own if it loads
 * the shim (a static program, a set-ID one or an environment without
 * LD_PRELOAD does not). So the capture says what it exec'd, marked before
 * the call (after it nobody is left to) with the path made absolute, and
 * unmarked if the call failed: `record` can then name a program that ran
 * unrecorded. Only this process's own capture: a vfork child shares its
 * parent's, and a child of a raw fork that has not made its own yet still
 * maps its parent's. */
static int exec_owner(void)
{
    return vh_cap.hdr && !vh_tls.vforked && (pid_t)syscall(SYS_getpid) == vh_cap.pid;
}

void vh_capture_exec(const char *path)
{
    if (!path || !exec_owner())
        return;
    char *out = vh_cap.hdr->exec_path;
    while (path[0] == '.' && path[1] == '/')
        path += 2;                 /* "./prog": the directory says it */
    size_t cap = sizeof vh_cap.hdr->exec_path, n = 0;
    if (path[0] != '/' && getcwd(out, cap - 1)) {  /* a buffer: no malloc */
        n = strlen(out);
        if (n && out[n - 1] != '/')
            out[n++] = '/';
    }
    n = append(out, n, cap, path);
    out[n] = '\0';
    __atomic_fetch_or(&vh_cap.hdr->flags, VH_HDR_EXEC, __ATOMIC_RELEASE);
}

void vh_capture_exec_failed(void)
{
    if (exec_owner())
        __atomic_fetch_and(&vh_cap.hdr->flags, ~(uint32_t)VH_HDR_EXEC, __ATOMIC_RELEASE);
}

/* ---- records ------------------------------------------------------------------ */
/* ALLOC / RESIZE / FREE are encoded by internal.h (compact records). */
#define put_alloc vh_put_alloc
#define put_free vh_put_free

void vh_record_alloc(struct vh_tls *t, uint32_t type, uint16_t heap, unsigned func,
                     unsigned flags, uint64_t addr, uint64_t size, uint64_t usable,
                     uint32_t stack, uint16_t tag, uint64_t time)
{
    put_alloc(t, (uint8_t)type, heap, func, flags, addr, size, usable, stack, tag, time);
}

void vh_record_free(struct vh_tls *t, uint16_t heap, unsigned func, unsigned flags,
                    uint64_t addr, uint64_t time)
{
    put_free(t, heap, func, flags, addr, time);
}

void vh_record_time(struct vh_tls *t, uint8_t type, uint16_t a, uint32_t b, uint64_t time)
{
    struct vh_rec_time *r = vh_rec_begin(t, sizeof *r, time);
    if (!r)
        return;
    r->h = (struct vh_rec_hdr){ .type = type, .a = a, .b = b };
    r->time = time;
    vh_rec_commit(t, sizeof *r);
}

void vh_record_value(struct vh_tls *t, uint8_t type, uint64_t value, uint64_t time)
{
    struct vh_rec_value *r = vh_rec_begin(t, sizeof *r, time);
    if (!r)
        return;
    r->h = (struct vh_rec_hdr){ .type = type };
    r->time = time;
    r->value = value;
    vh_rec_commit(t, sizeof *r);
}

/* ---- RSS --------------------------------------------------------------------- */
/* /proc/self/statm is opened for each sample and closed at once: a
 * descriptor kept would be one the program cannot open (above). */
static int read_rss(uint64_t *bytes)
{
    int fd = vh_sys_open("/proc/self/statm", O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    char buf[128];
    ssize_t n = vh_sys_pread(fd, buf, sizeof buf - 1, 0);
    vh_sys_close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    const char *p = buf;
    while (*p && *p != ' ')        /* field 1: size; field 2: resident */
        p++;
    while (*p == ' ')
        p++;
    uint64_t pages = 0;
    for (; *p >= '0' && *p <= '9'; p++)
        pages = pages * 10 + (uint64_t)(*p - '0');
    *bytes = pages * (uint64_t)page_size;
    /* The program's RSS, not ours: leave out the capture pages mapped now. */
    uint64_t ours = vh_capture_resident();
    *bytes = *bytes > ours ? *bytes - ours : 0;
    return 0;
}

static uint64_t rss_written;       /* the last RSS record's bytes */

/* An RSS record; from the periodic tick under sampling only when RSS moved
 * by the sample rate or more since the last one: the sampled numbers beside
 * it resolve no finer, and a record a tick was 22,908 records (550 KB, 143
 * of them kept so) in a sampled boot of Vere's serf. The header's liveness
 * time moves either way. */
static void rss_sample(struct vh_tls *t, int always)
{
    uint64_t bytes;
    if (read_rss(&bytes) < 0)
        return;
    uint64_t now = vh_now(), last = __atomic_load_n(&rss_written, __ATOMIC_RELAXED);
    if (always || !vh_sample_rate ||
        (bytes > last ? bytes - last : last - bytes) >= vh_sample_rate) {
        __atomic_store_n(&rss_written, bytes, __ATOMIC_RELAXED);
        vh_record_value(t, VH_REC_RSS, bytes, now);
    }
    if (vh_cap.hdr)
        __atomic_store_n(&vh_cap.hdr->last_time, now, __ATOMIC_RELAXED);
}

void vh_rss_sample(struct vh_tls *t)
{
    rss_sample(t, 1);
}

void vh_rss_sample_changed(struct vh_tls *t)
{
    rss_sample(t, 0);
}

/* A variable-size struct record: `fixed` bytes of struct (header with
 * type, length in words and `b`; `time` at offset 8), then `len` bytes of
 * body (text gets its NUL from the zeroing), padded to 8. The caller fills
 * the rest and commits; NULL (counted as dropped) when not writable. */
void *vh_rec_text(struct vh_tls *t, uint8_t type, uint32_t b, size_t fixed, const void *body,
                  size_t len, uint64_t time)
{
    size_t size = (fixed + len + 1 + 7) & ~(size_t)7;
    char *r = vh_rec_begin(t, size, time);
    if (!r) {
        vh_dropped();
        return NULL;
    }
    memset(r, 0, size);
    if (len)                       /* body NULL: a label never given */
        memcpy(r + fixed, body, len);
    *(struct vh_rec_hdr *)(void *)r =
        (struct vh_rec_hdr){ .type = type, .a = (uint16_t)(size / 8), .b = b };
    ((struct vh_rec_time *)(void *)r)->time = time;
    return r;
}

/* A MARK or TAG record: its label, whole. */
void vh_record_label(struct vh_tls *t, uint8_t type, uint32_t b, const char *text, size_t len,
                     uint64_t time)
{
    struct vh_rec_label *r = vh_rec_text(t, type, b, sizeof *r, text, len, time);
    if (r)
        vh_rec_commit(t, (size_t)r->h.a * 8);
}
