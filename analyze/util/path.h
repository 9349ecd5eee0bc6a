/* path.h — the last component of a path, the one rule every place that
 * shows a file, a module or an executable by its name uses. */
#ifndef VHEAP_PATH_H
#define VHEAP_PATH_H

#include <string.h>

/* What follows the last '/' of path; path itself when it has none or ends
 * in '/' (nothing follows: the whole is the better name); NULL for NULL. */
static inline const char *vh_base_name(const char *path)
{
    const char *s = path ? strrchr(path, '/') : NULL;
    return s && s[1] ? s + 1 : path;
}

#endif
