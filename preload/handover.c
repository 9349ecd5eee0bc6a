/* handover.c — one capture per process: a fork child that only execs (a
 * shell, Vere's king starting its serf through libuv) or only exits leaves
 * no capture of its own behind.
 *
 * A fork child's capture is made at fork, before anyone knows whether the
 * child will record anything. Left alone, the fork child that execs at once
 * holds the pid's plain name and the exec'd image — the one doing the work —
 * gets ".1". So the child notes in its header where its start records end
 * (start_used); at exit, if it recorded nothing since, it removes its file.
 * At exec it cannot: the exec may fail, or the new image load no shim
 * (static, set-ID, LD_PRELOAD dropped), and then the file names the
 * program that ran unrecorded; nor does it see every exec (glibc's execvp
 * and execl* call execve past the shim). So the exec'd image, once it
 * starts its own capture, removes the capture of the image it replaced
 * from its directory when that one is a fork child of the same pid and
 * parent whose chunk 0 still ends at start_used. */
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
    struct vh_capture_header *h = vh_cap.hdr;
    if (!h)
        return;
    quiet.chunk = t->chunk;
    quiet.used = t->chunk ? __atomic_load_n(&t->chunk->used, __ATOMIC_ACQUIRE) : 0;
    quiet.chunks = __atomic_load_n(&h->chunks_claimed, __ATOMIC_ACQUIRE);
    quiet.pid = vh_cap.pid;
    if (quiet.chunks == 1 && t->chunk && t->chunk->index == 0 && quiet.used <= UINT32_MAX)
        h->start_used = (uint32_t)quiet.used;
}

int vh_handover_empty(void)
{
    const struct vh_capture_header *h = vh_cap.hdr;
    if (!h || quiet.pid != vh_cap.pid || !quiet.chunks)
        return 0;                  /* not a marked fork child's own capture */
    return __atomic_load_n(&h->chunks_claimed, __ATOMIC_ACQUIRE) == quiet.chunks &&
           (!quiet.chunk || __atomic_load_n(&quiet.chunk->used, __ATOMIC_ACQUIRE) == quiet.used);
}

/* Reads `n` bytes at `off` of fd; 0 when all came. */
static int read_at(int fd, void *buf, size_t n, off_t off)
{
    return vh_sys_pread(fd, buf, n, off) == (ssize_t)n ? 0 : -1;
}

#define FIELD(f) offsetof(struct vh_capture_header, f)

/* Whether the file `name` in `dir` is the empty capture of the image this
 * one replaced: this owner's, a fork child's with this pid and parent (a
 * recycled pid has another parent, nearly always), not ended, one chunk
 * that still ends where its start records did. */
static int ours(int dir, const char *name)
{
    int fd = (int)syscall(SYS_openat, dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    char magic[8];
    uint32_t pid, ppid, flags, start_used;
    uint64_t chunks, chunk0, used;
    struct stat st;
    int yes = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
              st.st_size >= (off_t)VH_HEADER_SIZE && !read_at(fd, magic, 8, 0) &&
              !memcmp(magic, VH_CAPTURE_MAGIC, 8) && !read_at(fd, &pid, 4, FIELD(pid)) &&
              !read_at(fd, &ppid, 4, FIELD(ppid)) && !read_at(fd, &flags, 4, FIELD(flags)) &&
              !read_at(fd, &chunks, 8, FIELD(chunks_claimed)) &&
              !read_at(fd, &chunk0, 8, FIELD(chunk_offset)) &&
              !read_at(fd, &start_used, 4, FIELD(start_used)) && chunk0 < (uint64_t)st.st_size &&
              !read_at(fd, &used, 8, (off_t)chunk0);
    vh_sys_close(fd);
    return yes && pid == (uint32_t)getpid() && ppid == (uint32_t)getppid() &&
           (flags & (VH_HDR_FORKED | VH_HDR_ENDED)) == VH_HDR_FORKED && chunks == 1 &&
           start_used && used == start_used;
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
