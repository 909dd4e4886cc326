/* /proc/kallsyms parser: text symbols only, sorted for binary search. */
#include "kallsyms.h"
#include "procmaps.h"
#include "strtab.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define MAX_KALLSYMS_BYTES (256u << 20)
#define MAX_SYMS (8u << 20)
/* A kernel's names take a few megabytes; the buffer doubles from here. */
#define FIRST_STR_BYTES 65536
#define MAX_NAME_LEN 512
/* Kernel symbols carry no size; the next symbol ends one, this caps the last before a gap. */
#define MAX_SPAN (128u << 10)

struct ksym {
	uint64_t addr;
	uint32_t name;   /* offset into str */
	uint32_t module; /* offset into str; UINT32_MAX: core kernel */
};

struct kallsyms {
	struct ksym *syms;
	size_t n, cap;
	struct strtab *str;
};

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

static bool is_text(char t)
{
	return t == 't' || t == 'T' || t == 'w' || t == 'W';
}

/* "ffffffff81000000 T _stext" or "ffffffffc0a01000 t foo\t[mod]". 0: parsed, 1: skip, <0: bad. */
static int parse_line(const char *s, const char *end, uint64_t *addr, const char **name, size_t *nlen,
		      const char **mod, size_t *mlen)
{
	uint64_t a = 0;
	int digits = 0;
	const char *p;

	while (s < end && *s != ' ') {
		char c = *s++;
		int d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return -EINVAL;
		if (++digits > 16)
			return -EINVAL;
		a = a << 4 | (uint64_t)d;
	}
	if (!digits || end - s < 4 || s[0] != ' ' || s[2] != ' ')
		return -EINVAL;
	if (!is_text(s[1]))
		return 1;
	s += 3;
	p = s;
	while (p < end && *p != '\t' && *p != ' ')
		p++;
	if (p == s || p - s > MAX_NAME_LEN)
		return -EINVAL;
	*addr = a;
	*name = s;
	*nlen = (size_t)(p - s);
	*mod = NULL;
	*mlen = 0;
	while (p < end && (*p == '\t' || *p == ' '))
		p++;
	if (p < end) {
		const char *close = memchr(p, ']', (size_t)(end - p));

		if (*p != '[' || !close || close - p - 1 <= 0 || close - p - 1 > MAX_NAME_LEN)
			return -EINVAL;
		*mod = p + 1;
		*mlen = (size_t)(close - p - 1);
	}
	return 0;
}

int kallsyms__parse(const char *buf, size_t len, struct kallsyms **out)
{
	struct kallsyms *k;
	const char *s = buf, *end = buf + len;
	const char *last_mod = NULL;
	size_t last_mlen = 0;
	uint32_t last_mod_off = UINT32_MAX;
	bool nonzero = false;
	int err = 0;

	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	err = strtab__new(FIRST_STR_BYTES, UINT32_MAX, &k->str);
	if (err)
		goto out;
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *le = nl ? nl : end;
		const char *name, *mod;
		size_t nlen, mlen;
		uint64_t addr;
		struct ksym *ks;
		int r;

		r = parse_line(s, le, &addr, &name, &nlen, &mod, &mlen);
		s = nl ? nl + 1 : end;
		if (r)
			continue;
		if (k->n >= MAX_SYMS)
			break;
		if (k->n == k->cap) {
			size_t ncap = k->cap ? k->cap * 2 : 4096;
			struct ksym *nk = realloc(k->syms, ncap * sizeof(*nk));

			if (!nk) {
				err = -ENOMEM;
				goto out;
			}
			k->syms = nk;
			k->cap = ncap;
		}
		ks = &k->syms[k->n];
		ks->addr = addr;
		if (addr)
			nonzero = true;
		err = strtab__add(k->str, name, nlen, &ks->name);
		if (err)
			goto out;
		ks->module = UINT32_MAX;
		if (mod) {
			/* A module's symbols come in one run: keep one copy of its name. */
			if (!last_mod || last_mlen != mlen || memcmp(last_mod, mod, mlen)) {
				err = strtab__add(k->str, mod, mlen, &last_mod_off);
				if (err)
					goto out;
				last_mod = mod;
				last_mlen = mlen;
			}
			ks->module = last_mod_off;
		}
		k->n++;
	}
	if (!nonzero)
		k->n = 0;
	if (k->n)
		qsort(k->syms, k->n, sizeof(*k->syms), cmp_ksym);
	/* Held for the daemon's life: give back what the doubling left over (a megabyte or two). */
	if (k->n && k->n < k->cap) {
		struct ksym *nk = realloc(k->syms, k->n * sizeof(*nk));

		if (nk) {
			k->syms = nk;
			k->cap = k->n;
		}
	}
	strtab__shrink(k->str);
	*out = k;
	k = NULL;
out:
	kallsyms__free(k);
	return err;
}

int kallsyms__load(const char *path, struct kallsyms **out)
{
	char *buf = NULL;
	size_t len = 0;
	int err;

	err = procmaps__read_file(AT_FDCWD, path ? path : "/proc/kallsyms", 0, MAX_KALLSYMS_BYTES, &buf, &len);
	if (err)
		return err;
	err = kallsyms__parse(buf, len, out);
	free(buf);
	return err;
}

void kallsyms__free(struct kallsyms *k)
{
	if (!k)
		return;
	free(k->syms);
	strtab__free(k->str);
	free(k);
}

int kallsyms__lookup(const struct kallsyms *k, uint64_t addr, const char **name, const char **module,
		     uint64_t *start)
{
	size_t lo = 0, hi = k->n;
	const struct ksym *s;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return -ENOENT;
	s = &k->syms[lo - 1];
	/* Several names at one address (aliases): the first in sort order names it. */
	while (s > k->syms && s[-1].addr == s->addr)
		s--;
	if (addr - s->addr >= MAX_SPAN)
		return -ENOENT;
	*name = strtab__str(k->str, s->name);
	*module = s->module == UINT32_MAX ? NULL : strtab__str(k->str, s->module);
	if (start)
		*start = s->addr;
	return 0;
}

size_t kallsyms__count(const struct kallsyms *k)
{
	return k->n;
}
