/* reach.c — reachability at exit: which live blocks are lost.
 *
 * The exiting thread makes a snapshot child with a raw clone (no atfork
 * handler of the program runs, and no SIGCHLD: its exit signal is none, so
 * the program's wait() never sees it); the child scans (reach_scan.c) and
 * sends its classes down a pipe; this thread writes them as REACH records
 * and waits at most VHEAP_REACH_TIMEOUT. The program's fate is untouched:
 * its memory is only read, in the copy. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "preload/internal.h"
#include "preload/reach.h"
#include "preload/sys.h"

#define MAX_THREADS 4096
#define BATCH 4096                 /* entries a REACH record: fits a 64 KiB chunk */

/* What the child sends: this, then `blocks` entries. */
struct wire_head {
    struct vh_reach_stats st;
    uint64_t scan_ns, cpu_ns;
    uint64_t misaligned;
};

static uintptr_t other_sps[MAX_THREADS];
static struct vh_tls *registry[VH_REACH_THREADS];

void vh_reach_thread_add(struct vh_tls *t)
{
    for (size_t i = 0; i < VH_REACH_THREADS; i++) {
        struct vh_tls *none = NULL;
        if (!__atomic_load_n(&registry[i], __ATOMIC_RELAXED) &&
            __atomic_compare_exchange_n(&registry[i], &none, t, 0, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED))
            return;
    }
}

void vh_reach_thread_remove(struct vh_tls *t)
{
    for (size_t i = 0; i < VH_REACH_THREADS; i++)
        if (__atomic_load_n(&registry[i], __ATOMIC_RELAXED) == t) {
            __atomic_store_n(&registry[i], NULL, __ATOMIC_RELEASE);
            return;
        }
}

void vh_reach_fork_child(struct vh_tls *t)
{
    memset(registry, 0, sizeof registry);
    vh_reach_thread_add(t);
}

