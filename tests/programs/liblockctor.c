/* liblockctor.c — the library the lock matrix's dlopen cell loads: its
 * constructor allocates while ld.so holds its load lock and runs
 * constructors (liblockcell.c). */
#include <stdlib.h>

void *lockctor_block;

__attribute__((constructor)) static void lockctor_init(void)
{
    lockctor_block = malloc(64);
}
