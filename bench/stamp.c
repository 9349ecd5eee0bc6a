/* stamp.c — times one program run for bench/run.sh: wall, user and system
 * time and peak RSS of the child, written as one line to a result file.
 * Built static so that LD_PRELOAD (heaptrack's or vheap's) passes through it
 * to the program without profiling the timer itself; this is what lets the
 * bench time only the program run, not heaptrack's wrapper script or its
 * interpreter draining the pipe after the program has exited.
 *
 * usage: stamp RESULT_FILE PROGRAM [ARGS...]
 * RESULT_FILE gets "wall_s user_s sys_s maxrss_kib exit_status\n"; stamp
 * exits with the program's status (128+signal if it was killed). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double seconds(struct timespec a, struct timespec b)
{
    return (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
}

static double tv_seconds(struct timeval t)
{
    return (double)t.tv_sec + (double)t.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: stamp RESULT_FILE PROGRAM [ARGS...]\n");
        return 2;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "stamp: fork: %s\n", strerror(errno));
        return 1;
    }
    if (pid == 0) {
        execvp(argv[2], argv + 2);
        fprintf(stderr, "stamp: %s: %s\n", argv[2], strerror(errno));
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "stamp: wait4: %s\n", strerror(errno));
            return 1;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);

    char line[160];
    int n = snprintf(line, sizeof line, "%.6f %.6f %.6f %ld %d\n", seconds(t0, t1),
                     tv_seconds(ru.ru_utime), tv_seconds(ru.ru_stime), ru.ru_maxrss, rc);
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, line, (size_t)n) != n) {
        fprintf(stderr, "stamp: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    close(fd);
    return rc;
}
