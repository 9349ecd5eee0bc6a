/* cli.c — what every subcommand shares: --help detection and lookup in the
 * self-registered command table (cli.h). Kept out of main.c so unit tests
 * can link the commands without main(). */
#include <getopt.h>
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

/* Is `el` a short-option element that holds letter c ("-c", "-cVALUE",
 * "-xc")? */
static int short_el(const char *el, int c)
{
    return el && el[0] == '-' && el[1] && el[1] != '-' && strchr(el + 1, c);
}

int vh_getopt(const struct vh_command *cmd, int argc, char **argv, const char *shortopts,
              const struct option *longopts, const char **arg)
{
    int li = -1;
    opterr = 0;
    int c = getopt_long(argc, argv, shortopts, longopts, &li);
    if (c == -1)
        return -1;
    const char *prev = optind - 1 > 0 && optind - 1 < argc ? argv[optind - 1] : NULL;
    const char *cur = optind < argc ? argv[optind] : NULL;
    if (li >= 0 || (c == '?' && !optopt) || (c == ':' && (!prev || prev[1] == '-'))) {
        /* a long option: its element, before a value given apart */
        int at = optind - 1;
        if (c != '?' && c != ':' && optarg && at > 1 && optarg == argv[at])
            at--;
        *arg = at > 0 && at < argc ? argv[at] : "";
        size_t n = li >= 0 ? strlen(longopts[li].name) : 0;
        if (li >= 0 && c != '?' && (strncmp(*arg + 2, longopts[li].name, n) ||
                                    ((*arg)[2 + n] && (*arg)[2 + n] != '=')))
            c = '?';                       /* an abbreviation */
    } else {
        /* A short option: "-o VALUE" or "-o=VALUE" alone in its element, as
         * ever (no "-oVALUE", no clusters like "-qv"). */
        int letter = c == '?' || c == ':' ? optopt : c;
        if (optarg && optarg == prev && optind - 2 > 0) {
            *arg = argv[optind - 2];
        } else if (optarg) {
            *arg = prev;
            if (optarg[0] == '=' && optarg == prev + 2)
                optarg++;
            else
                c = '?';
        } else if (short_el(cur, letter) && !(prev && prev[0] == '-' && prev[1] == letter &&
                                               !prev[2] && c != '?')) {
            *arg = cur;                    /* still inside a cluster */
        } else {
            *arg = prev ? prev : "";
        }
        if (c != '?' && ((*arg)[1] != letter || ((*arg)[2] && (*arg)[2] != '=')))
            c = '?';
    }
    if (c == '?')
        vh_errorf(cmd->name, "unknown option '%s' (see vheap-analyze %s --help)", *arg, cmd->name);
    return c;
}

const struct vh_command *vh_command_find(const char *name)
{
    for (const struct vh_command *c = __start_vh_commands; c < __stop_vh_commands; c++)
        if (!strcmp(c->name, name))
            return c;
    return NULL;
}
