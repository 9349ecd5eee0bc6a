/* test_vheap_h.c — the header-only client preload/vheap.h in both modes:
 * not profiled (the lookup finds nothing: every call is a no-op and
 * vheap_heap_create returns 0) and profiled (a fake vheap_api_v1 table here
 * records each call). The lookup goes through VHEAP_DLSYM, pointed at a fake
 * dlsym that counts lookups. The header caches the answer in a static, so
 * each scenario runs in a fresh fork of a process that never called the API. */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

static void *fake_dlsym(void *handle, const char *name);
#define VHEAP_DLSYM fake_dlsym
#include "preload/vheap.h"

/* ---- the fake profiler --------------------------------------------------- */
static struct vheap_api table;       /* what fake_dlsym hands out           */
static int present;                  /* 0: dlsym finds nothing              */
static int lookups, bad_lookups;

struct call {
    char fn[16];
    int heap, parent;
    const void *p, *q;
    size_t size, usable;
    char text[32];
};
#define MAX_CALLS 4096
static struct call calls[MAX_CALLS];
static int ncalls;                   /* atomic: threads record too          */

static void *fake_dlsym(void *handle, const char *name)
{
    __atomic_fetch_add(&lookups, 1, __ATOMIC_RELAXED);
    if (handle != RTLD_DEFAULT || strcmp(name, "vheap_api_v1"))
        __atomic_fetch_add(&bad_lookups, 1, __ATOMIC_RELAXED);
    return present ? &table : NULL;
}

static struct call *rec(const char *fn)
{
    int i = __atomic_fetch_add(&ncalls, 1, __ATOMIC_RELAXED);
    if (i >= MAX_CALLS)
        _exit(3);
    memset(&calls[i], 0, sizeof calls[i]);
    snprintf(calls[i].fn, sizeof calls[i].fn, "%s", fn);
    return &calls[i];
}

static int f_heap_create(const char *name, int parent, void *base, size_t size)
{
    struct call *c = rec("heap_create");
    snprintf(c->text, sizeof c->text, "%s", name);
    c->parent = parent;
    c->p = base;
    c->size = size;
    return 40 + ncalls;              /* some id the caller must pass back */
}

static void f_heap_destroy(int heap)
{
    rec("heap_destroy")->heap = heap;
}

static void f_alloc(int heap, const void *p, size_t size, size_t usable)
{
    struct call *c = rec("alloc");
    c->heap = heap;
    c->p = p;
    c->size = size;
    c->usable = usable;
}

static void f_free(int heap, const void *p)
{
    struct call *c = rec("free");
    c->heap = heap;
    c->p = p;
}

static void f_realloc(int heap, const void *old, const void *p, size_t size, size_t usable)
{
    struct call *c = rec("realloc");
    c->heap = heap;
    c->p = old;
    c->q = p;
    c->size = size;
    c->usable = usable;
}

static void f_move(int heap, const void *from, const void *to)
{
    struct call *c = rec("move");
    c->heap = heap;
    c->p = from;
    c->q = to;
}

static void f_mark(const char *label)
{
    snprintf(rec("mark")->text, sizeof calls[0].text, "%s", label);
}

static void f_tag_push(const char *label)
{
    snprintf(rec("tag_push")->text, sizeof calls[0].text, "%s", label);
}

static void f_tag_pop(void)
{
    rec("tag_pop");
}

static void f_range(int heap, unsigned op, const void *from, const void *to, size_t len)
{
    struct call *c = rec(op ? "free_range" : "move_range");
    c->heap = heap;
    c->p = from;
    c->q = to;
    c->size = len;
}

static void f_region(int heap, unsigned id, unsigned kind, const void *base, size_t size)
{
    struct call *c = rec("region");
    c->heap = heap;
    c->parent = (int)id;
    c->usable = kind;
    c->p = base;
    c->size = size;
}

static void f_tag_push2(const char *first, const char *second)
{
    snprintf(rec("tag_push2")->text, sizeof calls[0].text, "%s|%s", first, second);
}

static int f_tag_depth(void)
{
    rec("tag_depth");
    return 7;
}

static void f_tag_unwind(int depth)
{
    rec("tag_unwind")->heap = depth;
}

static void f_own_begin(int heap, const char *label)
{
    struct call *c = rec("own_begin");
    c->heap = heap;
    snprintf(c->text, sizeof c->text, "%s", label);
}

static void f_own_push(const char *label)
{
    snprintf(rec("own_push")->text, sizeof calls[0].text, "%s", label);
}

static void f_own_pop(void)
{
    rec("own_pop");
}

static void f_owned(const void *p, size_t bytes)
{
    struct call *c = rec("owned");
    c->p = p;
    c->size = bytes;
}

static void f_own_end(void)
{
    rec("own_end");
}

