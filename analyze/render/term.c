/* render/term.c — the terminal of a full-screen view (term.h): termios raw
 * enough to read single keys (signals still raised by ^C), the alternate
 * screen, and the state restored by vh_term__close. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "analyze/render/term.h"

static struct termios saved;
static int taken;

int vh_term__open(void)
{
    struct termios raw;
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))
        return 0;
    if (tcgetattr(STDIN_FILENO, &saved))
        return -errno;
    raw = saved;
    raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    if (tcsetattr(STDIN_FILENO, TCSANOW, &raw))
        return -errno;
    taken = 1;
    fputs("\033[?1049h\033[?25l", stdout);    /* alternate screen, no cursor */
    fflush(stdout);
    return 1;
}

void vh_term__close(void)
{
    if (!taken)
        return;
    fputs("\033[?25h\033[?1049l", stdout);
    fflush(stdout);
    tcsetattr(STDIN_FILENO, TCSANOW, &saved);
    taken = 0;
}

int vh_term__key(int timeout_ms)
{
    struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
    unsigned char c;
    int n = poll(&p, 1, timeout_ms);
    if (n <= 0)
        return 0;                  /* timeout, or a signal (EINTR) */
    ssize_t r = read(STDIN_FILENO, &c, 1);
    if (r == 1)
        return c ? c : ' ';
    return r == 0 || errno != EINTR ? -1 : 0;
}

void vh_term__size(int *cols, int *rows)
{
    struct winsize w;
    *cols = 80;
    *rows = 24;
    if (!ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) && w.ws_col && w.ws_row) {
        *cols = w.ws_col;
        *rows = w.ws_row;
    }
}
