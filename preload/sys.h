/* sys.h — the shim's own file I/O and mappings, as plain system calls.
 *
 * glibc's open, close, read, pread, write, pwrite and fallocate are
 * cancellation points: called from inside a hook they would act on a
 * pthread_cancel pending for the program's thread and unwind it out of
 * malloc or free, which are not cancellation points (a worker that only
 * allocates would be cancelled inside the shim, with a lock held).
 * syscall() is not one, so every file call the shim makes goes through
 * these. errno is set as by the wrappers. */
#ifndef VHEAP_PRELOAD_SYS_H
#define VHEAP_PRELOAD_SYS_H

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

static inline int vh_sys_open(const char *path, int flags, int mode)
{
    return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}

static inline int vh_sys_close(int fd)
{
    return (int)syscall(SYS_close, fd);
}

static inline ssize_t vh_sys_read(int fd, void *buf, size_t n)
{
    return (ssize_t)syscall(SYS_read, fd, buf, n);
}

static inline ssize_t vh_sys_pread(int fd, void *buf, size_t n, off_t off)
{
    return (ssize_t)syscall(SYS_pread64, fd, buf, n, off);
}

static inline ssize_t vh_sys_write(int fd, const void *buf, size_t n)
{
    return (ssize_t)syscall(SYS_write, fd, buf, n);
}

static inline ssize_t vh_sys_pwrite(int fd, const void *buf, size_t n, off_t off)
{
    return (ssize_t)syscall(SYS_pwrite64, fd, buf, n, off);
}

static inline int vh_sys_fallocate(int fd, int mode, off_t off, off_t len)
{
    return (int)syscall(SYS_fallocate, fd, mode, off, len);
}

/* The shim's own mappings go to the kernel, never through its mmap hooks
 * (hooks_mmap.c: the program's are its heap "mmap"), which would otherwise
 * bind every such call in libvheap to themselves. */
static inline void *vh_sys_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

static inline int vh_sys_munmap(void *addr, size_t len)
{
    return (int)syscall(SYS_munmap, addr, len);
}

static inline void *vh_sys_mremap(void *old, size_t old_len, size_t len, int flags)
{
    return (void *)syscall(SYS_mremap, old, old_len, len, flags, NULL);
}

#endif
