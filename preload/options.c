/* options.c — the one table of VHEAP_* environment variables.
 *
 * Read straight from `environ` at initialization (which may happen inside
 * the first malloc, before libc's constructors), so: no getenv, no malloc.
 * A bad value gets one warning naming the variable and keeps the default. */
#include <stddef.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>

#include "common/size_parse.h"
#include "preload/internal.h"

extern char **environ;

struct vh_options vh_opt;           /* every field set by vh_options_load */

enum kind { K_PATH, K_UINT, K_CHOICE, K_BOOL, K_SIZE, K_MS, K_BYTES, K_SIGNAL };

/* One row an option: adding an option is a row here and its field in
 * struct vh_options (internal.h), nothing else in this file. */
struct option {
    const char *name;
    enum kind kind;
    size_t off, size;              /* its field in vh_opt                   */
    uint64_t def;                  /* the default; K_MS in ms               */
    const char *def_path;          /* K_PATH: the default                   */
    uint64_t min, max;             /* K_UINT, K_SIZE, K_MS bounds           */
    const char *const *choices;    /* K_CHOICE: value i stored as i         */
    const char *want;              /* the doc line, and the warning's words:
                                      what is accepted                     */
};

#define FIELD(f) offsetof(struct vh_options, f), sizeof(((struct vh_options *)0)->f)

/* The unwinders' rows (internal.h): their words, and each with its doc. */
#define UNWIND_NAME(kind, name, init, cfi, walk, doc) [kind] = name,
#define UNWIND_WANT(kind, name, init, cfi, walk, doc) " " name " (" doc ")"
static const char *const unwind_names[] = { VH_UNWINDERS(UNWIND_NAME) NULL };
static const char *const clock_names[] = { "auto", "precise", NULL };
static const char *const start_names[] = { "on", "paused", NULL };

static const struct option table[] = {
    { "VHEAP_OUT", K_PATH, FIELD(out), 0, "vheap.%e.%p.vhcap", 1, sizeof vh_opt.out - 1, NULL,
      "a path pattern with %p, %e, %%" },
    { "VHEAP_DEPTH", K_UINT, FIELD(depth), 64, NULL, 1, VH_MAX_DEPTH, NULL, "1..256" },
    { "VHEAP_UNWIND", K_CHOICE, FIELD(unwind), VH_UNWIND_LIBUNWIND, NULL, 0, 0, unwind_names,
      "one of" VH_UNWINDERS(UNWIND_WANT) },
    { "VHEAP_QUIET", K_BOOL, FIELD(quiet), 0, NULL, 0, 1, NULL, "0 or 1" },
    { "VHEAP_CHUNK_SIZE", K_SIZE, FIELD(chunk_size), VH_DEFAULT_CHUNK_SIZE, NULL, 64u << 10,
      64u << 20, NULL, "a power of two from 64KiB to 64MiB" },
    { "VHEAP_RSS_INTERVAL", K_MS, FIELD(rss_interval_ns), 10, NULL, 0, 60000, NULL,
      "milliseconds 0..60000, 0 = off" },
    { "VHEAP_ALLOW_SETUID", K_BOOL, FIELD(allow_setuid), 0, NULL, 0, 1, NULL, "0 or 1" },
    { "VHEAP_CLOCK", K_CHOICE, FIELD(clock), VH_CLOCK_AUTO, NULL, 0, 0, clock_names,
      "auto or precise" },
    { "VHEAP_SAMPLE", K_BYTES, FIELD(sample), 0, NULL, 0, 1ull << 40, NULL,
      "a size from 1 to 1TiB (512KiB: a sample every 512 KiB allocated on average), 0 = off" },
    { "VHEAP_START", K_CHOICE, FIELD(start), VH_START_ON, NULL, 0, 0, start_names,
      "on or paused" },
    { "VHEAP_REACH_TIMEOUT", K_MS, FIELD(reach_timeout_ns), 60000, NULL, 0, 3600000, NULL,
      "milliseconds 0..3600000, 0 = no reachability scan at exit" },
    { "VHEAP_SIGNAL", K_SIGNAL, FIELD(signal), 0, NULL, 0, 0, NULL,
      "off, or SIGUSR1, SIGUSR2, SIGHUP, SIGWINCH, SIGURG, SIGPWR, SIGRTMIN+N or a number "
      "that is none of SIGKILL, SIGSTOP and the fault signals" },
};
#define NOPT (sizeof table / sizeof table[0])
_Static_assert(NOPT == VH_OPTION_COUNT, "one row in options.c a field of struct vh_options");

