/* cmd/record.c — `vheap-analyze record -- PROGRAM ARGS`: runs PROGRAM with
 * libvheap.so preloaded, passes its exit status through, then loads the main
 * process's capture and prints the summary. It refuses what LD_PRELOAD
 * cannot reach (static binaries, other ELF classes) before running anything. */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <getopt.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analyze/load/ensure.h"
#include "analyze/cmd/cli.h"
#include "analyze/store/db.h"
#include "analyze/util/grow.h"
#include "analyze/util/path.h"
#include "common/capture_format.h"

static const char usage[] =
    "usage: vheap-analyze record [OPTIONS] [--] PROGRAM [ARGS...]\n"
    "\n"
    "Runs PROGRAM with libvheap.so preloaded (LD_PRELOAD, put before any\n"
    "library already preloaded), waits for it, then loads the main process's\n"
    "capture (PROGRAM's pid; if it exec'd, its last image: `record -- sh -c\n"
    "'exec ./prog'` and `record -- env X=1 ./prog` summarize prog) into\n"
    "CAPTURE.sqlite and prints its summary. Which capture was summarized, and\n"
    "the others (earlier images, forked or exec'd children), are listed on\n"
    "stderr; load them with `vheap-analyze load`.\n"
    "\n"
    "The exit status is PROGRAM's: its exit code, or 128+N when signal N killed\n"
    "it (and a line says so); 127 when PROGRAM cannot be found, 126 when it\n"
    "cannot be run. When PROGRAM succeeded but its capture could not be found\n"
    "or loaded, the status is 1. A statically linked PROGRAM is refused\n"
    "(exit 1): LD_PRELOAD cannot work without the dynamic loader. A script's\n"
    "interpreter (#!) is checked instead. When the last image recorded exec'd\n"
    "a program that wrote no capture (`sh -c 'exec ./static-prog'`), that\n"
    "program is named, with why when it can be told, and nothing is\n"
    "summarized (exit 1).\n"
    "\n"
    "options:\n"
    "  --out PATTERN    capture path; %p is the pid, %e the executable's name,\n"
    "                   %% a '%' (default: $VHEAP_OUT, else vheap.%e.%p.vhcap in\n"
    "                   the current directory). Relative paths are made absolute\n"
    "                   so that children that change directory write beside it.\n"
    "  --no-load        only run and list the captures\n"
    "  --lib PATH       the libvheap.so to preload (default: next to this\n"
    "                   program, build/libvheap.so in a build tree, or\n"
    "                   PREFIX/lib/libvheap.so when installed)\n"
    "  --format FMT     format of the summary: table (default), json, csv; it\n"
    "                   follows on stdout whatever PROGRAM printed there\n"
    "  --bytes          exact byte counts in the summary\n"
    "  -h, --help       this text\n"
    "\n"
    "The shim's other settings come from the environment (VHEAP_DEPTH,\n"
    "VHEAP_UNWIND, ...: see docs/usage.md); VHEAP_QUIET defaults to 1 here.\n"
    "\n"
    "examples:\n"
    "  vheap-analyze record -- ./myprog --input data.txt\n"
    "  vheap-analyze record --out /tmp/run.%p.vhcap -- make -j2\n"
    "  VHEAP_DEPTH=16 vheap-analyze record --no-load -- python3 script.py\n"
    "  vheap-analyze summary vheap.myprog.*.vhcap.sqlite --format json   # afterwards\n";

static int run(int argc, char **argv);

VH_COMMAND(cmd_record, {
    .name = "record",
    .summary = "run a program under the shim, then load and summarize",
    .usage = usage,
    .run = run,
    .order = 5,
});

#define CMD "record"

#if defined(__x86_64__)
#define OUR_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define OUR_MACHINE EM_AARCH64
#else
#define OUR_MACHINE EM_NONE
#endif

/* ---- finding things ------------------------------------------------------- */

/* Where execvp would find `name`: a path, or the first executable regular
 * file along $PATH. 0, or -ENOENT / -EACCES. */
