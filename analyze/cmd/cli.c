/* cli.c — what every subcommand shares: --help detection and lookup in the
 * self-registered command table (cli.h). Kept out of main.c so unit tests
 * can link the commands without main(). */
#include <stdio.h>
#include <string.h>

#include "analyze/cmd/cli.h"

extern const struct vh_command __start_vh_commands[];
extern const struct vh_command __stop_vh_commands[];

int vh_wants_help(const struct vh_command *cmd, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--"))
            break;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(cmd->usage, stdout);
            return 1;
        }
    }
    return 0;
}

const struct vh_command *vh_command_find(const char *name)
{
    for (const struct vh_command *c = __start_vh_commands; c < __stop_vh_commands; c++)
        if (!strcmp(c->name, name))
            return c;
    return NULL;
}
