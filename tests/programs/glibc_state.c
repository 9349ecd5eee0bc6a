/* glibc_state.c — `glibc_state time|mixed`: leaks only what glibc keeps for
 * the process's life (time: heaptrack's tests/manual/libc_leaks, tzset's
 * state through gmtime_r and strftime), or that plus nss's modules, a
 * localtime, stdio's buffer and one block of the program's own (mixed:
 * 1234 bytes, leaked on purpose). The test compares `summary`'s leaked and
 * suppressed with heaptrack_print's. */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    time_t t = time(0);
    struct tm tmbuf;
    char buf[16];
    gmtime_r(&t, &tmbuf);
    strftime(buf, sizeof buf, "%d", &tmbuf);
    if (argc > 1 && strcmp(argv[1], "mixed") == 0) {
        struct passwd *pw = getpwuid(getuid());
        printf("hour %d user %s\n", localtime(&t)->tm_hour, pw ? pw->pw_name : "?");
        void *volatile mine = malloc(1234);
        (void)mine;
    }
    return 0;
}
