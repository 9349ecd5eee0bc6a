/* deepbind_user.c — `deepbind_user LIBPATH`: allocates a block (1000 B),
 * dlopens LIBPATH (libdeepbind.so) with RTLD_NOW | RTLD_DEEPBIND, has the
 * library free that block, allocate one it frees itself (2000 B) and one
 * that is leaked (3000 B). Leaked in all: 3000 bytes, one block. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef void release_fn(void *);
typedef void *make_fn(size_t);

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: deepbind_user LIBPATH\n");
        return 2;
    }
    void *volatile mine = malloc(1000);
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_DEEPBIND);
    if (!h) {
        fprintf(stderr, "deepbind_user: %s\n", dlerror());
        return 3;
    }
    release_fn *release = (release_fn *)dlsym(h, "db_release");
    make_fn *make = (make_fn *)dlsym(h, "db_make");
    if (!release || !make)
        return 4;
    /* What programs do after a dlopen: allocate. (The shim binds the
     * library's slots when it next looks at the module list.) */
    void *volatile scratch = malloc(77);
    free(scratch);
    release(mine);                 /* allocated by the program, freed by the library */
    void *volatile own = make(2000);
    free(own);                     /* allocated by the library, freed by the program */
    void *volatile leak = make(3000);
    (void)leak;
    printf("leaked=3000 blocks=1\n");
    return 0;
}
