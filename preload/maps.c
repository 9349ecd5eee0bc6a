/* maps.c — the file the kernel mapped at an address (/proc/self/maps), and
 * the program's own file found that way. Below the capture writer (which
 * names its file after the program) and the module list (which names
 * libraries by it) in the shim's order (docs/hacking.md). */
#include <link.h>
#include <fcntl.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "preload/internal.h"
#include "preload/sys.h"

static char main_exe[VH_EXE_MAX];

/* ---- the file mapped at an address --------------------------------------------
 * ld.so names an object the way it was asked for: dlopen("./libfoo.so")
 * stays "./libfoo.so", which means nothing to an analyzer in another
 * directory (nor to this process after a chdir), and the program itself
 * has no name at all, while /proc/self/exe is ld.so when the program was
 * started as `ld.so ./prog`. The kernel knows which file it mapped: its
 * line in /proc/self/maps names it by absolute path, at the moment we
 * look, whatever the working directory was at the dlopen. Raw system
 * calls into a static buffer: callers hold the module lock, or are the
 * thread that initializes the shim. */
static char maps_buf[8192];

static const char *hex_field(const char *p, const char *end, uint64_t *v)
{
    *v = 0;
    for (; p < end; p++) {
        int c = *p, d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            break;
        *v = *v << 4 | (uint64_t)d;
    }
    return p;
}

/* One line "lo-hi perms offset dev inode   /path": copies the path into
 * out when addr lies in lo..hi and the mapping is of a file. */
static int maps_line(const char *p, const char *end, uint64_t addr, char *out, size_t cap)
{
    uint64_t lo, hi;
    p = hex_field(p, end, &lo);
    if (p >= end || *p != '-')
        return 0;
    hex_field(p + 1, end, &hi);
    if (addr < lo || addr >= hi)
        return 0;
    for (int field = 0; field < 5 && p < end; field++) {
        while (p < end && *p != ' ')
            p++;
        while (p < end && *p == ' ')
            p++;
    }
    size_t n = (size_t)(end - p);
    if (n == 0 || *p != '/' || n >= cap)
        return 0;
    memcpy(out, p, n);
    out[n] = '\0';
    return 1;
}

/* The absolute path of the file mapped at addr into out; 0 when none is
 * (or /proc is not there: the caller keeps ld.so's name). */
int vh_mapped_file(uint64_t addr, char *out, size_t cap)
{
    int fd = vh_sys_open("/proc/self/maps", O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    size_t have = 0;
    int found = 0;
    for (;;) {
        ssize_t r = vh_sys_read(fd, maps_buf + have, sizeof maps_buf - have);
        if (r <= 0)
            break;
        have += (size_t)r;
        char *line = maps_buf, *nl;
        while (!found && (nl = memchr(line, '\n', have - (size_t)(line - maps_buf))))
            found = maps_line(line, nl, addr, out, cap), line = nl + 1;
        if (found)
            break;
        if (line == maps_buf) {
            have = 0;              /* a line longer than the buffer: skipped */
            continue;
        }
        have -= (size_t)(line - maps_buf);
        memmove(maps_buf, line, have);
    }
    vh_sys_close(fd);
    return found;
}

/* The main program's first mapped address: the first object ld.so lists. */
static int first_lo_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    uint64_t *lo = arg;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_LOAD) {
            *lo = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
            break;
        }
    return 1;
}

/* When the kernel mapped the program itself and ld.so as its interpreter
 * (AT_BASE, which ld.so leaves alone when it rewrites the auxiliary vector
 * for a program it was asked to run), /proc/self/exe names the program as
 * its maps line would, in one readlink instead of reading the maps (about
 * 40 us of a short run, issue 28); started as `ld.so ./prog`, the kernel
 * mapped ld.so with no interpreter, and the maps tell. */
const char *vh_main_exe(void)
{
    if (main_exe[0])
        return main_exe;
    if (getauxval(AT_BASE) != 0) {
        ssize_t n = readlink("/proc/self/exe", main_exe, sizeof main_exe - 1);
        main_exe[n > 0 ? n : 0] = '\0';
        if (main_exe[0] == '/')
            return main_exe;
    }
    uint64_t lo = 0;
    dl_iterate_phdr(first_lo_cb, &lo);
    if (!lo || !vh_mapped_file(lo, main_exe, sizeof main_exe)) {
        ssize_t n = readlink("/proc/self/exe", main_exe, sizeof main_exe - 1);
        main_exe[n > 0 ? n : 0] = '\0';
    }
    return main_exe;
}