static int find_program(const char *name, char *out, size_t len)
{
    struct stat st;
    if (strchr(name, '/')) {
        if (snprintf(out, len, "%s", name) >= (int)len)
            return -ENAMETOOLONG;
        if (stat(out, &st))
            return -errno;
        return S_ISREG(st.st_mode) && !access(out, X_OK) ? 0 : -EACCES;
    }
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    int seen_eacces = 0;
    for (const char *p = path;; p++) {
        const char *e = strchr(p, ':');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (snprintf(out, len, "%.*s%s%s", (int)n, p, n ? "/" : "", name) < (int)len &&
            !stat(out, &st) && S_ISREG(st.st_mode)) {
            if (!access(out, X_OK))
                return 0;
            seen_eacces = 1;
        }
        if (!e)
            break;
        p = e;
    }
    return seen_eacces ? -EACCES : -ENOENT;
}

/* libvheap.so beside this executable (a build tree) or in ../lib (an
 * installation). */
static int find_lib(char *out, size_t len)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return -errno;
    self[n] = 0;
    char *slash = strrchr(self, '/');
    if (!slash)
        return -ENOENT;
    *slash = 0;
    static const char *const rel[] = { "/libvheap.so", "/../lib/libvheap.so" };
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        char cand[PATH_MAX + 32];
        snprintf(cand, sizeof cand, "%s%s", self, rel[i]);
        if (!access(cand, R_OK) && realpath(cand, out) && strlen(out) < len)
            return 0;
    }
    snprintf(out, len, "%s", self);
    return -ENOENT;
}

/* ---- can LD_PRELOAD reach PROGRAM? ------------------------------------------ */

static const char static_msg[] =
    "LD_PRELOAD cannot work. Official Urbit binaries are static (musl); build a "
    "dynamically linked glibc binary (see docs/vere.md).";

/* The interpreter named by a "#!" line, resolved like env(1) would for
 * "#!/usr/bin/env NAME". 0 with out filled, or -ENOENT. */
static int script_interpreter(const char *line, char *out, size_t len)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", line + 2);
    buf[strcspn(buf, "\n")] = 0;
    char *save, *tok = strtok_r(buf, " \t", &save);
    if (!tok)
        return -ENOENT;
    const char *slash = strrchr(tok, '/');
    if (strcmp(slash ? slash + 1 : tok, "env"))
        return snprintf(out, len, "%s", tok) < (int)len ? 0 : -ENAMETOOLONG;
    /* env [-S] [-i] [NAME=VALUE]... PROGRAM */
    while ((tok = strtok_r(NULL, " \t", &save)))
        if (tok[0] != '-' && !strchr(tok, '='))
            return find_program(tok, out, len);
    return -ENOENT;
}

/* Returns 0 if PROGRAM (or its script interpreter) loads through the dynamic
 * loader; else prints why not and returns -ENOEXEC. Unreadable or unknown
 * files are let through: exec will say what is wrong with them. */
