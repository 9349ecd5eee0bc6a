/* clock.c — record times: the TSC, scaled to ns, when the kernel itself
 * keeps time by the TSC; CLOCK_MONOTONIC otherwise.
 *
 * clock_gettime costs 45–55 ns a call in a loaded VM, rdtsc about 20. The
 * kernel's clocksource being "tsc" means the TSC is constant-rate and
 * synchronized across CPUs, so TSC times from different threads compare
 * correctly. The scale comes from the perf_event mmap page of a dummy event
 * (time_mult/time_shift, the kernel's own) when the kernel publishes it
 * there (cap_user_time: not in a KVM guest, whose sched_clock is kvm-clock);
 * else it is measured against CLOCK_MONOTONIC over the first CALIB_NS of the
 * capture, meanwhile times come from clock_gettime, and the switch adds
 * SWITCH_MARGIN_NS so no time after it is below one taken before it (by any
 * thread). Record times stay ns since start_monotonic_ns; the TSC times
 * drift from CLOCK_MONOTONIC by the scale's error (about 1 ppm calibrated)
 * plus NTP's correction, never out of order. Another clocksource:
 * clock_gettime throughout, as before.
 *
 * While a single thread has recorded (VHEAP_CLOCK=auto), times only need
 * to follow its program order, which the chunk already does: they come
 * from CLOCK_MONOTONIC_COARSE, the kernel's time at its last tick, read
 * from the vDSO page without rdtsc. The second thread's first event
 * switches the process to the exact clock for good, before that thread
 * takes a time: the exact clock is then set to read at least two ticks
 * past the coarse one, so that no exact time falls below a coarse time
 * taken before it, including one the first thread takes meanwhile, having
 * not yet seen the switch (its coarse time is at most the kernel's time
 * then, at most one tick past the coarse time read here). The capture
 * header tells the reader where the coarse part ends (precise_from). */
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload/internal.h"
#include "preload/lock.h"
#include "preload/sys.h"

struct vh_clock vh_clk;

/* The kernel keeps CLOCK_MONOTONIC by the TSC: then the TSC is trusted. */
static int clocksource_is_tsc(void)
{
    char buf[16] = { 0 };
    int fd = vh_sys_open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
                  O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    ssize_t n = vh_sys_read(fd, buf, sizeof buf - 1);
    vh_sys_close(fd);
    return n >= 3 && memcmp(buf, "tsc", 3) == 0 && (n == 3 || buf[3] == '\n');
}

/* The vDSO's __vdso_clock_gettime (the vDSO is not in dlsym's scope), or
 * NULL. glibc's clock_gettime reaches it through two more calls: a coarse
 * read costs 5 ns that way, 3 ns direct. */
static void *vdso_gettime(void)
{
    return vh_sym_vdso("__vdso_clock_gettime");
}

/* time_mult/time_shift from the perf mmap page; 0 if the kernel does not
 * offer user-space time (cap_user_time). */
static int perf_scale(uint32_t *mult, uint32_t *shift)
{
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_DUMMY;
    attr.disabled = 1;
    attr.exclude_kernel = 1;       /* allowed at perf_event_paranoid 2 */
    attr.exclude_hv = 1;
    int fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0)
        return 0;
    long page = sysconf(_SC_PAGESIZE);
    void *map = vh_sys_mmap(NULL, (size_t)page, PROT_READ, MAP_SHARED, fd, 0);
    vh_sys_close(fd);                     /* the mapping keeps the event alive */
    if (map == MAP_FAILED)
        return 0;
    volatile struct perf_event_mmap_page *pc = map;
    int ok = 0;
    for (int tries = 0; tries < 1000; tries++) {
        uint32_t seq = pc->lock;
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        int cap = pc->cap_user_time && !pc->cap_user_time_short;
        uint32_t m = pc->time_mult;
        uint32_t s = pc->time_shift;
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        if (pc->lock != seq || (seq & 1))
            continue;
        ok = cap && m && s < 64;
        *mult = m;
        *shift = s;
        break;
    }
    vh_sys_munmap(map, (size_t)page);
    return ok;
}

/* A (TSC, CLOCK_MONOTONIC) pair taken as close together as we can: the TSC
 * in the middle of the tightest of a few brackets. */
static void pair(uint64_t *tsc, uint64_t *mono)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 5; i++) {
        uint64_t a = vh_tsc(1);
        uint64_t m = vh_mono_ns();
        uint64_t b = vh_tsc(1);
        if (b - a < best) {
            best = b - a;
            *tsc = a + (b - a) / 2;
            *mono = m;
        }
    }
}

#define CALIB_NS 50000000ull       /* calibration window                     */
#define SWITCH_MARGIN_NS 2000u     /* >> the pair's and the scale's error    */

