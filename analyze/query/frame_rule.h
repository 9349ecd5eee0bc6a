/* query/frame_rule.h — which frames of a stack are allocator or runtime
 * machinery, and so which frames name a stack: the one rule behind the
 * stack names of `series` (its top stacks) and `frag` (its stacks and map
 * legend), so both name a stack after the same frame. */
#ifndef VHEAP_FRAME_RULE_H
#define VHEAP_FRAME_RULE_H

#include <stddef.h>
#include <stdint.h>

#include "analyze/util/path.h"   /* vh_base_name: named frames use it */
#include "analyze/render/output.h"

/* Longest short name (vh_fn_short) before outer namespaces are cut. */
#define VH_FN_SHORT_MAX 48

/* One logical frame: a physical frame or a function inlined into it. */
struct vh_lframe {
    const char *function, *file, *module;
    int64_t line, address, offset;
    int has_offset;
};

/* The stack's frames with the inlined ones (each physical frame followed by
 * what was inlined into it, innermost first), at most `max`: the count. */
size_t vh_lframes(const struct out_stack *st, struct vh_lframe *lf, size_t max);

/* The name of a demangled function without return type, template
 * arguments, parameters, qualifiers or compiler suffixes: "void
 * std::vector<int>::_M_realloc_insert<int>(int&&)" ->
 * "std::vector::_M_realloc_insert", "hold.constprop.0" -> "hold". */
void vh_fn_short(const char *s, char *out, size_t len);

/* True if the frame is the allocator's or the runtime's (libc, libstdc++,
 * the loader, an allocator library, std::, operator new, a *alloc wrapper,
 * an inline function from /usr/include, ...): it says nothing about who
 * allocated. */
int vh_frame_machinery(const struct vh_lframe *f);

/* How well a frame names its stack: machinery never does; a frame whose
 * function has no name (a stripped library's static function, such as
 * sqlite's and CPython's own malloc wrappers) only when no frame outside
 * the machinery has a name, else every row of a stripped program would
 * read the same module+0xOFFSET. */
enum vh_naming { VH_NAMING_NEVER, VH_NAMING_ADDRESS, VH_NAMING_FUNCTION };
enum vh_naming vh_frame_naming(const struct vh_lframe *f);

/* The indexes of the first `want` frames of lf[0..n) (innermost first)
 * that name the stack best (vh_frame_naming); when all are machinery, the
 * innermost one. The count. */
size_t vh_naming_frames(const struct vh_lframe *lf, size_t n, size_t *pick, size_t want);

/* The name a frame goes by in a legend: its function's short name
 * (vh_fn_short), else module+0xOFFSET, else 0xADDRESS. */
void vh_frame_name(const struct vh_lframe *f, char *buf, size_t len);

#endif
