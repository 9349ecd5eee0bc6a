/* livecap.h — the capture of a running vheap process, named by its PID or
 * by the capture's path: what `ctl` writes requests into and `top --live`
 * reads. Refuses anything that is not the capture of a live process. */
#ifndef VHEAP_LIVECAP_H
#define VHEAP_LIVECAP_H

#include <stdint.h>
#include <sys/types.h>

struct vh_livecap {
    char path[4096];
    uint32_t pid;
};

/* With a PID, the capture is the *.vhcap file that process maps shared and
 * whose header names it (/proc/PID/maps); with a path, the process is the
 * pid in its header, which must be running and map that file. 0, or -1
 * after printing why as command `me` ("no process 42", "process 42 is not
 * a live vheap process ...", "...: its program has exited"). */
int vh_livecap__find(const char *me, const char *arg, struct vh_livecap *out);
/* Whether a CAPTURE|PID argument is a pid (all digits). */
int vh_livecap__is_pid(const char *s);

/* 1 while the process still runs and its capture does not say it ended. */
int vh_livecap__running(const struct vh_livecap *lc);

#endif
