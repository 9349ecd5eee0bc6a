/* stack_names.h — every stack of a database as names, outermost first: the
 * symbolized frames with the functions inlined into them as frames of their
 * own (as the flamegraph export writes them), an unresolved frame as
 * module+0xOFFSET. Loaded for all stacks at once (one scan of `frames` and
 * one of `stack_frames`), for the commands that handle every stack: the
 * report's call tree and `diff`, which matches stacks of two runs by these
 * names instead of by addresses. */
#ifndef VHEAP_STACK_NAMES_H
#define VHEAP_STACK_NAMES_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/* One named frame: ids into the table's strings (vh_snames__str); 0 is
 * "none" for module and where. */
struct vh_sname {
    uint32_t name;                 /* function, or module+0xOFFSET           */
    uint32_t module;               /* module's file name                     */
    uint32_t where;                /* "file.c:42"                            */
    uint32_t naming;               /* how well it names a stack: enum
                                      vh_naming of frame_rule.h (0: the
                                      allocator's or runtime's frame)    */
};

struct vh_snames;

/* Reads every frame and stack of db. 0, or -errno with the reason in err. */
int vh_snames__load(sqlite3 *db, struct vh_snames **out, char *err, size_t errlen);

/* The same, with module file names read through `map` (modmap.h; NULL: as
 * they are), for the run a diff compares with. */
struct vh_modmap;
int vh_snames__load_mapped(sqlite3 *db, const struct vh_modmap *map, struct vh_snames **out,
                           char *err, size_t errlen);
void vh_snames__free(struct vh_snames *s);

/* The names of stack `id` into *buf (grown as needed, *cap its room),
 * outermost first, of its innermost `depth` frames (0: all); a stack deeper
 * than the recording depth or than `depth` starts with "[truncated]", one
 * without frames is "[no stack]". The count, or -ENOMEM. */
int vh_snames__stack(const struct vh_snames *s, int64_t id, int64_t depth, struct vh_sname **buf,
                     size_t *cap);

/* The index in path[0..n) (outermost first) of the frame that names the
 * stack: the innermost one that is not machinery (frame_rule.h), so a
 * custom heap's stack is named by the hook's caller, not the hook, and of
 * those a named function before an address (vh_frame_naming); when every
 * frame is machinery, the innermost. n must be > 0. */
size_t vh_snames__naming(const struct vh_sname *path, size_t n);

const char *vh_snames__str(const struct vh_snames *s, uint32_t id);

#endif
