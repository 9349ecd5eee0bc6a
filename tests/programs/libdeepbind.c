/* libdeepbind.c — loaded with RTLD_DEEPBIND by deepbind_user: its malloc
 * and free bind to libc's in its own scope, past a preloaded shim. */
#include <stdlib.h>

void db_release(void *p)
{
    free(p);
}

void *db_make(size_t n)
{
    return malloc(n);
}
