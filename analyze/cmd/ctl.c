/* cmd/ctl.c — `vheap-analyze ctl`: switches recording of a running program
 * on or off, or marks a moment, through the control words in its capture's
 * shared header page (common/capture_format.h: ctl, ctl_mark, ctl_mark_seq),
 * which the shim polls. The capture of a live process: cmd/livecap.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze/cmd/cli.h"
#include "analyze/cmd/livecap.h"
#include "common/capture_format.h"

static int run(int argc, char **argv);

VH_COMMAND(cmd_ctl, {
    .name = "ctl",
    .summary = "start, stop or mark recording of a running program",
    .order = 22,
    .run = run,
    .usage =
        "usage: vheap-analyze ctl start|stop|status|reach CAPTURE|PID\n"
        "       vheap-analyze ctl mark LABEL CAPTURE|PID\n"
        "\n"
        "Controls a program running under vheap without restarting it, through\n"
        "its capture's header page: `start` switches recording on, `stop` pauses\n"
        "it (allocator calls then cost the shim a check and are not recorded),\n"
        "`mark` writes a MARK record with LABEL (at most 63 bytes), `status`\n"
        "prints the program's state. The program acts at its next allocator call\n"
        "while paused, or at its next RSS sample (VHEAP_RSS_INTERVAL) while\n"
        "recording. A program started with VHEAP_START=paused records nothing\n"
        "until `ctl start`. The capture keeps WINDOW records of when recording\n"
        "was on; queries say which windows their numbers cover.\n"
        "\n"
        "`reach` asks for a reachability scan now (a full capture, recording):\n"
        "the scan the program makes at exit (docs/usage.md), in a snapshot\n"
        "copy of the process, whose classes `leaks --scan N` shows (scans are\n"
        "numbered from 1, in order; the reach table lists them). The thread\n"
        "that takes the request waits for the scan, at most\n"
        "VHEAP_REACH_TIMEOUT; the program's other threads run on.\n"
        "\n"
        "With a PID, the capture is the file that process maps whose header\n"
        "names it (see /proc/PID/maps), whatever its name (run.vhcap.1 too);\n"
        "with a CAPTURE, the process is the pid in its header,\n"
        "which must be running and map that file. Writing needs permission to\n"
        "write the capture.\n"
        "\n"
        "status prints one line: recording=1|0 sample_rate=BYTES pid=PID\n"
        "request=none|start|stop marks=N capture=PATH.\n"
        "\n"
        "examples:\n"
        "  VHEAP_START=paused VHEAP_SAMPLE=512KiB vheap-analyze record -- ./server &\n"
        "  vheap-analyze ctl start $(pidof server)\n"
        "  vheap-analyze ctl mark 'after warmup' vheap.server.4242.vhcap\n"
        "  vheap-analyze ctl stop vheap.server.4242.vhcap\n"
        "  vheap-analyze ctl status 4242\n"
        "  vheap-analyze ctl reach 4242 && vheap-analyze leaks --scan 1 --class lost \\\n"
        "      vheap.server.4242.vhcap   # after the program ended\n"
        "\n"
        "exit status: 0 done; 1 not the capture of a live vheap process, or not\n"
        "writable; 2 usage error.\n",
});

static const char *me = "ctl";

/* Maps the header page of the capture of a live process, writable unless
 * `ro`. Prints why not and returns NULL. */
static struct vh_capture_header *open_live(const char *arg, int ro, char *path, size_t pathlen)
{
    struct vh_livecap lc;
    struct vh_capture_header *h;
    int fd;

    if (vh_livecap__find(me, arg, &lc))
        return NULL;
    snprintf(path, pathlen, "%s", lc.path);
    if ((fd = open(path, (ro ? O_RDONLY : O_RDWR) | O_CLOEXEC)) < 0) {
        vh_errorf(me, "%s: %s", path, strerror(errno));
        return NULL;
    }
    h = mmap(NULL, VH_HEADER_SIZE, PROT_READ | (ro ? 0 : PROT_WRITE), MAP_SHARED, fd, 0);
    close(fd);
    if (h == MAP_FAILED) {
        vh_errorf(me, "%s: mmap: %s", path, strerror(errno));
        return NULL;
    }
    return h;
}

/* `ctl mark PID LABEL`: the target names nothing and the label is what a
 * target should be. Said as the usage error it is, not as the label's ENOENT. */
