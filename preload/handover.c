/* handover.c — one capture per process: a fork child that only execs (a
 * shell, Vere's king starting its serf) or only exits leaves no capture of
 * its own behind.
 *
 * A fork child's capture is made at fork, before anyone knows whether the
 * child will record anything. Left alone, the fork child that execs at once
 * holds the pid's plain name and the exec'd image — the one doing the work —
 * gets ".1". So the image marks, beside VH_HDR_EXEC, whether it recorded
 * anything since its start records (VH_HDR_EXEC_EMPTY), and the exec'd
 * image, finding its name taken by such a capture of its own pid, takes the
 * file over. Removing the file before the exec instead would lose it when
 * the exec fails, or when the new image writes no capture (static, set-ID,
 * LD_PRELOAD dropped): the file then stays, naming what was exec'd. A fork
 * child that exits having recorded nothing removes its capture. */
#include <dirent.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>

#include "preload/internal.h"
#include "preload/sys.h"

/* Where the fork child's start records ended: its one chunk, and how full. */
static struct {
    const struct vh_chunk_header *chunk;
    uint64_t used;
    uint64_t chunks;
    pid_t pid;                     /* the process the mark belongs to */
} quiet;

void vh_handover_mark(const struct vh_tls *t)
{
    if (!vh_cap.hdr)
        return;
    quiet.chunk = t->chunk;
    quiet.used = t->chunk ? __atomic_load_n(&t->chunk->used, __ATOMIC_ACQUIRE) : 0;
    quiet.chunks = __atomic_load_n(&vh_cap.hdr->chunks_claimed, __ATOMIC_ACQUIRE);
    quiet.pid = vh_cap.pid;
}

int vh_handover_empty(void)
{
    const struct vh_capture_header *h = vh_cap.hdr;
    if (!h || quiet.pid != vh_cap.pid || !quiet.chunks)
        return 0;                  /* not a marked fork child's own capture */
    return __atomic_load_n(&h->chunks_claimed, __ATOMIC_ACQUIRE) == quiet.chunks &&
           (!quiet.chunk || __atomic_load_n(&quiet.chunk->used, __ATOMIC_ACQUIRE) == quiet.used);
}

/* The header's fields up to `flags`: what ours() judges by. */
#define PREFIX (offsetof(struct vh_capture_header, flags) + sizeof(uint32_t))

/* Whether the file `name` in `dir` is the capture of the image this one
 * replaced: same owner, same pid and parent (a recycled pid has another
 * parent, nearly always), an image that exec'd having recorded nothing and
 * did not come back (EXEC is cleared when the exec fails). */
static int ours(int dir, const char *name)
{
    int fd = (int)syscall(SYS_openat, dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    char buf[PREFIX];              /* not the whole header page on the stack */
    uint32_t pid, ppid, flags;
    struct stat st;
    const uint32_t want = VH_HDR_EXEC | VH_HDR_EXEC_EMPTY;
    int yes = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
              st.st_size >= (off_t)VH_HEADER_SIZE &&
              vh_sys_pread(fd, buf, PREFIX, 0) == (ssize_t)PREFIX &&
              memcmp(buf, VH_CAPTURE_MAGIC, 8) == 0;
    vh_sys_close(fd);
    if (!yes)
        return 0;
    memcpy(&pid, buf + offsetof(struct vh_capture_header, pid), 4);
    memcpy(&ppid, buf + offsetof(struct vh_capture_header, ppid), 4);
    memcpy(&flags, buf + offsetof(struct vh_capture_header, flags), 4);
    return pid == (uint32_t)getpid() && ppid == (uint32_t)getppid() &&
           (flags & (want | VH_HDR_ENDED)) == want;
}

/* Names that can hold this pid's capture contain the pid (%p, or the
 * ".<pid>" a fork child without %p gets): only those are opened. */
static int names_pid(const char *name, const char *pid)
{
    return strstr(name, pid) != NULL;
}

struct dirent64_raw {              /* the kernel's linux_dirent64 */
    uint64_t ino;
    int64_t off;
    unsigned short reclen;
    unsigned char type;
    char name[];
};

void vh_handover_clear(const char *path)
{
    char dir[4096], pid[16];
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path) : 0;
    if (!slash || n >= sizeof dir)
        return;
    memcpy(dir, path, n);
    dir[n ? n : 1] = '\0';
    if (!n)
        dir[0] = '/';
    vh_format(pid, sizeof pid, ".%d", (int)getpid());
    int fd = vh_sys_open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (fd < 0)
        return;
    /* getdents64, not opendir: no malloc; the directory read once */
    char buf[2048] __attribute__((aligned(8)));
    long got;
    while ((got = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
        for (long off = 0; off < got;) {
            struct dirent64_raw *d = (struct dirent64_raw *)(void *)(buf + off);
            off += d->reclen;
            if ((d->type == DT_REG || d->type == DT_UNKNOWN) && names_pid(d->name, pid) &&
                ours(fd, d->name))
                syscall(SYS_unlinkat, fd, d->name, 0);
        }
    }
    vh_sys_close(fd);
}
