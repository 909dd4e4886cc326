/* The configuration file: "key = value" lines, '#' comments. Knows no keys itself. */
#ifndef PROFD_CONFIG_H
#define PROFD_CONFIG_H

#include <stddef.h>

/* Longest line accepted; a longer one is refused rather than split. */
#define CONFIG_MAX_LINE 4096

/*
 * Applies one key. Returns 0, or -EINVAL (-ENOENT for an unknown key) with a
 * short reason in why ("expected a duration like 10s").
 */
typedef int (*config_set_fn)(const char *key, const char *value, char *why, size_t whylen, void *arg);

/*
 * Reads path and calls fn for every "key = value" line, in order (a later
 * line wins). Blank lines and lines starting with '#' are skipped; a '#'
 * after whitespace starts a trailing comment. Stops at the first bad line:
 * returns -EINVAL with "path:line: key: reason" in err. Returns -errno when
 * the file cannot be read (err says so too).
 */
int config_read(const char *path, config_set_fn fn, void *arg, char *err, size_t errlen);

#endif
