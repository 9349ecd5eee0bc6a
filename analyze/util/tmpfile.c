/* tmpfile.c — files published by rename, removed if a signal ends the run
 * (tmpfile.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/util/tmpfile.h"

/* A load and an export may be pending at once (export of a capture loads
 * it first); a few slots are plenty. The handler only reads them. */
#define SLOTS 4
static char slot_path[SLOTS][4096];
static volatile sig_atomic_t slot_on[SLOTS];
static int pending;
static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
static struct sigaction old[sizeof sigs / sizeof sigs[0]];

static void on_signal(int sig)
{
    for (int i = 0; i < SLOTS; i++)
        if (slot_on[i])
            unlink(slot_path[i]);
    /* Die of the same signal, as the process would have without us. */
    signal(sig, SIG_DFL);
    raise(sig);
}

static int arm(const char *tmp)
{
    for (int i = 0; i < SLOTS; i++) {
        if (slot_on[i])
            continue;
        snprintf(slot_path[i], sizeof slot_path[i], "%s", tmp);
        /* the handler must never see the slot on before its path is there */
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        slot_on[i] = 1;
        if (pending++ == 0) {
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = on_signal;
            sigemptyset(&sa.sa_mask);
            for (size_t s = 0; s < sizeof sigs / sizeof sigs[0]; s++)
                sigaction(sigs[s], &sa, &old[s]);
        }
        return 0;
    }
    return -EBUSY;
}

static void disarm(const char *tmp)
{
    for (int i = 0; i < SLOTS; i++) {
        if (!slot_on[i] || strcmp(slot_path[i], tmp))
            continue;
        slot_on[i] = 0;
        if (--pending == 0)
            for (size_t s = 0; s < sizeof sigs / sizeof sigs[0]; s++)
                sigaction(sigs[s], &old[s], NULL);
        return;
    }
}

int vh_tmpfile_create(const char *path, char *tmp, size_t tmplen)
{
    int n = snprintf(tmp, tmplen, "%s.tmp-XXXXXX", path);
    if (n < 0 || (size_t)n >= tmplen || (size_t)n >= sizeof slot_path[0])
        return -ENAMETOOLONG;
    int fd = mkostemp(tmp, O_CLOEXEC);             /* mode 0600 */
    if (fd < 0)
        return -errno;
    int rc = arm(tmp);
    if (rc) {
        close(fd);
        unlink(tmp);
        return rc;
    }
    return fd;
}

int vh_tmpfile_publish(const char *tmp, const char *path)
{
    int rc = rename(tmp, path) ? -errno : 0;
    if (rc)
        unlink(tmp);
    disarm(tmp);
    return rc;
}

void vh_tmpfile_discard(const char *tmp)
{
    unlink(tmp);
    disarm(tmp);
}

FILE *vh_tmpfile_scratch(void)
{
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
    /* O_TMPFILE never has a name; where the file system lacks it, a name
     * unlinked at once is the next best. */
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0 && errno != ENOENT && errno != ENOTDIR) {
        char path[4096];
        int n = snprintf(path, sizeof path, "%s/vheap-scratch.XXXXXX", dir);
        if (n < 0 || (size_t)n >= sizeof path) {
            errno = ENAMETOOLONG;
            return NULL;
        }
        fd = mkostemp(path, O_CLOEXEC);
        if (fd >= 0)
            unlink(path);
    }
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "w+");
    if (!f) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return f;
}