static int usable;                 /* the clocksource is the TSC             */
static uint32_t coarse_res;        /* CLOCK_MONOTONIC_COARSE's step, or 0    */
static int threads;                /* atomic: threads that have recorded     */
static vh_lock_t switch_lock;
static uint64_t slow_off;          /* added to CLOCK_MONOTONIC's times: the
                                      coarse clock's lead, once it gave way */
static int scale_known;            /* mult/shift valid                       */
static uint64_t cal_tsc, cal_mono; /* anchor of the calibration              */
static uint64_t cal_at = UINT64_MAX; /* atomic: CLOCK_MONOTONIC to calibrate at */
static int cal_lock;

/* 10^9 cycles must be 0.05–20 s (a 50 MHz to 20 GHz TSC). */
static int sane(uint64_t mult, uint32_t shift)
{
    uint64_t ns = (uint64_t)(((unsigned __int128)1000000000u * mult) >> shift);
    return ns >= 50000000u && ns <= 20000000000ull;
}

/* Whether the TSC is trusted, and its scale: asked of the kernel only
 * when first needed (at the start with the exact clock, else when a
 * second thread switches to it), since a run that stays on the coarse
 * clock never reads the TSC. The perf event costs about 25 us of CPU and
 * 80 us of wall time (its release waits for RCU): most of a short run's
 * start under the shim (issue 28). Once; a thread that finds it under way
 * waits for it. */
static int tsc_state;              /* atomic: 0 not asked, 1 asking, 2 known */

