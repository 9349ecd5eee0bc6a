/* start_stop — recording switched from inside the program, like bytehound's
 * start-stop tests: blocks of a size of their own in each phase, so the
 * capture can be checked phase by phase. Recording is on at start:
 *   stop (vheap_stop), mark "before", 10 x 1001 B   not recorded (the
 *                                         mark is)
 *   start (vheap_start), 7 x 2002 B       recorded, then mark "inside"
 *   stop, 13 x 3003 B                     not recorded
 *   SIGUSR2 (VHEAP_SIGNAL toggles), 5 x 4004 B   recorded
 *   SIGUSR2 again, 11 x 5005 B            not recorded
 * With `handler` the program installs its own SIGUSR2 handler first and
 * prints how often it ran (2: the toggle does not take the signal from it);
 * with `oneshot` the handler is SA_RESETHAND (runs once, and the signal's
 * default action, to kill, must not come back while it is the toggle).
 * Prints what vheap_recording() said after each switch. Blocks are kept to
 * the end, so the capture's allocations are the program's calls. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preload/vheap.h"

static volatile sig_atomic_t handled;

static void on_usr2(int sig)
{
    (void)sig;
    handled++;
}

static void phase(size_t n, size_t size)
{
    for (size_t i = 0; i < n; i++) {
        char *p = malloc(size);
        if (!p)
            abort();
        p[0] = (char)i;            /* kept: the blocks live to the end */
    }
}

int main(int argc, char **argv)
{
    int own = argc > 1 && !strcmp(argv[1], "handler");
    int oneshot = argc > 1 && !strcmp(argv[1], "oneshot");
    int sig = argc > 2 && !strcmp(argv[2], "nosignal") ? 0 : SIGUSR2;
    int on[5];

    if (own)
        signal(SIGUSR2, on_usr2);
    if (oneshot) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_usr2;
        sa.sa_flags = SA_RESETHAND;
        sigaction(SIGUSR2, &sa, NULL);
    }
    vheap_stop();
    on[0] = vheap_recording();
    vheap_mark("before");          /* paused: recorded all the same */
    phase(10, 1001);
    vheap_start();
    on[1] = vheap_recording();
    phase(7, 2002);
    vheap_mark("inside");
    vheap_stop();
    on[2] = vheap_recording();
    phase(13, 3003);
    if (sig)
        raise(sig);
    on[3] = vheap_recording();
    phase(5, 4004);
    if (sig)
        raise(sig);
    on[4] = vheap_recording();
    phase(11, 5005);
    printf("recording %d %d %d %d %d handled=%d\n", on[0], on[1], on[2], on[3], on[4],
           (int)handled);
    return 0;
}
