/* deep_recurse.c — bench/recurse.c (the shape of Vere's nock interpreter:
 * descents hundreds of levels deep through three mutually recursive
 * functions, an allocation at every level) built a second time, with frame
 * pointers (the pragma, before the functions), so that VHEAP_UNWIND=fp
 * walks every stack from nothing: the default walker's stacks, cut at
 * VHEAP_DEPTH and mostly known from other depths (preload/cfi.c's relative
 * walks), must be the same frames (tests/integration/deep_recurse.sh runs
 * `deep_recurse deep EVENTS`). */
#pragma GCC optimize("no-omit-frame-pointer")
#include "bench/recurse.c"