/* The signals VHEAP_SIGNAL may name: ones a program leaves alone or can
 * spare. A fault signal cannot wait for the guard (signals.c), and KILL
 * and STOP cannot be caught. */
static const struct { const char *name; int sig; } signal_names[] = {
    { "HUP", SIGHUP }, { "USR1", SIGUSR1 }, { "USR2", SIGUSR2 },
    { "WINCH", SIGWINCH }, { "URG", SIGURG }, { "PWR", SIGPWR },
};

static int parse_signal(const char *s, uint64_t *out)
{
    uint64_t n;
    if (!strcmp(s, "off") || !strcmp(s, "0")) {
        *out = 0;
        return 0;
    }
    if (!strncmp(s, "SIG", 3))
        s += 3;
    for (size_t i = 0; i < sizeof signal_names / sizeof signal_names[0]; i++) {
        if (!strcmp(s, signal_names[i].name)) {
            *out = (uint64_t)signal_names[i].sig;
            return 0;
        }
    }
    if (!strncmp(s, "RTMIN+", 6)) {
        if (vh_parse_size(s + 6, 0, UINT64_MAX, &n) < 0 || n > (uint64_t)(SIGRTMAX - SIGRTMIN))
            return -1;
        *out = (uint64_t)SIGRTMIN + n;
        return 0;
    }
    if (vh_parse_size(s, 0, UINT64_MAX, &n) < 0 || n < 1 || n >= (uint64_t)_NSIG || n == SIGKILL ||
        n == SIGSTOP || n == SIGSEGV || n == SIGBUS || n == SIGILL || n == SIGFPE ||
        n == SIGTRAP || n == SIGSYS)
        return -1;
    *out = n;
    return 0;
}

static int parse_bool(const char *s, uint64_t *out)
{
    if (!strcmp(s, "1") || !strcmp(s, "yes") || !strcmp(s, "true"))
        *out = 1;
    else if (!strcmp(s, "0") || !strcmp(s, "no") || !strcmp(s, "false"))
        *out = 0;
    else
        return -1;
    return 0;
}

/* Parses `val` for option `o`; 0 and the value in *num, or -1. */
static int parse(const struct option *o, const char *val, uint64_t *num)
{
    switch (o->kind) {
    case K_PATH: {
        size_t n = strlen(val);
        return n >= o->min && n <= o->max ? 0 : -1;
    }
    case K_CHOICE:
        for (uint64_t i = 0; o->choices[i]; i++) {
            if (!strcmp(val, o->choices[i])) {
                *num = i;
                return 0;
            }
        }
        return -1;
    case K_BOOL:
        return parse_bool(val, num);
    case K_SIGNAL:
        return parse_signal(val, num);
    case K_UINT:
    case K_MS:
    case K_SIZE:
    case K_BYTES:
        if (vh_parse_size(val, o->kind == K_SIZE || o->kind == K_BYTES, UINT64_MAX, num) < 0)
            return -1;
        if (*num < o->min || *num > o->max)
            return -1;
        if (o->kind == K_SIZE && (*num & (*num - 1)))
            return -1;
        return 0;
    }
    return -1;
}

/* Stores option o's value: the path `val`, or the number `num`. */
static void apply(const struct option *o, const char *val, uint64_t num)
{
    char *field = (char *)&vh_opt + o->off;
    uint32_t n32 = (uint32_t)num;

    if (o->kind == K_PATH) {
        memcpy(field, val, strlen(val) + 1);
        return;
    }
    if (o->kind == K_MS)
        num *= 1000000ull;
    if (o->size == sizeof n32)
        memcpy(field, &n32, sizeof n32);
    else
        memcpy(field, &num, sizeof num);
}

void vh_options_load(void)
{
    char **env = environ;

    for (size_t i = 0; i < NOPT; i++)
        apply(&table[i], table[i].def_path, table[i].def);
    if (!env)
        return;
    for (; *env; env++) {
        const char *e = *env;
        if (strncmp(e, "VHEAP_", 6) != 0)
            continue;
        const char *eq = strchr(e, '=');
        if (!eq)
            continue;
        size_t nlen = (size_t)(eq - e);
        for (size_t i = 0; i < NOPT; i++) {
            const struct option *o = &table[i];
            if (strlen(o->name) != nlen || strncmp(o->name, e, nlen) != 0)
                continue;
            uint64_t num = 0;
            if (parse(o, eq + 1, &num) == 0)
                apply(o, eq + 1, num);
            else
                vh_log("ignoring %s=%s (want %s); using the default", o->name, eq + 1,
                       o->want);
            break;
        }
    }
}