static void tsc_probe(void)
{
    int expected = 0;
    if (__atomic_load_n(&tsc_state, __ATOMIC_ACQUIRE) == 2)
        return;
    if (!__atomic_compare_exchange_n(&tsc_state, &expected, 1, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        while (__atomic_load_n(&tsc_state, __ATOMIC_ACQUIRE) != 2)
            __builtin_ia32_pause();
        return;
    }
    uint32_t mult = 0, shift = 0;
    usable = clocksource_is_tsc();
    if (usable && perf_scale(&mult, &shift) && sane(mult, shift)) {
        vh_clk.mult = mult;
        vh_clk.shift = shift;
        scale_known = 1;
    }
    __atomic_store_n(&tsc_state, 2, __ATOMIC_RELEASE);
}

/* The TSC anchored now, `start` being the capture's CLOCK_MONOTONIC time 0
 * (NULL: now is time 0); before the scale is known, its calibration
 * starts here. Returns the CLOCK_MONOTONIC time of the anchor. */
static uint64_t tsc_anchor(const uint64_t *start)
{
    uint64_t tsc, mono;
    pair(&tsc, &mono);
    if (scale_known) {
        vh_clk.tsc0 = tsc;
        vh_clk.base = start ? mono - *start : 0;
    } else {
        cal_tsc = tsc;
        cal_mono = mono;
        cal_lock = 0;
        __atomic_store_n(&cal_at, mono + CALIB_NS, __ATOMIC_RELAXED);
    }
    return mono;
}

void vh_clock_init(void)
{
    __atomic_store_n(&vh_clk.mode, VH_CLK_SLOW, __ATOMIC_RELAXED);
    usable = 0;
    scale_known = 0;
    __atomic_store_n(&tsc_state, 0, __ATOMIC_RELAXED);
    /* A coarse clock of 10 ms or worse would blur the time series. */
    struct timespec res;
    coarse_res = 0;
    if (vh_opt.clock == VH_CLOCK_AUTO && clock_getres(CLOCK_MONOTONIC_COARSE, &res) == 0 &&
        res.tv_sec == 0 && res.tv_nsec > 0 && res.tv_nsec < 10000000)
        coarse_res = (uint32_t)res.tv_nsec;
    vh_clk.coarse_half = coarse_res / 2;
    vh_clk.gettime = vdso_gettime();
    if (!vh_clk.gettime)
        vh_clk.gettime = clock_gettime;
}

uint64_t vh_clock_start(unsigned nthreads)
{
    int coarse = coarse_res && nthreads <= 1;
    /* a fork child's probe cannot be under way: its asker was the parent's */
    int asking = 1;
    __atomic_compare_exchange_n(&tsc_state, &asking, 0, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    __atomic_store_n(&vh_clk.mode, VH_CLK_SLOW, __ATOMIC_RELAXED);
    __atomic_store_n(&cal_at, UINT64_MAX, __ATOMIC_RELAXED);
    __atomic_store_n(&threads, (int)nthreads, __ATOMIC_RELAXED);
    __atomic_store_n(&vh_clk.last, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&slow_off, 0, __ATOMIC_RELAXED);
    switch_lock = 0;
    if (coarse) {
        __atomic_store_n(&vh_clk.mode, VH_CLK_COARSE, __ATOMIC_RELEASE);
        return vh_mono_ns();       /* the TSC waits for a second thread */
    }
    tsc_probe();
    if (!usable)
        return vh_mono_ns();
    uint64_t mono = tsc_anchor(NULL);
    if (scale_known)
        __atomic_store_n(&vh_clk.mode, VH_CLK_TSC, __ATOMIC_RELEASE);
    return mono;
}

uint32_t vh_clock_coarse_res(void)
{
    return __atomic_load_n(&vh_clk.mode, __ATOMIC_ACQUIRE) == VH_CLK_COARSE ? coarse_res : 0;
}

void vh_clock_thread(void)
{
    if (__atomic_add_fetch(&threads, 1, __ATOMIC_ACQ_REL) < 2 ||
        __atomic_load_n(&vh_clk.mode, __ATOMIC_ACQUIRE) != VH_CLK_COARSE)
        return;
    tsc_probe();                   /* outside the lock: it may wait */
    vh_lock(&switch_lock);
    if (__atomic_load_n(&vh_clk.mode, __ATOMIC_ACQUIRE) == VH_CLK_COARSE) {
        if (usable)
            tsc_anchor(&vh_cap.start_mono);
        uint64_t floor = vh_coarse_read(), from;
        uint64_t last = __atomic_load_n(&vh_clk.last, __ATOMIC_RELAXED);
        floor = (floor > last ? floor : last) + 2ull * coarse_res;
        if (__atomic_load_n(&cal_at, __ATOMIC_RELAXED) == UINT64_MAX && usable && scale_known) {
            /* The formula, anchored at the start, may run behind the
             * kernel's clock by NTP's correction since: move it up. */
            uint64_t f = vh_now_tsc();
            if (f < floor)
                vh_clk.base += floor - f;
            from = f < floor ? floor : f;
            __atomic_store_n(&vh_clk.mode, VH_CLK_TSC, __ATOMIC_RELEASE);
        } else {
            /* CLOCK_MONOTONIC, shifted up the same way; the TSC
             * calibration, if pending, takes over in vh_now_slow. */
            uint64_t m = vh_mono_ns() - vh_cap.start_mono;
            __atomic_store_n(&slow_off, m < floor ? floor - m : 0, __ATOMIC_RELAXED);
            __atomic_store_n(&vh_clk.mode, VH_CLK_SLOW, __ATOMIC_RELEASE);
            from = vh_now_slow();
        }
        if (vh_cap.hdr)
            __atomic_store_n(&vh_cap.hdr->precise_from, from, __ATOMIC_RELEASE);
    }
    vh_unlock(&switch_lock);
}

/* The scale from the TSC's progress since the capture started; the formula
 * takes over from now on. One thread does it, the others carry on with
 * clock_gettime meanwhile. */
static VH_NOINLINE void calibrate(void)
{
    if (__atomic_exchange_n(&cal_lock, 1, __ATOMIC_ACQUIRE))
        return;
    uint64_t tsc, mono;
    pair(&tsc, &mono);
    uint64_t dc = tsc - cal_tsc, dn = mono - cal_mono;
    const uint32_t shift = 32;
    if (dn >= CALIB_NS && dc > 0 && mono >= vh_cap.start_mono) {
        uint64_t mult = (uint64_t)(((unsigned __int128)dn << shift) / dc);
        __atomic_store_n(&cal_at, UINT64_MAX, __ATOMIC_RELAXED);
        if (!sane(mult, shift))
            return;                /* never again: clock_gettime it is */
        vh_clk.mult = mult;
        vh_clk.shift = shift;
        vh_clk.tsc0 = tsc;
        vh_clk.base = mono - vh_cap.start_mono + SWITCH_MARGIN_NS +
                      __atomic_load_n(&slow_off, __ATOMIC_RELAXED);
        scale_known = 1;           /* fork children start with the TSC */
        __atomic_store_n(&vh_clk.mode, VH_CLK_TSC, __ATOMIC_RELEASE);
        return;
    }
    __atomic_store_n(&cal_lock, 0, __ATOMIC_RELEASE);
}

uint64_t vh_now_slow(void)
{
    uint64_t m = vh_mono_ns();
    if (vh_unlikely(m >= __atomic_load_n(&cal_at, __ATOMIC_RELAXED))) {
        calibrate();
        if (__atomic_load_n(&vh_clk.mode, __ATOMIC_ACQUIRE) == VH_CLK_TSC)
            return vh_now_tsc();
    }
    return (m > vh_cap.start_mono ? m - vh_cap.start_mono : 0) +
           __atomic_load_n(&slow_off, __ATOMIC_RELAXED);
}
