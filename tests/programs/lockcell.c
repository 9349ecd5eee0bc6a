/* lockcell — the program half of the lock matrix (lock_matrix.sh): after
 * liblockcell.so's constructor made the first allocation inside the cell
 * named by $VH_CELL, it takes every one of those glibc locks again (a lock
 * the shim left held or corrupted hangs here) and prints what each call
 * returned, so that the run under the shim can be compared with the bare
 * one line for line. `lockcell --list` prints the cells. */
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
#include <sys/wait.h>
#include <unistd.h>

#include "tests/programs/liblockcell.h"

static void nothing(void) {}
static void once_body(void) {}

/* The thread allocates first: a thread whose first allocation is inside
 * pthread_getattr_np is liblockcell's cell, not a re-entry. */
static void *thread_attrs(void *arg)
{
    pthread_attr_t a;
    size_t size = 0;
    void *volatile first = malloc(16);
    free(first);
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
        pthread_attr_getstacksize(&a, &size);
        pthread_attr_destroy(&a);
    }
    *(int *)arg = size > 0;
    return NULL;
}

/* The default attributes (pthread_attr_* cells left an affinity in them)
 * and pthread_getattr_np, in a new thread and in this one. */
static void threads_again(void)
{
    pthread_attr_t a;
    pthread_t th;
    int ok = 0;
    if (pthread_getattr_default_np(&a) == 0)
        pthread_attr_destroy(&a);
    if (pthread_create(&th, NULL, thread_attrs, &ok) == 0)
        pthread_join(th, NULL);
    printf("new thread's pthread_getattr_np: %s\n", ok ? "ok" : "failed");
    thread_attrs(&ok);
    printf("main thread's pthread_getattr_np: %s\n", ok ? "ok" : "failed");
}

/* fork runs the atfork handlers under the atfork lock. */
static void fork_again(void)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        _exit(7);
    int status = 0;
    if (pid > 0)
        waitpid(pid, &status, 0);
    printf("fork: child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

static void stdio_again(void)
{
    if (lc_state.file) {
        fprintf(lc_state.file, "%d\n", 2);
        printf("constructor's FILE closed: %d\n", fclose(lc_state.file));
    }
    FILE *f = fopen("/dev/null", "w");
    printf("fopen, fprintf, fclose: %d\n", f ? fprintf(f, "x\n") + fclose(f) : -1);
}

static void dl_again(void)
{
    Dl_info info;
    void *h = NULL;
    if (dladdr((void *)lc_list, &info) && info.dli_fname) {
        char path[4096];
        const char *slash = strrchr(info.dli_fname, '/');
        snprintf(path, sizeof path, "%.*sliblockctor.so",
                 slash ? (int)(slash - info.dli_fname + 1) : 0, info.dli_fname);
        h = dlopen(path, RTLD_NOW);
    }
    printf("dlopen liblockctor.so: %s (constructor's handle: %s)\n", h ? "ok" : dlerror(),
           lc_state.ctor_lib ? "same" : "none");
    if (lc_state.ctor_lib && h != lc_state.ctor_lib)
        printf("dlopen returned another handle\n");
    if (h)
        dlclose(h);
    printf("failed dlopen's dlerror: %s\n",
           dlopen("/nonexistent/again.so", RTLD_NOW) ? "(loaded?)" : dlerror());
}

/* The cxx_dlerror cell: libstdc++ loaded after start, a failed dlopen, then
 * the process's first C++ operator call (its own new, found before the
 * failure; under the shim the shim's) — which resolves the real operators
 * lazily — and only then dlerror(): the message must be the program's. */
static void cxx_dlerror(void)
{
    void *cxx = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL);
    void *(*op_new)(size_t) = cxx ? (void *(*)(size_t))dlsym(RTLD_DEFAULT, "_Znwm") : NULL;
    void (*op_delete)(void *) = cxx ? (void (*)(void *))dlsym(RTLD_DEFAULT, "_ZdlPv") : NULL;
    if (!op_new || !op_delete) {
        printf("libstdc++ or its operators not found\n");
        return;
    }
    dlopen("/nonexistent/before-new.so", RTLD_NOW);
    op_delete(op_new(32));
    const char *e = dlerror();
    printf("dlerror after the first operator new: %s\n", e ? e : "(none)");
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--list") == 0) {
        lc_list();
        return 0;
    }
    /* First, before any call that could set or clear it: the message of a
     * failed dlopen in the constructor (the dlerror cell). */
    char first_error[512];
    const char *e = dlerror();
    snprintf(first_error, sizeof first_error, "%s", e ? e : "(none)");

    printf("cell: %s\n", lc_state.cell ? lc_state.cell : "(unknown)");
    printf("pending dlerror: %s\n", first_error);
    printf("thread's dlerror: %s\n", lc_state.thread_error[0] ? lc_state.thread_error : "(none)");
    if (lc_state.cell && strcmp(lc_state.cell, "cxx_dlerror") == 0)
        cxx_dlerror();
    /* strerror reads the message catalogue under _nl_state_lock (read),
     * bindtextdomain takes it for writing: the reproduction. */
    printf("strerror(1): %s\n", strerror(1));
    printf("bindtextdomain: %s\n", bindtextdomain("vh_cell_b", "/nonexistent/b"));
    printf("textdomain: %s\n", textdomain("vh_cell_b"));
    printf("textdomain: %s\n", textdomain("messages"));
    printf("gettext: %s\n", gettext("vh_cell untranslated"));
    printf("setlocale: %s\n", setlocale(LC_ALL, "C.UTF-8") ? "C.UTF-8" : "(failed)");
    printf("setlocale: %s\n", setlocale(LC_ALL, "C"));
    struct passwd *pw = getpwnam("root");
    printf("getpwnam root: uid %d\n", pw ? (int)pw->pw_uid : -1);
    iconv_t cd = iconv_open("UTF-16", "UTF-8");
    printf("iconv_open: %s\n", cd == (iconv_t)-1 ? "failed" : "ok");
    if (cd != (iconv_t)-1)
        iconv_close(cd);
    if (lc_state.cd != (iconv_t)-1)
        printf("constructor's iconv closed: %d\n", iconv_close(lc_state.cd));
    stdio_again();
    printf("atexit: %d\n", atexit(nothing));
    printf("pthread_atfork: %d\n", pthread_atfork(NULL, NULL, nothing));
    fork_again();
    printf("pthread_once (constructor's): %d, block %s\n", pthread_once(&lc_state.once, once_body),
           lc_state.once_block ? "allocated" : "none");
    pthread_once_t once = PTHREAD_ONCE_INIT;
    printf("pthread_once (new): %d\n", pthread_once(&once, once_body));
    threads_again();
    dl_again();
    free(lc_state.once_block);
    printf("done\n");
    return 3;                      /* an exit status the comparison can see */
}
