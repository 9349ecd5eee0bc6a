/* cli.c — helpers every subcommand shares: error messages, --help
 * detection and lookup in the self-registered command table (cli.h). Kept out
 * of main.c so unit tests can link the commands without main(). */
#include <stdarg.h>
#include <string.h>

#include "analyze/cli.h"

extern const struct vh_command __start_vh_commands[];
extern const struct vh_command __stop_vh_commands[];

/* Diagnostics name files, programs and labels that other people chose: a
 * control byte in them is shown as \xNN, never sent to the terminal raw
 * (newlines and tabs of the message itself stay). */
static void put_diag(const char *prefix, const char *fmt, va_list ap)
{
    char buf[8192];
    vsnprintf(buf, sizeof buf, fmt, ap);
    fputs(prefix, stderr);
    for (const unsigned char *p = (const unsigned char *)buf; *p; p++) {
        if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f)
            fprintf(stderr, "\\x%02x", *p);
        else
            fputc(*p, stderr);
    }
    fputc('\n', stderr);
}

void vh_errorf(const char *cmd, const char *fmt, ...)
{
    char prefix[128];
    va_list ap;
    snprintf(prefix, sizeof prefix, "vheap-analyze: %s%s", cmd ? cmd : "", cmd ? ": " : "");
    va_start(ap, fmt);
    put_diag(prefix, fmt, ap);
    va_end(ap);
}

void vh_notef(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    put_diag("", fmt, ap);
    va_end(ap);
}

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