static int check_preloadable(const char *shown, const char *path, int depth)
{
    char what[PATH_MAX + 64];
    if (depth == 0)
        snprintf(what, sizeof what, "%s is", shown);
    else
        snprintf(what, sizeof what, "%s is a script for %s, which is", shown, path);
    unsigned char head[256];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = pread(fd, head, sizeof head - 1, 0);
    if (n < 4) {
        close(fd);
        return 0;
    }
    head[n] = 0;
    int rc = 0;
    if (head[0] == '#' && head[1] == '!') {
        char interp[PATH_MAX];
        close(fd);
        if (depth >= 4 || script_interpreter((const char *)head, interp, sizeof interp))
            return 0;
        return check_preloadable(shown, interp, depth + 1);
    }
    if (memcmp(head, ELFMAG, SELFMAG)) {
        close(fd);
        return 0;
    }
    if (head[EI_CLASS] != ELFCLASS64 || head[EI_DATA] != ELFDATA2LSB ||
        (size_t)n < sizeof(Elf64_Ehdr)) {
        vh_errorf(CMD, "%s a %s program: libvheap.so is a 64-bit little-endian "
                       "library and cannot be preloaded into it",
                  what, head[EI_CLASS] == ELFCLASS32 ? "32-bit" : "foreign");
        close(fd);
        return -ENOEXEC;
    }
    Elf64_Ehdr eh;
    memcpy(&eh, head, sizeof eh);
    if (OUR_MACHINE != EM_NONE && eh.e_machine != OUR_MACHINE) {
        vh_errorf(CMD, "%s built for another machine (ELF machine %u): libvheap.so "
                       "cannot be preloaded into it", what, eh.e_machine);
        close(fd);
        return -ENOEXEC;
    }
    if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) {
        close(fd);
        return 0;
    }
    size_t phnum = eh.e_phnum;
    if (phnum == PN_XNUM && eh.e_shoff) {
        Elf64_Shdr sh0;
        if (pread(fd, &sh0, sizeof sh0, (off_t)eh.e_shoff) == (ssize_t)sizeof sh0)
            phnum = sh0.sh_info;
    }
    int interp = 0;
    for (size_t i = 0; i < phnum && i < 65536 && eh.e_phentsize >= sizeof(Elf64_Phdr); i++) {
        Elf64_Phdr ph;
        off_t off = (off_t)(eh.e_phoff + i * eh.e_phentsize);
        if (pread(fd, &ph, sizeof ph, off) != (ssize_t)sizeof ph)
            break;
        if (ph.p_type == PT_INTERP) {
            interp = 1;
            break;
        }
    }
    close(fd);
    if (!interp) {
        vh_errorf(CMD, "%s statically linked: %s", what, static_msg);
        rc = -ENOEXEC;
    }
    return rc;
}

/* set-ID programs run in secure-execution mode: the loader ignores a
 * LD_PRELOAD path like ours and the shim would record nothing anyway. */
static void warn_setid(const char *shown, const char *path)
{
    struct stat st;
    if (stat(path, &st))
        return;
    if (((st.st_mode & S_ISUID) && st.st_uid != geteuid()) ||
        ((st.st_mode & S_ISGID) && st.st_gid != getegid()))
        vh_errorf(CMD, "warning: %s is set-user/group-ID: the loader ignores LD_PRELOAD "
                       "for it, so nothing will be recorded", shown);
}

/* ---- the run ------------------------------------------------------------------ */

static volatile sig_atomic_t child_pid;
static pid_t last_pid;             /* the program's pid, after spawn()     */

/* SIGTERM/SIGHUP sent to record are meant for the program: pass them on and
 * keep waiting, so that its capture is still loaded. */
static void forward(int sig)
{
    if (child_pid > 0)
        kill(child_pid, sig);
}

struct run_opts {
    const char *out;               /* capture pattern                       */
    const char *lib;
    int no_load;
    const char *format;
    int raw_bytes;
};

static int make_preload(const char *lib, char **out)
{
    const char *old = getenv("LD_PRELOAD");
    if (!old || !*old)
        return (*out = strdup(lib)) ? 0 : -ENOMEM;
    if (strstr(old, lib))
        return (*out = strdup(old)) ? 0 : -ENOMEM;
    /* First in the list, so that our malloc interposes before another
     * preloaded allocator's (which we then reach through RTLD_NEXT). */
    return asprintf(out, "%s:%s", lib, old) < 0 ? -ENOMEM : 0;
}

/* Runs the program; returns its wait status, or -errno if it did not start
 * (*exec_err then holds exec's errno). */
