/* demangle.h — turning C++ and Rust symbol names into what people wrote.
 * Used by the symbolizer (analyze/symbols/symbols.c) on DWARF linkage names and ELF
 * symbol names; kept apart so it can be tested on its own. */
#ifndef VHEAP_DEMANGLE_H
#define VHEAP_DEMANGLE_H

/* The readable form of `name`, malloc'd (the caller frees it), or NULL when
 * `name` is not a mangled name this knows (plain C names, unknown schemes,
 * malformed input) — then show `name` as it is. A Rust legacy name with an
 * escape rustc does not make keeps that part as it is.
 *   _Z...   C++ (Itanium ABI), through libstdc++'s __cxa_demangle, loaded
 *           lazily with dlopen; NULL if libstdc++.so.6 is not installed.
 *   _ZN...17h<16 hex>E  Rust legacy: the path, without the ::h<hash>.
 *   _R...   Rust v0: the path with generic arguments, without crate
 *           disambiguators (rustc-demangle's "{:#}" form).
 * Clone and LLVM suffixes (".constprop.0", ".llvm.123") are kept by C++ and
 * dropped for Rust. Not thread-safe on the first C++ call (the dlopen). */
char *vh_demangle(const char *name);

#endif