static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    syscall(SYS_clock_gettime, id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t mono_ns(void)
{
    return clock_ns(CLOCK_MONOTONIC);
}

/* ---- the other threads' stack pointers ----------------------------------------
 * A thread blocked in the kernel shows its user stack pointer in
 * /proc/self/task/TID/syscall ("nr args... sp pc"); one running shows
 * "running" and its stack is read whole. Their registers themselves are
 * in the kernel, not in the child: a pointer held only there is missed. */
static uintptr_t parse_sp(const char *s, ssize_t n)
{
    const char *fields[10];
    int nf = 0;
    for (ssize_t i = 0; i < n && nf < 10; i++)
        if ((i == 0 || s[i - 1] == ' ') && s[i] != ' ' && s[i] != '\n')
            fields[nf++] = s + i;
    if (nf < 3 || fields[nf - 2][0] != '0' || fields[nf - 2][1] != 'x')
        return 0;
    uintptr_t v = 0;
    for (const char *p = fields[nf - 2] + 2;; p++) {
        unsigned d = *p >= '0' && *p <= '9' ? (unsigned)(*p - '0')
                     : *p >= 'a' && *p <= 'f' ? (unsigned)(*p - 'a' + 10) : 16u;
        if (d == 16)
            return v;
        v = v * 16 + d;
    }
}

static uintptr_t thread_sp(const char *tid)
{
    char path[64], buf[256];
    vh_format(path, sizeof path, "/proc/self/task/%s/syscall", tid);
    int fd = vh_sys_open(path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    ssize_t n = vh_sys_read(fd, buf, sizeof buf - 1);
    vh_sys_close(fd);
    return n > 0 ? parse_sp(buf, n) : 0;
}

struct dirent64_ {
    uint64_t ino;
    int64_t off;
    unsigned short reclen;
    unsigned char type;
    char name[];
};

/* Fills other_sps; returns how many, and the threads in *threads. */
static size_t other_threads(uint32_t *threads)
{
    char buf[4096], me[16];
    size_t n = 0;
    *threads = 0;
    vh_format(me, sizeof me, "%d", (int)vh_gettid());
    int fd = vh_sys_open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    long got;
    while ((got = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
        for (long off = 0; off < got;) {
            const struct dirent64_ *d = (const void *)(buf + off);
            off += d->reclen;
            if (d->name[0] < '0' || d->name[0] > '9' || !strcmp(d->name, me))
                continue;
            ++*threads;
            uintptr_t sp = thread_sp(d->name);
            if (sp && n < MAX_THREADS)
                other_sps[n++] = sp;
        }
    }
    vh_sys_close(fd);
    return n;
}

/* ---- the child ---------------------------------------------------------------- */
static int put(int fd, const void *p, size_t len)
{
    const char *c = p;
    while (len) {
        ssize_t n = vh_sys_write(fd, c, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        c += n;
        len -= (size_t)n;
    }
    return 0;
}

static __attribute__((noreturn)) void child(int fd, const struct vh_reach_ctx *cx)
{
    /* The program's handlers are not this child's: nothing may reach them. */
    uint64_t all = ~0ull;
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, NULL, sizeof all);
    struct rlimit none = { 0, 0 };  /* a crash here is no core of the program's */
    syscall(SYS_prlimit64, 0, RLIMIT_CORE, &none, NULL);
    uint64_t t0 = mono_ns();
    struct wire_head w = { 0 };
    struct vh_reach_block *b = NULL;
    size_t n = 0;
    int rc = vh_reach_scan(cx, &w.st, &b, &n);
    w.scan_ns = mono_ns() - t0;
    w.cpu_ns = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    static uint64_t out[BATCH];
    if (rc == 0 && put(fd, &w, sizeof w) == 0) {
        for (size_t i = 0; i < n;) {
            size_t k = 0;
            for (; k < BATCH && i < n; i++)
                out[k++] = b[i].addr & VH_REACH_CLASS_MASK ? 0 : b[i].addr | b[i].state;
            if (put(fd, out, k * sizeof *out) < 0)
                break;
        }
    }
    syscall(SYS_exit_group, rc == 0 ? 0 : 1);
    __builtin_unreachable();
}

/* ---- the parent --------------------------------------------------------------- */
/* Reads len bytes before the deadline: 0, -ETIMEDOUT, or -EIO (the child
 * ended early: it ran out of memory, or was killed). */
static int take(int fd, void *p, size_t len, uint64_t deadline)
{
    char *c = p;
    while (len) {
        uint64_t now = mono_ns();
        if (now >= deadline)
            return -ETIMEDOUT;
        struct pollfd pf = { .fd = fd, .events = POLLIN };
        struct timespec ts = { (time_t)((deadline - now) / 1000000000ull),
                               (long)((deadline - now) % 1000000000ull) };
        long r = syscall(SYS_ppoll, &pf, 1, &ts, NULL, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            continue;              /* the deadline is checked above */
        ssize_t n = vh_sys_read(fd, c, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -EIO;
        c += n;
        len -= (size_t)n;
    }
    return 0;
}

static void record_batch(struct vh_tls *t, const uint64_t *e, size_t k, uint64_t now)
{
    size_t size = sizeof(struct vh_rec_reach) + k * 8;
    struct vh_rec_reach *r = vh_rec_begin(t, size, now);
    if (!r)
        return;
    r->h = (struct vh_rec_hdr){ .type = VH_REC_REACH, .a = (uint16_t)(size / 8),
                                .b = (uint32_t)k };
    r->time = now;
    memcpy(r->entry, e, k * 8);
    vh_rec_commit(t, size);
}

/* The entries from the child into REACH records; 0 or take's error. */
static int relay(struct vh_tls *t, int fd, uint64_t blocks, uint64_t deadline,
                 uint32_t *misaligned)
{
    static uint64_t in[BATCH], keep[BATCH];
    for (uint64_t done = 0; done < blocks;) {
        size_t k = blocks - done < BATCH ? (size_t)(blocks - done) : BATCH, m = 0;
        int rc = take(fd, in, k * 8, deadline);
        if (rc < 0)
            return rc;
        for (size_t i = 0; i < k; i++) {
            if (in[i])
                keep[m++] = in[i];
            else
                ++*misaligned;
        }
        record_batch(t, keep, m, vh_now());
        done += k;
    }
    return 0;
}

static void record_end(struct vh_tls *t, const struct wire_head *w, uint32_t threads,
                       uint32_t unseen, uint32_t status, uint32_t misaligned, uint8_t flags)
{
    uint64_t now = vh_now();
    struct vh_rec_reach_end *r = vh_rec_begin(t, sizeof *r, now);
    if (!r)
        return;
    *r = (struct vh_rec_reach_end){
        .h = { .type = VH_REC_REACH_END, .flags = flags, .a = sizeof *r / 8 },
        .time = now,
        .blocks = w->st.blocks,
        .root_bytes = w->st.root_bytes,
        .heap_bytes = w->st.heap_bytes,
        .unreadable_bytes = w->st.unreadable_bytes,
        .nonresident_bytes = w->st.nonresident_bytes,
        .scan_ns = w->scan_ns,
        .threads = threads,
        .threads_unseen = unseen,
        .status = status,
        .misaligned = misaligned,
        .cpu_ns = w->cpu_ns,
    };
    vh_rec_commit(t, sizeof *r);
}

/* Clones the snapshot; the registers of this thread that may hold
 * pointers are saved in this frame first, so the child reads them. */
static __attribute__((noinline)) pid_t snapshot(int wfd, struct vh_reach_ctx *cx)
{
    volatile uintptr_t here = 0;
    __builtin_unwind_init();
    cx->own_sp = (uintptr_t)&here;
    cx->time = vh_now();
    long pid = syscall(SYS_clone, 0L, 0L, 0L, 0L, 0L);
    if (pid == 0)
        child(wfd, cx);
    return (pid_t)pid;
}

/* A scan on request: the REACH that says the snapshot is taken now. */
static void record_begin(struct vh_tls *t, uint64_t now)
{
    struct vh_rec_reach *r = vh_rec_begin(t, sizeof *r, now);
    if (!r)
        return;
    r->h = (struct vh_rec_hdr){ .type = VH_REC_REACH, .flags = VH_REACH_F_BEGIN,
                                .a = (uint16_t)(sizeof *r / 8) };
    r->time = now;
    vh_rec_commit(t, sizeof *r);
}

static int scanning;               /* atomic: one scan at a time (the static
                                      buffers above are the scan's)        */

/* One scan, its records written by this thread (guard BUSY). `requested`:
 * asked for by `ctl reach` while the program runs, else at exit. */
static void scan(struct vh_tls *t, int requested)
{
    int fds[2];
    struct wire_head w = { 0 };
    uint32_t threads, misaligned = 0, status = VH_REACH_FAILED;
    struct vh_reach_ctx cx = { .sps = other_sps, .threads = registry };
    cx.nsps = other_threads(&threads);
    if (syscall(SYS_pipe2, fds, O_CLOEXEC) != 0) {
        vh_log("reachability: no pipe (%s); leaks are not classified", vh_errname(errno));
        goto out;
    }
    /* Two descriptors for the scan's length only: the shim keeps none
     * otherwise (capture.c), so the program's lowest numbers are its own
     * whenever it runs code of its own. */
    uint64_t deadline = mono_ns() + vh_opt.reach_timeout_ns;
    if (requested)
        record_begin(t, vh_now());
    pid_t pid = snapshot(fds[1], &cx);
    vh_sys_close(fds[1]);
    if (pid < 0) {
        vh_log("reachability: no snapshot (%s); leaks are not classified", vh_errname(errno));
        vh_sys_close(fds[0]);
        goto out;
    }
    int rc = take(fds[0], &w, sizeof w, deadline);
    if (rc == 0)
        rc = relay(t, fds[0], w.st.blocks, deadline, &misaligned);
    if (rc == -ETIMEDOUT) {
        vh_log("reachability: the scan took over VHEAP_REACH_TIMEOUT; stopped");
        syscall(SYS_kill, pid, SIGKILL);
    }
    vh_sys_close(fds[0]);
    int ws;
    while (syscall(SYS_wait4, pid, &ws, __WALL, NULL) < 0 && errno == EINTR)
        ;
    status = rc == 0 ? VH_REACH_DONE : rc == -ETIMEDOUT ? VH_REACH_TIMEOUT : VH_REACH_FAILED;
out:
    record_end(t, &w, threads, threads - (uint32_t)cx.nsps, status, misaligned,
               requested ? VH_REACH_F_REQUEST : 0);
}

static int scan_wanted(void)
{
    return vh_opt.reach_timeout_ns && vh_cap.hdr && !vh_cap.hdr->sample_rate &&
           !__atomic_exchange_n(&scanning, 1, __ATOMIC_ACQUIRE);
}

void vh_reach_at_exit(struct vh_tls *t)
{
    if (!scan_wanted())
        return;
    scan(t, 0);
    __atomic_store_n(&scanning, 0, __ATOMIC_RELEASE);
}

/* `ctl reach`: the same scan while the program runs. This thread waits for
 * it (at most VHEAP_REACH_TIMEOUT); the others run on, and what they do
 * meanwhile is after the snapshot. A request during another scan (the one
 * at exit on another thread) is dropped. */
void vh_reach_now(struct vh_tls *t)
{
    if (!scan_wanted())
        return;
    scan(t, 1);
    __atomic_store_n(&scanning, 0, __ATOMIC_RELEASE);
}