static int spawn(const char *path, char **args, const char *preload, const char *pattern,
                 int *exec_err)
{
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC))
        return -errno;
    struct sigaction ign = { .sa_handler = SIG_IGN }, fwd = { .sa_handler = forward };
    struct sigaction old_int, old_quit, old_term, old_hup;
    sigemptyset(&ign.sa_mask);
    sigemptyset(&fwd.sa_mask);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(pfd[0]);
        close(pfd[1]);
        return -e;
    }
    if (pid == 0) {
        close(pfd[0]);
        if (setenv("LD_PRELOAD", preload, 1) || setenv("VHEAP_OUT", pattern, 1) ||
            setenv("VHEAP_QUIET", getenv("VHEAP_QUIET") ? getenv("VHEAP_QUIET") : "1", 1)) {
            int e = errno;
            (void)!write(pfd[1], &e, sizeof e);
            _exit(127);
        }
        execv(path, args);
        if (errno == ENOEXEC) {
            /* Like execvp: a file without "#!" is a shell script. */
            int n = 0;
            while (args[n])
                n++;
            char **sh = calloc((size_t)n + 2, sizeof *sh);
            if (sh) {
                sh[0] = "sh";
                sh[1] = (char *)path;
                for (int i = 1; i < n; i++)
                    sh[i + 1] = args[i];
                execv("/bin/sh", sh);
            }
        }
        int e = errno;
        (void)!write(pfd[1], &e, sizeof e);
        _exit(e == ENOENT ? 127 : 126);
    }
    child_pid = pid;
    last_pid = pid;
    sigaction(SIGINT, &ign, &old_int);
    sigaction(SIGQUIT, &ign, &old_quit);
    sigaction(SIGTERM, &fwd, &old_term);
    sigaction(SIGHUP, &fwd, &old_hup);
    close(pfd[1]);
    int e = 0;
    ssize_t r;
    while ((r = read(pfd[0], &e, sizeof e)) < 0 && errno == EINTR)
        ;
    close(pfd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGQUIT, &old_quit, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGHUP, &old_hup, NULL);
    child_pid = 0;
    if (r == (ssize_t)sizeof e) {
        *exec_err = e;
        return -e;
    }
    return status;
}

/* ---- the captures it left --------------------------------------------------- */

struct found {
    char *path;
    char exe[64];                  /* the executable's name, for messages    */
    char exec_path[VH_EXEC_PATH_MAX]; /* what the image exec'd (VH_HDR_EXEC) */
    uint32_t pid, ppid, gen, flags;
    uint64_t start;
    int ours;
};

static int read_header(const char *path, struct vh_capture_header *h)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -errno;
    ssize_t n = pread(fd, h, sizeof *h, 0);
    close(fd);
    if (n != (ssize_t)sizeof *h || memcmp(h->magic, VH_CAPTURE_MAGIC, 8))
        return -EINVAL;
    return 0;
}

static int by_start(const void *a, const void *b)
{
    const struct found *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return strcmp(x->path, y->path);
}

/* Captures in `dir` begun since `t0` by the program or its descendants:
 * pids reached from the program's through the header's ppid. */
static size_t find_captures(const char *dir, pid_t root, uint64_t t0, struct found **out)
{
    struct found *f = NULL;
    size_t n = 0, cap = 0;
    DIR *d = opendir(dir);
    *out = NULL;
    if (!d)
        return 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char *p;
        struct vh_capture_header h;
        struct stat st;
        if (asprintf(&p, "%s/%s", strcmp(dir, "/") ? dir : "", de->d_name) < 0)
            break;
        if (lstat(p, &st) || !S_ISREG(st.st_mode) || st.st_size < (off_t)VH_HEADER_SIZE ||
            read_header(p, &h) || h.start_realtime_ns + 1000000000ull < t0) {
            free(p);
            continue;
        }
        if (vh_grow(&f, &cap, n, sizeof *f, 8)) {
            free(p);
            break;
        }
        f[n] = (struct found){ .path = p, .pid = h.pid, .ppid = h.ppid,
                               .gen = h.exec_generation, .flags = h.flags,
                               .start = h.start_realtime_ns, .ours = h.pid == (uint32_t)root };
        h.exe[VH_EXE_MAX - 1] = 0;
        h.exec_path[VH_EXEC_PATH_MAX - 1] = 0;
        memcpy(f[n].exec_path, h.exec_path, sizeof f[n].exec_path);
        const char *base = vh_base_name(h.exe);
        size_t bl = strnlen(base, sizeof f[n].exe - 1);
        memcpy(f[n].exe, base, bl);  /* a long name is cut, for messages only */
        f[n].exe[bl] = 0;
        n++;
    }
    closedir(d);
    for (int changed = 1; changed;) {
        changed = 0;
        for (size_t i = 0; i < n; i++) {
            if (f[i].ours)
                continue;
            for (size_t j = 0; j < n; j++)
                if (f[j].ours && (f[j].pid == f[i].ppid || f[j].pid == f[i].pid)) {
                    f[i].ours = changed = 1;
                    break;
                }
        }
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (f[i].ours)
            f[m++] = f[i];
        else
            free(f[i].path);
    }
    if (m)
        qsort(f, m, sizeof *f, by_start);
    *out = f;
    return m;
}

