/* live_read.c — `live_read READY GO`: allocates a first batch, prints what
 * it did, says "ready" on the fifo READY and blocks reading the fifo GO
 * until the test has read the capture of the still-running process; then
 * allocates a second batch and exits. */
#include "testprog.h"

#include <fcntl.h>
#include <malloc.h>

USER static void batch(int n, size_t base)
{
    for (int i = 0; i < n; i++) {
        void *p = malloc(base + (size_t)i);
        TP_CHECK(p);
        tp_alloc("malloc", p, base + (size_t)i, malloc_usable_size(p), NULL);
        if (i % 3 == 0) {
            tp_free("free", p, NULL);
            free(p);
        }
    }
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: live_read READY GO\n");
        return 2;
    }
    tp_range();
    batch(50, 600);
    tp_expect();
    tp_flush();

    int fd = open(argv[1], O_WRONLY);
    TP_CHECK(fd >= 0 && write(fd, "ready\n", 6) == 6);
    close(fd);
    char buf[64];
    fd = open(argv[2], O_RDONLY);
    TP_CHECK(fd >= 0);
    while (read(fd, buf, sizeof buf) > 0)
        ;
    close(fd);

    batch(30, 1600);
    tp_expect();
    tp_flush();
    return 0;
}
