/*
 * One native _PyEval_EvalFrameDefault call runs one Python frame (3.10) or
 * several (3.11+: a Python-to-Python call stays in the same C call), and
 * the interpreter marks the outermost frame of each call (is_entry, or an
 * entry shim the BPF program turns into the same mark). Pairing eval calls
 * with groups of Python frames from the leaf keeps C frames between them
 * (a C extension calling back into Python, json's encoder) where they ran.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "pystack.h"

int pystack__has_python(const __u64 *ips, uint32_t n)
{
	/* Python frames follow the native ones: the last frame tells. */
	return n && (ips[n - 1] & PROFD_PY_FRAME);
}

uint32_t pystack__merge(const __u64 *ips, uint32_t n, const uint8_t *is_eval, uint32_t *out)
{
	uint32_t nn = 0, gstart[PROFD_PY_MAX_DEPTH + 1], ng = 0, ne = 0, k = 0;

	while (nn < n && !(ips[nn] & PROFD_PY_FRAME))
		nn++;
	/* Groups of Python frames, leaf first: gstart[g] .. gstart[g + 1] - 1. */
	for (uint32_t i = nn; i < n && ng < PROFD_PY_MAX_DEPTH; i++) {
		if (i == nn || (ips[i - 1] & PROFD_PY_ENTRY))
			gstart[ng++] = i;
	}
	gstart[ng] = n;
	for (uint32_t i = 0; i < nn; i++)
		ne += !!is_eval[i];

	if (ne == 0) {
		for (uint32_t i = n; i-- > nn;)
			out[k++] = i;
		for (uint32_t i = nn; i-- > 0;)
			out[k++] = i;
		return k;
	}
	for (uint32_t i = nn, e = ne; i-- > 0;) {
		uint32_t first, last;

		if (!is_eval[i]) {
			out[k++] = i;
			continue;
		}
		e--; /* i is the e-th eval call from the leaf */
		if (e >= ng) {
			out[k++] = i; /* no Python frames left for it */
			continue;
		}
		/* The outermost eval takes the groups no eval is left for. */
		first = e;
		last = e == ne - 1 ? ng - 1 : e;
		for (uint32_t g = last + 1; g-- > first;)
			for (uint32_t j = gstart[g + 1]; j-- > gstart[g];)
				out[k++] = j;
	}
	return k;
}

static const char *short_file(const char *file)
{
	static const char *const roots[] = { "/site-packages/", "/dist-packages/" };
	const char *best = NULL, *p, *s;

	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
		for (p = strstr(file, roots[i]); p; p = strstr(p + 1, roots[i]))
			best = p + strlen(roots[i]);
	if (best)
		return best;
	/* The standard library: .../lib/python3.11/json/__init__.py */
	for (p = strstr(file, "/lib/python"); p; p = strstr(p + 1, "/lib/python")) {
		s = strchr(p + 11, '/');
		if (s)
			best = s + 1;
	}
	if (best)
		return best;
	s = strrchr(file, '/');
	return s && s[1] ? s + 1 : file;
}

int pystack__frame_text(const char *qualname, const char *file, char *out, size_t len)
{
	int n = snprintf(out, len, "%s (%s)", qualname, short_file(file));

	return n < 0 || (size_t)n >= len ? -ENOSPC : 0;
}