/* The main capture: the program's own pid, its last image — what the user
 * meant when a wrapper (sh -c 'exec prog', env, a pyenv shim) execs the
 * real program. Images are ordered by when their capture started: the
 * exec_generation suffix restarts for each program name. f is sorted by
 * start, so the last image wins. */
static ssize_t main_capture(const struct found *f, size_t n, pid_t root)
{
    ssize_t best = -1;
    for (size_t i = 0; i < n; i++)
        if (f[i].pid == (uint32_t)root && !(f[i].flags & VH_HDR_FORKED))
            best = (ssize_t)i;
    return best;
}

#define LIST_MAX 12                /* other captures named one by one */

/* main_i is left out of the list. `what`: what becomes of it ("summarized",
 * or "captured" under --no-load, which only lists), NULL when it is not
 * named at all (its image exec'd a program that wrote no capture). */
static void list_captures(const struct found *f, size_t n, ssize_t main_i, const char *what)
{
    size_t images = 0, listed = 0;
    for (size_t i = 0; main_i >= 0 && i < n; i++)
        images += f[i].pid == f[main_i].pid && !(f[i].flags & VH_HDR_FORKED);
    if (main_i >= 0 && what) {
        if (images > 1)
            vh_errorf(CMD, "%s: %s (pid %u, %s: the last of "
                            "its %zu exec'd images)",
                    what, f[main_i].path, f[main_i].pid, f[main_i].exe, images);
        else
            vh_errorf(CMD, "%s: %s (pid %u, %s)",
                    what, f[main_i].path, f[main_i].pid, f[main_i].exe);
    }
    for (size_t i = 0, image = 0; i < n; i++) {
        int same = main_i >= 0 && f[i].pid == f[main_i].pid && !(f[i].flags & VH_HDR_FORKED);
        image += same;
        if ((ssize_t)i == main_i)
            continue;
        if (listed++ == LIST_MAX) {
            vh_errorf(CMD, "and %zu more captures beside them",
                    n - 1 - LIST_MAX);
            break;
        }
        char how[128];
        const char *kind = "child capture";
        size_t before = 0;         /* images of this pid before this one */
        for (size_t j = 0; j < i; j++)
            before += f[j].pid == f[i].pid;
        if (same) {
            kind = "earlier image";
            snprintf(how, sizeof how, "pid %u, %s: image %zu of %zu, before an exec", f[i].pid,
                     f[i].exe, image, images);
        } else if (before)
            snprintf(how, sizeof how, "pid %u, %s, exec #%zu", f[i].pid, f[i].exe, before);
        else if (f[i].flags & VH_HDR_FORKED)
            snprintf(how, sizeof how, "pid %u, %s, forked by %u", f[i].pid, f[i].exe, f[i].ppid);
        else
            snprintf(how, sizeof how, "pid %u, %s, child of %u", f[i].pid, f[i].exe, f[i].ppid);
        vh_errorf(CMD, "%s: %s (%s)", kind, f[i].path, how);
    }
    if (n > 1)
        vh_errorf(CMD, "load another capture with "
                        "`vheap-analyze load CAPTURE`, then `vheap-analyze summary "
                        "CAPTURE.sqlite`");
}

/* The last image recorded exec'd another (the shim marks that before the
 * call and unmarks it when the call fails), and no capture of that image
 * followed: the program that ran is not the one recorded. Says why when
 * it can (a static program, as `record` refuses one up front) and returns
 * 1; summarizing the image before the exec (the shell of `sh -c 'exec
 * ./prog'`) would answer another question. */
static int exec_unrecorded(const struct found *last, int say)
{
    if (!(last->flags & VH_HDR_EXEC) || (last->flags & (VH_HDR_ENDED | VH_HDR_EXITED)))
        return 0;
    if (!say)
        return 1;
    const char *p = last->exec_path[0] ? last->exec_path : "another program";
    vh_errorf(CMD, "pid %u (%s) exec'd %s, which wrote no capture:", last->pid, last->exe, p);
    if (!last->exec_path[0] || !check_preloadable(p, p, 0))
        vh_errorf(CMD, "%s did not load libvheap.so (a set-ID program, or one run with "
                       "LD_PRELOAD cleared)", p);
    vh_errorf(CMD, "%s was not summarized: it holds what %s did before the exec", last->path,
              last->exe);
    return 1;
}

