/* libdlrb.c — libdlra.c under another name (dl_bravo_make), for dlreload.c. */
#define DLR_MAKE dl_bravo_make
#include "libdlra.c"
