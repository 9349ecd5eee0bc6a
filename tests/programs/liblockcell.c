/* liblockcell.c — the constructor half of the lock matrix (lock_matrix.sh):
 * linked into lockcell, it runs before libvheap.so's constructor (as
 * libgpg-error's did), so the process's first allocation — the one that
 * runs the shim's lazy init — happens inside whatever glibc call the cell
 * named in $VH_CELL makes, with that call's internal lock held. A shim whose
 * init or thread setup touches the same lock hangs here or corrupts the
 * lock, which lockcell's re-entry of every lock then turns into a hang.
 * The cells are listed in lc_cells[]; lockcell.c prints what they left. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <iconv.h>
#include <libintl.h>
#include <locale.h>
#include <pthread.h>
#include <pwd.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/programs/liblockcell.h"

struct lc_state lc_state;

static void lc_nothing(void) {}

/* atexit's first 32 entries live in a static block: the 33rd is the first
 * that allocates (calloc under __exit_funcs_lock). */
static void cell_atexit(void)
{
    for (int i = 0; i < 40; i++)
        atexit(lc_nothing);
}

/* pthread_atfork's handlers live in a dynamic array with room for 48
 * inline: the 49th allocates, under the atfork lock. */
static void cell_atfork(void)
{
    for (int i = 0; i < 50; i++)
        pthread_atfork(NULL, NULL, lc_nothing);
}

static void once_body(void)
{
    lc_state.once_block = malloc(100);   /* under the once control's claim */
}

static void cell_once(void)
{
    pthread_once(&lc_state.once, once_body);
}

static void cell_getattr(void)
{
    pthread_attr_t a;
    if (pthread_getattr_np(pthread_self(), &a) == 0)
        pthread_attr_destroy(&a);
}

/* The dlopen cell's library sits beside this one: its path from dladdr,
 * which takes ld.so's lock but allocates nothing. */
static void cell_dlopen(void)
{
    Dl_info info;
    char path[4096];
    if (!dladdr((void *)cell_dlopen, &info) || !info.dli_fname)
        return;
    const char *slash = strrchr(info.dli_fname, '/');
    size_t dir = slash ? (size_t)(slash - info.dli_fname + 1) : 0;
    if (dir + sizeof "liblockctor.so" > sizeof path)
        return;
    memcpy(path, info.dli_fname, dir);
    strcpy(path + dir, "liblockctor.so");
    lc_state.ctor_lib = dlopen(path, RTLD_NOW);
}

static void cell_stdio(void)
{
    lc_state.file = fopen("/dev/null", "w");
    if (lc_state.file)
        fprintf(lc_state.file, "%d\n", 1);   /* buffer malloc under the FILE's lock */
}

static void cell_dlerror(void)
{
    dlopen("/nonexistent/vheap-lockcell.so", RTLD_NOW);   /* its message waits for lockcell */
}

/* A new thread's first allocation inside pthread_getattr_np: a realloc of
 * the cpuset with the thread's own lock held. */
static void *thread_getattr(void *arg)
{
    cell_getattr();
    return NULL;
}

/* ... or inside the attribute calls: the affinity copies allocate, and
 * pthread_setattr_default_np copies them under the default-attr lock. */
static void *thread_attr(void *arg)
{
    pthread_attr_t a;
    cpu_set_t set;
    pthread_attr_init(&a);
    if (sched_getaffinity(0, sizeof set, &set) == 0 &&
        pthread_attr_setaffinity_np(&a, sizeof set, &set) == 0)
        pthread_setattr_default_np(&a);
    pthread_attr_destroy(&a);
    return NULL;
}

/* A new thread whose first allocation is a failed dlopen's message: it
 * reads its own dlerror() afterwards, which must be that message. */
static void *thread_dlerror(void *arg)
{
    cell_dlerror();
    const char *e = dlerror();
    snprintf(lc_state.thread_error, sizeof lc_state.thread_error, "%s", e ? e : "(none)");
    return NULL;
}

static void run_thread(void *(*fn)(void *))
{
    pthread_t th;
    if (pthread_create(&th, NULL, fn, NULL) == 0)
        pthread_join(th, NULL);
}

static void cell_bindtextdomain(void) { bindtextdomain("vh_cell_a", "/nonexistent/locale"); }
static void cell_textdomain(void) { textdomain("vh_cell_a"); }
static void cell_setlocale(void) { setlocale(LC_ALL, "C.UTF-8"); }
static void cell_getpwnam(void) { getpwnam("root"); }
static void cell_iconv(void) { lc_state.cd = iconv_open("UTF-16", "UTF-8"); }
static void cell_thread_getattr(void) { run_thread(thread_getattr); }
static void cell_thread_attr(void) { run_thread(thread_attr); }
static void cell_thread_dlerror(void) { run_thread(thread_dlerror); }

static const struct {
    const char *name;
    void (*run)(void);
} lc_cells[] = {
    { "none", NULL },
    { "bindtextdomain", cell_bindtextdomain },
    { "textdomain", cell_textdomain },
    { "setlocale", cell_setlocale },
    { "dlopen", cell_dlopen },
    { "getpwnam", cell_getpwnam },
    { "iconv_open", cell_iconv },
    { "stdio", cell_stdio },
    { "atexit", cell_atexit },
    { "pthread_atfork", cell_atfork },
    { "pthread_once", cell_once },
    { "pthread_getattr_np", cell_getattr },
    { "thread_getattr_np", cell_thread_getattr },
    { "thread_attr", cell_thread_attr },
    { "dlerror", cell_dlerror },
    { "thread_dlerror", cell_thread_dlerror },
    /* Nothing in the constructor: lockcell's main makes the first C++
     * operator call with a dlerror() message pending (the shim once
     * looked the operators up and pinned their library with dl* calls
     * there, and the program's message was gone). */
    { "cxx_dlerror", NULL },
};

/* Prints the cell names, one a line (lock_matrix.sh runs each). */
void lc_list(void)
{
    for (size_t i = 0; i < sizeof lc_cells / sizeof lc_cells[0]; i++)
        printf("%s\n", lc_cells[i].name);
}

/* getenv allocates nothing: $VH_CELL is read before the first allocation. */
__attribute__((constructor)) static void lc_first(void)
{
    const char *cell = getenv("VH_CELL");
    lc_state.once = (pthread_once_t)PTHREAD_ONCE_INIT;
    lc_state.cd = (iconv_t)-1;
    if (!cell)
        cell = "none";
    for (size_t i = 0; i < sizeof lc_cells / sizeof lc_cells[0]; i++) {
        if (strcmp(cell, lc_cells[i].name) == 0) {
            lc_state.cell = lc_cells[i].name;
            if (lc_cells[i].run)
                lc_cells[i].run();
            return;
        }
    }
}