/* ---- options and main --------------------------------------------------------- */

/* "vheap.%e.%p.vhcap" → "/cwd/vheap.%e.%p.vhcap", a '%' in cwd escaped. */
static char *absolute_pattern(const char *pat)
{
    char cwd[PATH_MAX], esc[2 * PATH_MAX], *out, *e = esc;
    if (pat[0] == '/')
        return strdup(pat);
    if (!getcwd(cwd, sizeof cwd))
        return NULL;
    for (const char *c = cwd; *c; c++) {
        if (*c == '%')
            *e++ = '%';
        *e++ = *c;
    }
    *e = 0;
    return asprintf(&out, "%s/%s", esc, pat) < 0 ? NULL : out;
}

/* The directory an absolute pattern writes to, "%%" undone; NULL when it
 * depends on the process (a %p or %e before the last '/'). */
static char *pattern_dir(const char *pattern)
{
    const char *slash = strrchr(pattern, '/');
    char *dir = malloc((size_t)(slash - pattern) + 2), *d = dir;
    if (!dir)
        return NULL;
    for (const char *c = pattern; c < slash; c++) {
        if (*c == '%') {
            if (c[1] != '%') {
                free(dir);
                return NULL;
            }
            c++;
        }
        *d++ = *c;
    }
    if (d == dir)
        *d++ = '/';
    *d = 0;
    return dir;
}

static int parse(int argc, char **argv, struct run_opts *o, int *first)
{
    static const struct option lo[] = {
        { "no-load", no_argument, NULL, 'n' }, { "bytes", no_argument, NULL, 'b' },
        { "out", required_argument, NULL, 'o' }, { "lib", required_argument, NULL, 'l' },
        { "format", required_argument, NULL, 'f' }, { 0 },
    };
    const char *opt;
    int c, i;
    optind = 0;
    /* "+": the options end at PROGRAM, whose own options are its own */
    while ((c = vh_getopt(&cmd_record, argc, argv, "+:", lo, &opt)) != -1) {
        switch (c) {
        case 'n': o->no_load = 1; break;
        case 'b': o->raw_bytes = 1; break;
        case 'o': o->out = optarg; break;
        case 'l': o->lib = optarg; break;
        case 'f': o->format = optarg; break;
        case ':': vh_errorf(CMD, "%s needs a value", opt); return -EINVAL;
        default: return -EINVAL;
        }
    }
    i = optind;
    if (i < argc && !strcmp(argv[i], "-") && strcmp(argv[i - 1], "--")) {
        vh_errorf(CMD, "unknown option '-' (see vheap-analyze record --help)");
        return -EINVAL;
    }
    if (i >= argc) {
        vh_errorf(CMD, "no PROGRAM to run (usage: vheap-analyze record [OPTIONS] -- PROGRAM "
                       "[ARGS...])");
        return -EINVAL;
    }
    if (o->format && strcmp(o->format, "table") && strcmp(o->format, "json") &&
        strcmp(o->format, "csv")) {
        vh_errorf(CMD, "--format: '%s' is not table, json or csv", o->format);
        return -EINVAL;
    }
    if (o->out && !*o->out) {
        vh_errorf(CMD, "--out: empty pattern");
        return -EINVAL;
    }
    *first = i;
    return 0;
}

static int load_and_summarize(const char *capture, const struct run_opts *o)
{
    char db[4096], err[512];
    if (load__ensure(capture, db, sizeof db, err, sizeof err)) {
        vh_errorf(CMD, "%s", err);
        return -EIO;
    }
    const struct vh_command *summary = vh_command_find("summary");
    if (!summary) {
        vh_errorf(CMD, "this build has no summary command");
        return -ENOSYS;
    }
    char *args[6];
    int n = 0;
    args[n++] = "summary";
    args[n++] = db;
    if (o->format) {
        args[n++] = "--format";
        args[n++] = (char *)o->format;
    }
    if (o->raw_bytes)
        args[n++] = "--bytes";
    args[n] = NULL;
    fflush(stdout);
    return summary->run(n, args) ? -EIO : 0;
}