static void table_v1(void)
{
    table = (struct vheap_api){
        .size = sizeof table, .version = 1,
        .heap_create = f_heap_create, .heap_destroy = f_heap_destroy,
        .block_alloc = f_alloc, .block_free = f_free, .block_realloc = f_realloc,
        .block_move = f_move, .mark = f_mark, .tag_push = f_tag_push, .tag_pop = f_tag_pop,
        .range = f_range, .region = f_region, .tag_push2 = f_tag_push2,
        .tag_depth = f_tag_depth, .tag_unwind = f_tag_unwind,
        .own_begin = f_own_begin, .own_push = f_own_push, .own_pop = f_own_pop,
        .owned = f_owned, .own_end = f_own_end,
    };
}

/* ---- running a scenario in a fresh child ---------------------------------- */
#define CHECK(c)                                                              \
    do {                                                                      \
        if (!(c)) {                                                           \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
            _exit(1);                                                         \
        }                                                                     \
    } while (0)

static void run_child(void (*scenario)(void))
{
    int st;
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        scenario();
        _exit(0);
    }
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

/* Every API function once, with distinct arguments; returns the heap id. */
static char region[256];

static int call_everything(void)
{
    int h = vheap_heap_create("loom", 3, region, sizeof region);
    vheap_alloc(h, region + 16, 10, 16);
    vheap_realloc(h, region + 16, region + 32, 20, 32);
    vheap_move(h, region + 32, region + 64);
    vheap_free(h, region + 64);
    vheap_mark("event 1");
    vheap_tag_push("jet:add");
    vheap_tag_pop();
    vheap_heap_destroy(h);
    return h;
}

/* ---- not profiled -------------------------------------------------------------- */
static void absent_scenario(void)
{
    present = 0;
    CHECK(vheap_enabled() == 0);
    for (int i = 0; i < 100; i++)
        CHECK(call_everything() == 0);
    CHECK(ncalls == 0);
    CHECK(lookups == 1);             /* the answer is cached: one lookup */
    CHECK(bad_lookups == 0);
}

static void test_absent(void **state)
{
    (void)state;
    run_child(absent_scenario);
}

/* A table from an older or broken profiler is treated as absent. */
static void old_table_scenario(void)
{
    table_v1();
    table.size = (uint32_t)offsetof(struct vheap_api, tag_pop); /* too short */
    present = 1;
    CHECK(call_everything() == 0);
    CHECK(vheap_enabled() == 0);
    CHECK(ncalls == 0);
    CHECK(lookups == 1);
}

static void version0_scenario(void)
{
    table_v1();
    table.version = 0;
    present = 1;
    CHECK(call_everything() == 0);
    CHECK(ncalls == 0);
}

static void test_bad_tables(void **state)
{
    (void)state;
    run_child(old_table_scenario);
    run_child(version0_scenario);
}

/* ---- profiled --------------------------------------------------------------------- */
static void present_scenario(void)
{
    table_v1();
    present = 1;
    CHECK(vheap_enabled() == 1);
    int h = call_everything();
    CHECK(h == 41);                  /* what f_heap_create returned */
    CHECK(ncalls == 9);
    CHECK(!strcmp(calls[0].fn, "heap_create") && !strcmp(calls[0].text, "loom") &&
          calls[0].parent == 3 && calls[0].p == region && calls[0].size == sizeof region);
    CHECK(!strcmp(calls[1].fn, "alloc") && calls[1].heap == h && calls[1].p == region + 16 &&
          calls[1].size == 10 && calls[1].usable == 16);
    CHECK(!strcmp(calls[2].fn, "realloc") && calls[2].heap == h && calls[2].p == region + 16 &&
          calls[2].q == region + 32 && calls[2].size == 20 && calls[2].usable == 32);
    CHECK(!strcmp(calls[3].fn, "move") && calls[3].heap == h && calls[3].p == region + 32 &&
          calls[3].q == region + 64);
    CHECK(!strcmp(calls[4].fn, "free") && calls[4].heap == h && calls[4].p == region + 64);
    CHECK(!strcmp(calls[5].fn, "mark") && !strcmp(calls[5].text, "event 1"));
    CHECK(!strcmp(calls[6].fn, "tag_push") && !strcmp(calls[6].text, "jet:add"));
    CHECK(!strcmp(calls[7].fn, "tag_pop"));
    CHECK(!strcmp(calls[8].fn, "heap_destroy") && calls[8].heap == h);
    CHECK(lookups == 1);
    CHECK(bad_lookups == 0);
}

static void test_present(void **state)
{
    (void)state;
    run_child(present_scenario);
}

/* A later, longer table (version 2 appends members) works with this header. */
static void newer_table_scenario(void)
{
    static struct { struct vheap_api v1; void (*later)(void); } big;
    table_v1();
    big.v1 = table;
    big.v1.size = sizeof big;
    big.v1.version = 2;
    table = big.v1;
    present = 1;
    CHECK(call_everything() > 0);
    CHECK(ncalls == 9);
}

static void test_newer_table(void **state)
{
    (void)state;
    run_child(newer_table_scenario);
}

/* The members appended after version 1: called with their arguments by a
 * profiler that has them; nothing (depth 0) with one whose table ends at
 * version 1's members. */