static int swapped(const char *label, const char *target)
{
    struct stat sb;
    if (vh_livecap__is_pid(target) || !stat(target, &sb))
        return 0;
    return vh_livecap__is_pid(label) || !stat(label, &sb);
}

static const char *request_name(uint32_t c)
{
    return c == VH_CTL_START ? "start" : c == VH_CTL_STOP ? "stop"
                                 : c == VH_CTL_REACH ? "reach" : "none";
}

static int run(int argc, char **argv)
{
    const char *verb, *label = NULL, *target;
    struct vh_capture_header *h;
    char path[4096];
    int want;

    if (vh_wants_help(&cmd_ctl, argc, argv))
        return VH_EXIT_OK;
    if (argc < 3) {
        vh_errorf(me, "wants start|stop|status|mark LABEL and a CAPTURE or PID "
                      "(see vheap-analyze ctl --help)");
        return VH_EXIT_USAGE;
    }
    verb = argv[1];
    if (!strcmp(verb, "mark")) {
        if (argc != 4) {
            vh_errorf(me, "usage: ctl mark LABEL CAPTURE|PID");
            return VH_EXIT_USAGE;
        }
        label = argv[2];
        if (strlen(label) >= sizeof h->ctl_mark) {
            vh_errorf(me, "a mark's label has at most %zu bytes", sizeof h->ctl_mark - 1);
            return VH_EXIT_USAGE;
        }
        target = argv[3];
        if (swapped(label, target)) {
            vh_errorf(me, "'%s' is neither a capture nor a PID, and '%s' is one: the label "
                          "comes first (usage: ctl mark LABEL CAPTURE|PID)", target, label);
            return VH_EXIT_USAGE;
        }
        want = VH_CTL_NONE;
    } else if (!strcmp(verb, "start") || !strcmp(verb, "stop") || !strcmp(verb, "status") ||
               !strcmp(verb, "reach")) {
        if (argc != 3) {
            vh_errorf(me, "usage: ctl %s CAPTURE|PID", verb);
            return VH_EXIT_USAGE;
        }
        target = argv[2];
        want = !strcmp(verb, "start")  ? VH_CTL_START
               : !strcmp(verb, "stop")  ? VH_CTL_STOP
               : !strcmp(verb, "reach") ? VH_CTL_REACH
                                        : VH_CTL_NONE;
    } else {
        vh_errorf(me, "unknown request '%s': start, stop, status, reach or mark LABEL", verb);
        return VH_EXIT_USAGE;
    }

    if (!(h = open_live(target, !strcmp(verb, "status"), path, sizeof path)))
        return VH_EXIT_DATA;
    if (want == VH_CTL_REACH && (h->sample_rate || !__atomic_load_n(&h->recording, __ATOMIC_ACQUIRE))) {
        vh_errorf(me, "pid %" PRIu32 ": a reachability scan needs every block recorded: %s",
                  h->pid, h->sample_rate ? "the capture is sampled (VHEAP_SAMPLE)"
                                         : "recording is paused (ctl start first)");
        munmap(h, VH_HEADER_SIZE);
        return VH_EXIT_DATA;
    }
    if (!strcmp(verb, "status")) {
        printf("recording=%u sample_rate=%" PRIu64 " pid=%" PRIu32 " request=%s marks=%" PRIu32
               " capture=%s\n",
               __atomic_load_n(&h->recording, __ATOMIC_ACQUIRE), h->sample_rate, h->pid,
               request_name(__atomic_load_n(&h->ctl, __ATOMIC_ACQUIRE)),
               __atomic_load_n(&h->ctl_mark_seq, __ATOMIC_ACQUIRE), path);
    } else if (label) {
        /* the label first, then the sequence the shim watches */
        memset(h->ctl_mark, 0, sizeof h->ctl_mark);
        memcpy(h->ctl_mark, label, strlen(label));
        uint32_t seq = __atomic_add_fetch(&h->ctl_mark_seq, 1, __ATOMIC_RELEASE);
        printf("pid %" PRIu32 ": mark %" PRIu32 " '%s' requested\n", h->pid, seq, label);
    } else {
        __atomic_store_n(&h->ctl, (uint32_t)want, __ATOMIC_RELEASE);
        printf("pid %" PRIu32 ": %s requested (recording now: %s; the program acts at its next "
               "allocator call or RSS sample)\n",
               h->pid, verb, __atomic_load_n(&h->recording, __ATOMIC_ACQUIRE) ? "on" : "off");
    }
    munmap(h, VH_HEADER_SIZE);
    return VH_EXIT_OK;
}