static int run(int argc, char **argv)
{
    struct run_opts o = { 0 };
    int first;
    char prog[PATH_MAX], lib[PATH_MAX];
    char *preload = NULL, *pattern = NULL;
    struct found *caps = NULL;
    size_t ncaps = 0;
    int exit_code = VH_EXIT_DATA;

    if (parse(argc, argv, &o, &first))
        return VH_EXIT_USAGE;
    const char *name = argv[first];

    int rc = find_program(name, prog, sizeof prog);
    if (rc) {
        vh_errorf(CMD, "%s: %s", name, rc == -ENOENT ? "command not found" : strerror(-rc));
        return rc == -ENOENT ? 127 : 126;
    }
    if (check_preloadable(name, prog, 0))
        return VH_EXIT_DATA;
    warn_setid(name, prog);
    if (o.lib) {
        if (access(o.lib, R_OK) || !realpath(o.lib, lib)) {
            vh_errorf(CMD, "--lib %s: %s", o.lib, strerror(errno));
            return VH_EXIT_DATA;
        }
    } else if (find_lib(lib, sizeof lib)) {
        vh_errorf(CMD, "cannot find libvheap.so in %s or %s/../lib; pass --lib PATH", lib,
                  lib);
        return VH_EXIT_DATA;
    }

    const char *pat = o.out ? o.out : getenv("VHEAP_OUT");
    if (!pat || !*pat)
        pat = "vheap.%e.%p.vhcap";
    if (!(pattern = absolute_pattern(pat)) || make_preload(lib, &preload)) {
        vh_errorf(CMD, "out of memory");
        goto out;
    }

    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t t0 = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    int exec_err = 0;
    int status = spawn(prog, argv + first, preload, pattern, &exec_err);
    if (status < 0) {
        if (exec_err) {
            vh_errorf(CMD, "cannot run %s: %s", name, strerror(exec_err));
            exit_code = exec_err == ENOENT ? 127 : 126;
        } else {
            vh_errorf(CMD, "cannot start %s: %s", name, strerror(-status));
        }
        goto out;
    }
    int child_code;
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        child_code = 128 + sig;
        vh_errorf(CMD, "%s was killed by signal %d (%s)%s", name, sig, strsignal(sig),
                  WCOREDUMP(status) ? ", core dumped" : "");
    } else {
        child_code = WEXITSTATUS(status);
    }

    char *dir = pattern_dir(pattern);
    if (!dir)
        vh_errorf(CMD, "warning: the capture directory in '%s' depends on the process; "
                       "captures are not listed", pattern);
    else
        ncaps = find_captures(dir, last_pid, t0, &caps);
    free(dir);
    ssize_t mi = main_capture(caps, ncaps, last_pid);
    int unrecorded = mi >= 0 && exec_unrecorded(&caps[mi], 0);
    list_captures(caps, ncaps, mi, unrecorded ? NULL : o.no_load ? "captured" : "summarized");
    if (mi < 0) {
        vh_errorf(CMD, "no capture of %s (pid %d) was written under %s: was libvheap.so "
                       "loaded? (static and set-ID programs, and programs that clear "
                       "LD_PRELOAD, cannot be recorded)",
                  name, (int)last_pid, pattern);
        exit_code = child_code ? child_code : VH_EXIT_DATA;
        goto out;
    }
    if (unrecorded && exec_unrecorded(&caps[mi], 1)) {
        exit_code = child_code ? child_code : VH_EXIT_DATA;
        goto out;
    }
    if (child_code) {
        exit_code = child_code;
        if (!o.no_load)
            load_and_summarize(caps[mi].path, &o);
        goto out;
    }
    exit_code = o.no_load || !load_and_summarize(caps[mi].path, &o) ? VH_EXIT_OK : VH_EXIT_DATA;
out:
    for (size_t i = 0; i < ncaps; i++)
        free(caps[i].path);
    free(caps);
    free(preload);
    free(pattern);
    return exit_code;
}
