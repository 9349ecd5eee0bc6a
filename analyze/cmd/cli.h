/* cli.h — how subcommands of vheap-analyze register themselves.
 *
 * Each subcommand lives in its own analyze/cmd/<name>.c, with its usage text
 * beside its code, and registers with VH_COMMAND(); main.c finds them through
 * the linker section, so adding a command touches no shared table.
 * Diagnostics and exit codes: util/diag.h. */
#ifndef VHEAP_CLI_H
#define VHEAP_CLI_H

#include <stdio.h>

#include "analyze/util/diag.h"

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

/* True if argv[i] is -h or --help; prints the usage to stdout. */
int vh_wants_help(const struct vh_command *cmd, int argc, char **argv);

/* getopt_long() for a subcommand (argv[0] is its name): options may come
 * between the operands (argv is permuted: the operands end up in
 * argv[optind..argc)); "--" ends the options; a long option must be spelled
 * out (no abbreviations: "--form" stays an unknown option). Start with
 * optind = 0. Returns the option's val; -1 at the end; '?' for an unknown
 * option, after printing "unknown option 'ARG' (see vheap-analyze CMD
 * --help)"; ':' when an option's value is missing (not printed: *arg names
 * the option as typed). *arg is the element the option came from. The
 * short options must start with ':'. */
struct option;
int vh_getopt(const struct vh_command *cmd, int argc, char **argv, const char *shortopts,
              const struct option *longopts, const char **arg);

/* The registered command called `name`, or NULL. */
const struct vh_command *vh_command_find(const char *name);

#endif
