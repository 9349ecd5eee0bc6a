/* term.h — a full-screen view in a terminal: keys read one at a time
 * without echo, the screen redrawn in place, its size. Knows nothing of
 * what is shown. One terminal per process. */
#ifndef VHEAP_TERM_H
#define VHEAP_TERM_H

/* Takes the terminal when stdin and stdout both are one: keys unbuffered
 * and not echoed, the alternate screen, no cursor. 1 when taken, 0 when
 * either is not a terminal (the caller writes plain text), -errno. */
int vh_term__open(void);

/* Gives the terminal back as it was; nothing if it was not taken. */
void vh_term__close(void);

/* Waits up to timeout_ms for a key: the key (a byte), 0 on timeout or a
 * signal, -1 at the end of input. */
int vh_term__key(int timeout_ms);

/* Columns and rows of the terminal (80 x 24 when unknown). */
void vh_term__size(int *cols, int *rows);

/* The escape sequence that moves to the top left and clears the screen. */
#define VH_TERM_HOME "\033[H\033[2J"

#endif
