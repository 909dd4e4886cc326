/*
 * perf map parser. The file lives in a world-writable /tmp of a possibly
 * hostile container: sizes, line lengths and entry counts are capped.
 */
#include "parse.h"
#include "perfmap.h"
#include "strtab.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_FILE_BYTES (64u << 20)
#define MAX_ENTRIES (1u << 20)
#define MAX_NAME_LEN 1024
#define MAX_LINE 4096
#define CHUNK (1u << 20)
/* Most JIT processes name a few hundred functions; the buffer doubles from here. */
#define FIRST_STR_BYTES 16384
/* Code re-JITed at an address writes a newer overlapping line; look this far back for it. */
#define OVERLAP_SCAN 64

struct pment {
	uint64_t start, end;
	uint32_t name; /* offset into str */
	uint32_t seq;  /* line number: later lines win */
};

struct perfmap {
	struct pment *e;
	size_t n, cap;
	struct strtab *str;
	bool sorted;
	uint32_t seq;
	size_t bad_lines;
	uint64_t read_off, dev, ino;
	char *chunk;
	size_t max_bytes;
	bool full;
};

int perfmap__new(struct perfmap **out)
{
	return perfmap__new_max(0, out);
}

int perfmap__new_max(size_t max_bytes, struct perfmap **out)
{
	struct perfmap *pm = calloc(1, sizeof(*pm));
	int err;

	if (!pm)
		return -ENOMEM;
	pm->max_bytes = max_bytes ? max_bytes : MAX_FILE_BYTES;
	err = strtab__new(FIRST_STR_BYTES, UINT32_MAX, &pm->str);
	if (err) {
		free(pm);
		return err;
	}
	pm->sorted = true;
	*out = pm;
	return 0;
}

/* perf maps write addresses with or without a 0x prefix. */
static int parse_hex0x(const char **p, const char *end, uint64_t *v)
{
	if (end - *p > 2 && (*p)[0] == '0' && ((*p)[1] == 'x' || (*p)[1] == 'X'))
		*p += 2;
	return parse_hex_span(p, end, v);
}

static void reset(struct perfmap *pm)
{
	pm->n = 0;
	strtab__reset(pm->str);
	pm->seq = 0;
	pm->read_off = 0;
	pm->sorted = true;
	pm->full = false;
}

void perfmap__free(struct perfmap *pm)
{
	if (!pm)
		return;
	free(pm->e);
	strtab__free(pm->str);
	free(pm->chunk);
	free(pm);
}

static int add(struct perfmap *pm, uint64_t start, uint64_t size, const char *s, size_t len)
{
	struct pment *e;
	uint32_t name;
	int err;

	if (pm->n >= MAX_ENTRIES)
		goto full;
	if (len > MAX_NAME_LEN)
		len = MAX_NAME_LEN;
	if (pm->n == pm->cap) {
		size_t ncap = pm->cap ? pm->cap * 2 : 256;
		struct pment *ne;

		if (ncap * sizeof(*ne) + strtab__mem_bytes(pm->str) > pm->max_bytes)
			goto full;
		ne = realloc(pm->e, ncap * sizeof(*ne));
		if (!ne)
			return -ENOMEM;
		pm->e = ne;
		pm->cap = ncap;
	}
	if (pm->cap * sizeof(*e) + strtab__mem_bytes(pm->str) + len + 1 > pm->max_bytes)
		goto full;
	/* A JIT writes one name again at each recompile. */
	err = strtab__intern(pm->str, s, len, &name);
	if (err == -EFBIG)
		goto full;
	if (err)
		return err;
	e = &pm->e[pm->n++];
	e->start = start;
	e->end = start + size < start ? UINT64_MAX : start + size;
	e->name = name;
	e->seq = pm->seq++;
	if (pm->n > 1 && pm->e[pm->n - 2].start > start)
		pm->sorted = false;
	return 0;
full:
	pm->full = true;
	return -EFBIG;
}

