#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = 0;
	return s;
}

/* A '#' only starts a comment after whitespace, so "a#b" stays a value. */
static void strip_comment(char *s)
{
	for (char *p = s; *p; p++) {
		if (*p == '#' && (p == s || isspace((unsigned char)p[-1]))) {
			*p = 0;
			return;
		}
	}
}

static int valid_key(const char *k)
{
	if (!*k)
		return 0;
	for (; *k; k++)
		if (!isalnum((unsigned char)*k) && *k != '-' && *k != '_')
			return 0;
	return 1;
}

int config_read(const char *path, config_set_fn fn, void *arg, char *err, size_t errlen)
{
	char *buf = NULL, why[256];
	size_t cap = 0;
	unsigned lineno = 0;
	ssize_t n;
	FILE *f;
	int ret = 0;

	f = fopen(path, "re");
	if (!f) {
		ret = -errno;
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(-ret));
		return ret;
	}
	while ((errno = 0, n = getline(&buf, &cap, f)) >= 0) {
		char *line, *eq, *key, *val;

		lineno++;
		if ((size_t)n > CONFIG_MAX_LINE) {
			snprintf(err, errlen, "%s:%u: line longer than %d bytes", path, lineno, CONFIG_MAX_LINE);
			ret = -EINVAL;
			goto out;
		}
		if (memchr(buf, 0, n)) {
			snprintf(err, errlen, "%s:%u: NUL byte in line; is this a text file?", path, lineno);
			ret = -EINVAL;
			goto out;
		}
		line = trim(buf);
		if (!*line || *line == '#')
			continue;
		strip_comment(line);
		eq = strchr(line, '=');
		if (!eq) {
			snprintf(err, errlen, "%s:%u: %.64s: expected key = value", path, lineno, trim(line));
			ret = -EINVAL;
			goto out;
		}
		*eq = 0;
		key = trim(line);
		val = trim(eq + 1);
		if (!valid_key(key)) {
			snprintf(err, errlen, "%s:%u: '%.64s': not a key name", path, lineno, key);
			ret = -EINVAL;
			goto out;
		}
		why[0] = 0;
		ret = fn(key, val, why, sizeof(why), arg);
		if (ret) {
			snprintf(err, errlen, "%s:%u: %s: %s", path, lineno, key,
				 why[0] ? why : ret == -ENOENT ? "unknown key" : "invalid value");
			ret = -EINVAL;
			goto out;
		}
	}
	if (errno) {
		ret = -errno;
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(-ret));
	}
out:
	free(buf);
	fclose(f);
	return ret;
}
