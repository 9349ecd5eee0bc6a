/* state.c — the state every part of the shim reads: the thread's (vh_tls),
 * the mode word, the capture's mapping (vh_cap), the module generation,
 * and the calls that touch only them (the thread's id, its window for the
 * shim's own libc calls, its exit destructor's key). Defined here, at the
 * bottom of the shim's order (docs/hacking.md), so that every file above
 * may read them without depending on the one that drives them. */
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload/internal.h"

__thread struct vh_tls vh_tls __attribute__((tls_model("initial-exec")));
int vh_boot_mode = VH_MODE_UNINIT;
int *vh_mode_word = &vh_boot_mode;
uint64_t vh_next_rss = UINT64_MAX;
struct vh_capture vh_cap;
uint32_t vh_module_gen;

pthread_key_t vh_thread_key;
int vh_thread_key_ok;

pid_t vh_gettid(void)
{
    return (pid_t)syscall(SYS_gettid);
}

/* ---- the shim's own calls ------------------------------------------------------ */
/* Allocations inside the window are the library's that we called (dlsym,
 * pthread_getattr_np, atexit, ...) and pass through uncounted. A signal
 * handler that allocated there could not be told from them, so none runs
 * there: signals are held (microseconds at a thread's start and in a fork
 * child, the setup's duration at startup) and delivered when the window
 * closes, after `own` is down. glibc's pthread_sigmask leaves its own
 * internal signals alone. */
void vh_own_begin(struct vh_tls *t, sigset_t *saved)
{
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, saved);
    t->own++;
}

void vh_own_end(struct vh_tls *t, const sigset_t *saved)
{
    t->own--;
    pthread_sigmask(SIG_SETMASK, saved, NULL);
}

/* The thread's exit destructor (lifecycle.c's thread_exit, whose key init
 * creates) runs only for a thread that set the key: done when the thread
 * claims its first chunk (capture.c). */
void vh_thread_register(struct vh_tls *t)
{
    if (vh_thread_key_ok && pthread_setspecific(vh_thread_key, (void *)1) == 0)
        t->registered = 1;
}