static int call_appended(void)
{
    vheap_move_range(5, region, region + 128, 64);
    vheap_free_range(5, region + 64, 32);
    vheap_region(5, 2, VHEAP_REGION_UNUSED, region + 8, 100);
    vheap_tag_push2("add", "$");
    int d = vheap_tag_depth();
    vheap_tag_unwind(3);
    return d;
}

static void appended_scenario(void)
{
    table_v1();
    present = 1;
    CHECK(call_appended() == 7);
    CHECK(ncalls == 6);
    CHECK(!strcmp(calls[0].fn, "move_range") && calls[0].heap == 5 && calls[0].p == region &&
          calls[0].q == region + 128 && calls[0].size == 64);
    CHECK(!strcmp(calls[1].fn, "free_range") && calls[1].p == region + 64 && !calls[1].q &&
          calls[1].size == 32);
    CHECK(!strcmp(calls[2].fn, "region") && calls[2].parent == 2 &&
          calls[2].usable == VHEAP_REGION_UNUSED && calls[2].p == region + 8 &&
          calls[2].size == 100);
    CHECK(!strcmp(calls[3].fn, "tag_push2") && !strcmp(calls[3].text, "add|$"));
    CHECK(!strcmp(calls[4].fn, "tag_depth"));
    CHECK(!strcmp(calls[5].fn, "tag_unwind") && calls[5].heap == 3);
}

static void v1_only_scenario(void)
{
    table_v1();
    table.size = VHEAP_API_V1_SIZE;
    present = 1;
    CHECK(vheap_enabled() == 1);
    CHECK(call_appended() == 0);
    CHECK(ncalls == 0);
}

/* Ownership: each call reaches the profiler with its arguments; a
 * profiler whose table ends before the ownership members gets none. */
static void call_owners(void)
{
    vheap_own_begin(4, "grab");
    vheap_own_push("ames");
    vheap_owned(region + 16, 48);
    vheap_owned(NULL, 7);
    vheap_own_pop();
    vheap_own_end();
}

static void owners_scenario(void)
{
    table_v1();
    present = 1;
    call_owners();
    CHECK(ncalls == 6);
    CHECK(!strcmp(calls[0].fn, "own_begin") && calls[0].heap == 4 &&
          !strcmp(calls[0].text, "grab"));
    CHECK(!strcmp(calls[1].fn, "own_push") && !strcmp(calls[1].text, "ames"));
    CHECK(!strcmp(calls[2].fn, "owned") && calls[2].p == region + 16 && calls[2].size == 48);
    CHECK(!strcmp(calls[3].fn, "owned") && !calls[3].p && calls[3].size == 7);
    CHECK(!strcmp(calls[4].fn, "own_pop") && !strcmp(calls[5].fn, "own_end"));
}

static void owners_absent_scenario(void)
{
    table_v1();
    table.size = (uint32_t)offsetof(struct vheap_api, own_begin);
    present = 1;
    call_owners();
    CHECK(ncalls == 0);
}

static void test_appended(void **state)
{
    (void)state;
    run_child(appended_scenario);
    run_child(v1_only_scenario);
    run_child(owners_scenario);
    run_child(owners_absent_scenario);
}

/* Threads racing on the first call: each may look up (at most once), all
 * calls arrive. */
#define THREADS 8
#define PER_THREAD 200
static pthread_barrier_t barrier;

static void *racer(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&barrier);
    for (int i = 0; i < PER_THREAD; i++)
        vheap_alloc(1, region + i, 1, 1);
    return NULL;
}

static void threads_scenario(void)
{
    pthread_t t[THREADS];
    table_v1();
    present = 1;
    pthread_barrier_init(&barrier, NULL, THREADS);
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_create(&t[i], NULL, racer, NULL) == 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    CHECK(ncalls == THREADS * PER_THREAD);
    CHECK(lookups >= 1 && lookups <= THREADS);
    int before = lookups;
    vheap_free(1, region);
    CHECK(lookups == before);
}

static void test_threads(void **state)
{
    (void)state;
    run_child(threads_scenario);
}

/* After the start-up lookup, the API works from a signal handler and costs
 * no further lookups. */
static void on_usr1(int sig)
{
    (void)sig;
    vheap_tag_push("sampler");
    vheap_alloc(1, region, 8, 8);
    vheap_tag_pop();
}

static void signal_scenario(void)
{
    table_v1();
    present = 1;
    CHECK(vheap_enabled() == 1);
    signal(SIGUSR1, on_usr1);
    for (int i = 0; i < 10; i++)
        raise(SIGUSR1);
    CHECK(ncalls == 30);
    CHECK(!strcmp(calls[29].fn, "tag_pop") && !strcmp(calls[28].fn, "alloc"));
    CHECK(lookups == 1);
}

static void test_signal(void **state)
{
    (void)state;
    run_child(signal_scenario);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_absent),
        cmocka_unit_test(test_bad_tables),
        cmocka_unit_test(test_present),
        cmocka_unit_test(test_newer_table),
        cmocka_unit_test(test_appended),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_signal),
    };
    return cmocka_run_group_tests_name("vheap.h", tests, NULL, NULL);
}
