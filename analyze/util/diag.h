/* diag.h — how every layer of the analyzer reports: one line on stderr,
 * prefixed "vheap-analyze: <command>: ", with the bytes of names other people
 * chose (files, programs, labels) made harmless; and the exit codes and the
 * version every command shares. Commands themselves register in cmd/cli.h. */
#ifndef VHEAP_DIAG_H
#define VHEAP_DIAG_H

/* Exit codes: 0 success, 1 runtime or data error, 2 usage error. */
enum { VH_EXIT_OK = 0, VH_EXIT_DATA = 1, VH_EXIT_USAGE = 2 };

/* What `vheap-analyze --version` prints and meta.vheap_version records
 * (the Makefile's pkg-config file says the same). */
#ifndef VHEAP_VERSION
#define VHEAP_VERSION "0.1"
#endif

/* Prints "vheap-analyze: <cmd>: <message>" to stderr, control bytes in it
 * shown as \xNN. cmd may be NULL (no command part). */
void vh_errorf(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A line to stderr without the prefix ("loaded ... into ..."); control
 * bytes escaped as in vh_errorf. */
void vh_notef(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
