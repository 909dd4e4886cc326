#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exporter.h"
#include "parse.h"

#define STATE_MAX 8192 /* a state file is a few hundred bytes; more is not one */

void exporter__state_init(struct export_state *st)
{
	memset(st, 0, sizeof(*st));
	st->cursor_ns = INT64_MIN;
}

#define U64_FIELDS(X) X(windows_sent) X(series_sent) X(bytes_sent) X(requests) X(retries) \
	X(http_429) X(http_5xx) X(http_4xx) X(transport_errors) X(windows_skipped)

int exporter__format(const struct export_state *st, char *buf, size_t len)
{
	int n = snprintf(buf, len, "format\tprofd-export 1\ncursor_ns\t%" PRId64 "\n", st->cursor_ns);
	size_t off = n > 0 ? (size_t)n : 0;

#define FMT(f) \
	if (off < len) { n = snprintf(buf + off, len - off, #f "\t%" PRIu64 "\n", st->f); off += n > 0 ? (size_t)n : 0; }
	U64_FIELDS(FMT)
#undef FMT
	if (off < len)
		off += snprintf(buf + off, len - off, "last_ok_ns\t%" PRId64 "\nlast_status\t%d\nlast_error\t%s\n",
				st->last_ok_ns, st->last_status, st->last_error);
	return off < len ? 0 : -ENOSPC;
}

static int parse_i64(const char *v, int64_t *out)
{
	uint64_t u;
	int neg = *v == '-';

	if (parse_u64(v + neg, &u) || u > (uint64_t)INT64_MAX + neg)
		return -EINVAL;
	*out = neg ? (int64_t)(0 - u) : (int64_t)u;
	return 0;
}

int exporter__load(const char *path, struct export_state *st)
{
	char buf[STATE_MAX + 1];
	ssize_t n;
	int fd, err = 0, seen_format = 0;

	exporter__state_init(st);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, STATE_MAX + 1);
	if (n < 0)
		err = -errno;
	close(fd);
	if (err)
		return err;
	if (n > STATE_MAX)
		return -EINVAL;
	buf[n] = 0;
	for (char *l = buf, *nl; *l; l = nl) {
		char *v;

		nl = strchr(l, '\n');
		if (!nl)
			return -EINVAL; /* a torn write cannot happen (rename), an edit can */
		*nl++ = 0;
		v = strchr(l, '\t');
		if (!v)
			return -EINVAL;
		*v++ = 0;
		if (!strcmp(l, "format")) {
			if (strcmp(v, "profd-export 1"))
				return -EINVAL;
			seen_format = 1;
		} else if (!strcmp(l, "cursor_ns")) {
			err = parse_i64(v, &st->cursor_ns);
		} else if (!strcmp(l, "last_ok_ns")) {
			err = parse_i64(v, &st->last_ok_ns);
		} else if (!strcmp(l, "last_status")) {
			int64_t s = 0;

			err = parse_i64(v, &s);
			st->last_status = s >= 0 && s < 1000 ? (int)s : 0;
		} else if (!strcmp(l, "last_error")) {
			snprintf(st->last_error, sizeof(st->last_error), "%s", v);
#define LOAD(f) } else if (!strcmp(l, #f)) { err = parse_u64(v, &st->f);
		U64_FIELDS(LOAD)
#undef LOAD
		}
		/* Unknown keys are a newer version's: keep going. */
		if (err)
			return -EINVAL;
	}
	return seen_format ? 0 : -EINVAL;
}

int exporter__save(const char *path, const struct export_state *st)
{
	char buf[STATE_MAX], tmp[4096], dir[4096];
	size_t len;
	int fd, dfd, err = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	snprintf(dir, sizeof(dir), "%s", path);
	if ((err = exporter__format(st, buf, sizeof(buf))))
		return err;
	len = strlen(buf);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, buf, len) != (ssize_t)len)
		err = errno ? -errno : -EIO;
	if (!err && fsync(fd))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err) {
		unlink(tmp);
		return err;
	}
	/* The rename is durable only once the directory is. */
	dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	if (fsync(dfd))
		err = -errno;
	close(dfd);
	return err;
}

enum export_verdict exporter__verdict(long status)
{
	if (status >= 200 && status < 300)
		return EXPORT_DONE;
	if (status == 0 || status == 408 || status == 429 || status >= 500)
		return EXPORT_RETRY;
	if (status == 401 || status == 403 || status == 404)
		return EXPORT_FATAL;
	if (status >= 400)
		return EXPORT_SKIP;
	/* 1xx or 3xx left over after libcurl: not an acknowledgement. */
	return EXPORT_RETRY;
}

int64_t exporter__backoff_ns(unsigned n, int64_t base_ns, int64_t max_ns, int64_t retry_after_ns,
			     uint64_t rnd)
{
	int64_t d = base_ns > 0 ? base_ns : 1;

	for (unsigned i = 1; i < n && d < max_ns; i++)
		d *= 2;
	if (d > max_ns)
		d = max_ns;
	d = d / 2 + (int64_t)(rnd % (uint64_t)(d / 2 + 1));
	if (retry_after_ns > d)
		d = retry_after_ns < max_ns ? retry_after_ns : max_ns;
	return d;
}
