// cxx_new_jemalloc.cc — cxx_new.cc linked with -ljemalloc (GNUmakefile), so
// that jemalloc's operator new and delete replace libstdc++'s: the same
// calls, the same capture.
#include "cxx_new.cc"
