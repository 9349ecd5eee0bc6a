/* cmd/livecap.c — the capture of a running vheap process (livecap.h): a pid's
 * *.vhcap mapping found in /proc/PID/maps, or a capture's process checked
 * to be running and mapping it. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "analyze/cmd/livecap.h"
#include "analyze/util/diag.h"
#include "common/capture_format.h"

/* Does process `pid` map the file with this device and inode, MAP_SHARED?
 * With want_dev 0, finds the first shared mapping of a *.vhcap file whose
 * header names pid, and puts its path in `path`. 1 yes, 0 no, -errno when
 * the maps cannot be read. */
static int maps_find(pid_t pid, dev_t want_dev, ino_t want_ino, char *path, size_t pathlen)
{
    char name[64], line[4096 + 256];
    FILE *f;
    int found = 0;

    snprintf(name, sizeof name, "/proc/%d/maps", (int)pid);
    if (!(f = fopen(name, "re")))
        return -errno;
    while (!found && fgets(line, sizeof line, f)) {
        char perms[8];
        unsigned maj, min;
        unsigned long long ino;
        int at = 0;
        if (sscanf(line, "%*s %7s %*s %x:%x %llu %n", perms, &maj, &min, &ino, &at) != 4 ||
            perms[3] != 's' || !at)
            continue;
        char *p = line + at, *nl = strchr(p, '\n');
        if (nl)
            *nl = 0;
        if (want_ino) {
            found = makedev(maj, min) == want_dev && ino == want_ino;
            continue;
        }
        /* Any name: a capture whose VHEAP_OUT name was taken is ".1", ".2"
         * (a serf after the fork child that exec'd it). Regular files only:
         * opening a device node another mapping names may do something. */
        size_t n = strlen(p);
        struct stat st;
        if (n >= pathlen || p[0] != '/' || stat(p, &st) < 0 || !S_ISREG(st.st_mode) ||
            st.st_size < (off_t)sizeof(struct vh_capture_header))
            continue;
        /* a fork child may still map its parent's capture: take the one
         * whose header is this process's */
        int fd = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        struct vh_capture_header h;
        if (fd < 0)
            continue;
        if (pread(fd, &h, sizeof h, 0) == (ssize_t)sizeof h &&
            !memcmp(h.magic, VH_CAPTURE_MAGIC, sizeof h.magic) && h.pid == (uint32_t)pid) {
            memcpy(path, p, n + 1);
            found = 1;
        }
        close(fd);
    }
    fclose(f);
    return found;
}

int vh_livecap__is_pid(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return 0;
    return 1;
}

/* Why the capture at `path` (header h, file sb) is not that of a live
 * process, or NULL when it is. */
static const char *not_live(const struct vh_capture_header *h, const struct stat *sb, pid_t pid)
{
    int r;
    uint32_t flags = __atomic_load_n(&h->flags, __ATOMIC_ACQUIRE);
    if (memcmp(h->magic, VH_CAPTURE_MAGIC, sizeof h->magic))
        return "not a vheap capture (bad magic)";
    if (h->version != VH_CAPTURE_VERSION && h->version != VH_CAPTURE_VERSION_V3 &&
        h->version != VH_CAPTURE_VERSION_V2)
        return "a capture of another format version: its program cannot take requests";
    if (flags & (VH_HDR_ENDED | VH_HDR_EXITED))
        return "its program has exited";
    if (pid && h->pid != (uint32_t)pid)
        return "its header names another process";
    if (kill((pid_t)h->pid, 0) && errno == ESRCH)
        return "its program is not running";
    if ((r = maps_find((pid_t)h->pid, sb->st_dev, sb->st_ino, NULL, 0)) <= 0)
        return r < 0 ? "the mappings of its process cannot be read"
                     : "the process its header names does not map it (not a live vheap process)";
    return NULL;
}

int vh_livecap__find(const char *me, const char *arg, struct vh_livecap *out)
{
    struct vh_capture_header h;
    struct stat sb;
    pid_t pid = 0;
    int fd, r;

    if (vh_livecap__is_pid(arg)) {
        long v = strtol(arg, NULL, 10);
        pid = (pid_t)v;
        if (v <= 0 || v > 1 << 22 || (kill(pid, 0) && errno == ESRCH)) {
            vh_errorf(me, "no process %s", arg);
            return -1;
        }
        r = maps_find(pid, 0, 0, out->path, sizeof out->path);
        if (r <= 0) {
            if (r < 0)
                vh_errorf(me, "cannot read the mappings of process %s: %s", arg, strerror(-r));
            else
                vh_errorf(me, "process %s is not a live vheap process (it maps no capture of "
                              "its own)", arg);
            return -1;
        }
    } else if (snprintf(out->path, sizeof out->path, "%s", arg) >= (int)sizeof out->path) {
        vh_errorf(me, "%.64s...: path too long", arg);
        return -1;
    }
    if ((fd = open(out->path, O_RDONLY | O_CLOEXEC)) < 0) {
        vh_errorf(me, "%s: %s", out->path, strerror(errno));
        return -1;
    }
    r = fstat(fd, &sb) || !S_ISREG(sb.st_mode) || sb.st_size < VH_HEADER_SIZE ||
        pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h;
    close(fd);
    if (r) {
        vh_errorf(me, "%s: not a vheap capture (too short)", out->path);
        return -1;
    }
    const char *why = not_live(&h, &sb, pid);
    if (why) {
        vh_errorf(me, "%s (pid %" PRIu32 "): %s", out->path, h.pid, why);
        return -1;
    }
    out->pid = h.pid;
    return 0;
}

int vh_livecap__running(const struct vh_livecap *lc)
{
    struct vh_capture_header h;
    int fd = open(lc->path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : pread(fd, &h, sizeof h, 0);
    if (fd >= 0)
        close(fd);
    if (n != (ssize_t)sizeof h || (h.flags & (VH_HDR_ENDED | VH_HDR_EXITED)))
        return 0;
    return !(kill((pid_t)lc->pid, 0) && errno == ESRCH);
}
