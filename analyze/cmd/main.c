/* main.c — vheap-analyze's entry point: finds the subcommand and runs it.
 * The subcommands register themselves (cli.h); this file only dispatches and
 * prints the overview. */
#include <stdlib.h>
#include <string.h>

#include "analyze/cmd/cli.h"
#include "analyze/store/db.h"
#include "common/capture_format.h"

extern const struct vh_command __start_vh_commands[];
extern const struct vh_command __stop_vh_commands[];

static int by_order(const void *a, const void *b)
{
    const struct vh_command *x = *(const struct vh_command *const *)a;
    const struct vh_command *y = *(const struct vh_command *const *)b;
    return x->order != y->order ? (x->order > y->order) - (x->order < y->order)
                                : strcmp(x->name, y->name);
}

static void overview(FILE *out)
{
    size_t n = (size_t)(__stop_vh_commands - __start_vh_commands);
    const struct vh_command *list[n ? n : 1];
    for (size_t i = 0; i < n; i++)
        list[i] = &__start_vh_commands[i];
    qsort(list, n, sizeof list[0], by_order);
    fputs("usage: vheap-analyze COMMAND [ARGS...]\n\n"
          "Reads vheap captures (written by LD_PRELOAD=libvheap.so) and answers\n"
          "questions about them. `vheap-analyze COMMAND --help` shows a command's\n"
          "options and examples. `vheap-analyze --version` prints the version.\n"
          "\ncommands:\n", out);
    for (size_t i = 0; i < n; i++)
        fprintf(out, "  %-10s %s\n", list[i]->name, list[i]->summary);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        overview(stderr);
        return VH_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        if (argc > 2 && vh_command_find(argv[2])) {
            fputs(vh_command_find(argv[2])->usage, stdout);
            return VH_EXIT_OK;
        }
        overview(stdout);
        return VH_EXIT_OK;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
        printf("vheap-analyze %s (reads capture format %u to %u, writes database schema %d)\n",
               VHEAP_VERSION, VH_CAPTURE_VERSION_V1, VH_CAPTURE_VERSION, VH_SCHEMA_VERSION);
        return VH_EXIT_OK;
    }
    const struct vh_command *cmd = vh_command_find(argv[1]);
    if (!cmd) {
        vh_errorf(NULL, "unknown command '%s' (see vheap-analyze --help)", argv[1]);
        return VH_EXIT_USAGE;
    }
    if (vh_wants_help(cmd, argc - 1, argv + 1))
        return VH_EXIT_OK;
    return cmd->run(argc - 1, argv + 1);
}