static int parse_line(struct perfmap *pm, const char *s, const char *end)
{
	uint64_t start, size;

	if (end > s && end[-1] == '\r')
		end--;
	if (parse_hex0x(&s, end, &start) || s >= end || *s != ' ')
		return -EINVAL;
	s++;
	if (parse_hex0x(&s, end, &size) || s >= end || *s != ' ' || size == 0)
		return -EINVAL;
	s++;
	if (s >= end || memchr(s, 0, (size_t)(end - s)))
		return -EINVAL;
	return add(pm, start, size, s, (size_t)(end - s));
}

int perfmap__parse(struct perfmap *pm, const char *buf, size_t len, size_t *consumed)
{
	const char *s = buf, *end = buf + len;
	int err = 0;

	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));

		if (!nl)
			break; /* the JIT is still writing this line */
		err = parse_line(pm, s, nl);
		s = nl + 1;
		if (err == -ENOMEM || err == -EFBIG)
			break;
		if (err)
			pm->bad_lines++;
		err = 0;
	}
	*consumed = (size_t)(s - buf);
	return err;
}

int perfmap__update_fd(struct perfmap *pm, int fd)
{
	struct stat st;
	uint64_t size;
	size_t chunk_len;
	int err = 0;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if ((uint64_t)st.st_dev != pm->dev || (uint64_t)st.st_ino != pm->ino ||
	    (uint64_t)st.st_size < pm->read_off) {
		reset(pm);
		pm->dev = st.st_dev;
		pm->ino = st.st_ino;
	}
	size = (uint64_t)st.st_size < MAX_FILE_BYTES ? (uint64_t)st.st_size : MAX_FILE_BYTES;
	if (pm->read_off >= size)
		return 0;
	/*
	 * Only for this call, and no larger than what is new: every JIT process
	 * has a perf map, and a megabyte kept per process adds up on a busy host.
	 */
	chunk_len = size - pm->read_off < CHUNK ? (size_t)(size - pm->read_off) : CHUNK;
	pm->chunk = malloc(chunk_len);
	if (!pm->chunk)
		return -ENOMEM;
	while (pm->read_off < size) {
		size_t want = size - pm->read_off < chunk_len ? (size_t)(size - pm->read_off) : chunk_len, used = 0;
		ssize_t r = pread(fd, pm->chunk, want, (off_t)pm->read_off);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (r == 0)
			break;
		err = perfmap__parse(pm, pm->chunk, (size_t)r, &used);
		if (err)
			break;
		if (used == 0) {
			/* No newline in a whole chunk: an absurd line; skip it. Short: wait for the rest. */
			if ((size_t)r < MAX_LINE || (size_t)r < want)
				break;
			pm->bad_lines++;
			used = (size_t)r;
		}
		pm->read_off += used;
	}
	free(pm->chunk);
	pm->chunk = NULL;
	return err == -EFBIG ? 0 : err;
}

static int cmp_ent(const void *a, const void *b)
{
	const struct pment *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int perfmap__lookup(struct perfmap *pm, uint64_t addr, const char **name, uint64_t *start)
{
	const struct pment *best = NULL;
	size_t lo = 0, hi, stop;

	if (!pm->sorted) {
		qsort(pm->e, pm->n, sizeof(*pm->e), cmp_ent);
		pm->sorted = true;
	}
	hi = pm->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pm->e[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	stop = lo > OVERLAP_SCAN ? lo - OVERLAP_SCAN : 0;
	for (size_t k = lo; k > stop; k--) {
		const struct pment *e = &pm->e[k - 1];

		if (addr < e->end && (!best || e->seq > best->seq))
			best = e;
	}
	if (!best)
		return -ENOENT;
	*name = strtab__str(pm->str, best->name);
	if (start)
		*start = best->start;
	return 0;
}

size_t perfmap__mem_bytes(const struct perfmap *pm)
{
	return sizeof(*pm) + pm->cap * sizeof(*pm->e) + strtab__mem_bytes(pm->str);
}

size_t perfmap__count(const struct perfmap *pm)
{
	return pm->n;
}

int perfmap__full(const struct perfmap *pm)
{
	return pm->full;
}

size_t perfmap__bad_lines(const struct perfmap *pm)
{
	return pm->bad_lines;
}
