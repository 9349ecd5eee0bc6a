/* cli.h — how subcommands of vheap-analyze register themselves.
 *
 * Each subcommand lives in its own analyze/cmd_<name>.c, with its usage text
 * beside its code, and registers with VH_COMMAND(); main.c finds them through
 * the linker section, so adding a command touches no shared table.
 * Exit codes: 0 success, 1 runtime or data error, 2 usage error. */
#ifndef VHEAP_CLI_H
#define VHEAP_CLI_H

#include <stdio.h>

struct vh_command {
    const char *name;
    const char *summary;           /* one line for `vheap-analyze --help`   */
    const char *usage;             /* full --help text, examples included   */
    int (*run)(int argc, char **argv); /* argv[0] is the command name        */
    int order;                     /* position in the help listing          */
};

#define VH_COMMAND(ident, ...)                                                \
    static const struct vh_command ident                                      \
        __attribute__((used, section("vh_commands"), aligned(8))) = __VA_ARGS__

enum { VH_EXIT_OK = 0, VH_EXIT_DATA = 1, VH_EXIT_USAGE = 2 };

/* What `vheap-analyze --version` prints and meta.vheap_version records
 * (the Makefile's pkg-config file says the same). */
#ifndef VHEAP_VERSION
#define VHEAP_VERSION "0.1"
#endif

/* Prints "vheap-analyze: <cmd>: <message>" to stderr, control bytes in it
 * shown as \xNN. */
void vh_errorf(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A line to stderr without the prefix ("loaded ... into ..."); control
 * bytes escaped as in vh_errorf. */
void vh_notef(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* True if argv[i] is -h or --help; prints the usage to stdout. */
int vh_wants_help(const struct vh_command *cmd, int argc, char **argv);

/* The registered command called `name`, or NULL. */
const struct vh_command *vh_command_find(const char *name);

#endif
