/* tp_signal.h — the signal set-up the signal test programs share: installing
 * a handler, and a timer that sends its signal to the calling thread alone
 * (so that each worker is interrupted in its own loop). Include after
 * testprog.h (TP_CHECK; _GNU_SOURCE for gettid). */
#ifndef VHEAP_TP_SIGNAL_H
#define VHEAP_TP_SIGNAL_H

#include <signal.h>
#include <time.h>

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid   /* glibc before 2.35 names it so */
#endif

/* sigaction(SIG) with FN as a plain handler, SA_* FLAGS, an empty mask. */
static inline void tp_handle(int sig, void (*fn)(int), int flags)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = fn;
    sa.sa_flags = flags;
    sigemptyset(&sa.sa_mask);
    TP_CHECK(sigaction(sig, &sa, NULL) == 0);
}

/* The same with a three-argument handler (SA_SIGINFO is added). */
static inline void tp_handle_info(int sig, void (*fn)(int, siginfo_t *, void *), int flags)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = fn;
    sa.sa_flags = SA_SIGINFO | flags;
    sigemptyset(&sa.sa_mask);
    TP_CHECK(sigaction(sig, &sa, NULL) == 0);
}

/* A CLOCK_MONOTONIC timer that sends SIG to the calling thread every
 * PERIOD_NS (under one second), first after one period. */
static inline timer_t tp_thread_timer(int sig, long period_ns)
{
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = sig;
    sev.sigev_notify_thread_id = (pid_t)gettid();
    timer_t timer;
    TP_CHECK(timer_create(CLOCK_MONOTONIC, &sev, &timer) == 0);
    struct itimerspec its = { { 0, period_ns }, { 0, period_ns } };
    TP_CHECK(timer_settime(timer, 0, &its, NULL) == 0);
    return timer;
}

/* Ends the thread's timer: SIG is blocked in this thread first, so that no
 * handler runs after this returns (a signal already pending stays pending). */
static inline void tp_thread_timer_stop(timer_t timer, int sig)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    TP_CHECK(pthread_sigmask(SIG_BLOCK, &set, NULL) == 0);
    TP_CHECK(timer_delete(timer) == 0);
}

#endif
