/*
 * The line table decoder against each interpreter's own answer: every
 * CPython found (pyenv's 3.10-3.13, Debian's 3.11) compiles a module and
 * prints each code object's line table and, from co_lines(), the line of
 * every instruction (tests/unit/data/pylines.py); the decoder must give
 * the same line for each. A table cut short gives the right line or none,
 * never another; bytes that are no table stay inside their bounds.
 * Skipped (77) when no CPython 3.10-3.13 is installed.
 */
#include "pyline.h"
#include "t.h"

#include <errno.h>
#include <stdint.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int unhex(const char *s, uint8_t *out, size_t cap)
{
	size_t n = 0;
	unsigned v;

	while (s[0] && s[1] && n < cap && sscanf(s, "%2x", &v) == 1) {
		out[n++] = (uint8_t)v;
		s += 2;
	}
	return (int)n;
}

/* Checks one interpreter; returns the instructions checked. */
static long check_interp(const char *python)
{
	const char *data = getenv("T_DATA") ? getenv("T_DATA") : "tests/unit/data";
	static char line[16384];
	static uint8_t tab[8192];
	char cmd[1024];
	long checked = 0, wrong = 0, cut_known = 0;
	int len = 0, fmt = 0, first = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "'%s' '%s/pylines.py'", python, data);
	f = popen(cmd, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char hex[sizeof(line)];
		long lasti, want;
		uint32_t got = 0;
		int err;

		if (sscanf(line, "C %d %d %16383s", &fmt, &first, hex) == 3) {
			len = unhex(hex, tab, sizeof(tab));
			/* Not started: the first line. */
			CHECK_EQ_INT(pyline__line(fmt ? PYLINE_310 : PYLINE_311, tab, len, first, -1, &got), 0);
			CHECK_EQ_INT(got, first);
			continue;
		}
		if (sscanf(line, "L %ld %ld", &lasti, &want) != 2)
			continue;
		err = pyline__line(fmt ? PYLINE_310 : PYLINE_311, tab, len, first, lasti, &got);
		if (want < 0 ? err != -ENOENT : err || (long)got != want) {
			if (wrong++ < 5)
				fprintf(stderr, "%s: lasti %ld: line %ld, decoder %d (%u)\n", python, lasti, want, err, got);
		}
		checked++;
		/* What BPF keeps of a long table: the right line, or none. */
		if (len > 256) {
			err = pyline__line(fmt ? PYLINE_310 : PYLINE_311, tab, 256, first, lasti, &got);
			CHECK(err == -ENOENT || (!err && (long)got == want));
			cut_known += !err;
		}
	}
	CHECK_EQ_INT(pclose(f), 0);
	CHECK_EQ_INT(wrong, 0);
	/* The module has a table longer than 256 bytes; its start is still decoded. */
	CHECK(cut_known > 0);
	printf("%s: %ld instructions, %ld wrong\n", python, checked, wrong);
	return checked;
}

int main(void)
{
	const char *root = getenv("PYENV_ROOT") ? getenv("PYENV_ROOT") : "/root/.pyenv";
	int versions = 0;

	for (unsigned minor = 10; minor <= 13; minor++) {
		char pat[512];
		glob_t g;

		snprintf(pat, sizeof(pat), "%s/versions/3.%u.*/bin/python3.%u", root, minor, minor);
		if (glob(pat, 0, NULL, &g) == 0 && g.gl_pathc > 0) {
			CHECK(check_interp(g.gl_pathv[g.gl_pathc - 1]) > 100);
			versions++;
		} else {
			printf("note: no pyenv CPython 3.%u: its line tables are not checked here\n", minor);
		}
		globfree(&g);
	}
	if (access("/usr/bin/python3.11", X_OK) == 0) {
		CHECK(check_interp("/usr/bin/python3.11") > 100);
		versions++;
	}

	/* An instruction index past any code object: no line, in either format, and no overflow. */
	{
		static const uint8_t tab310[] = { 255, 1, 255, 1 }, tab311[] = { 0xff, 0xff };
		uint32_t got = 7;

		CHECK_EQ_INT(pyline__line(PYLINE_310, tab310, sizeof(tab310), 1, INT64_MAX / 2 + 1, &got), -ENOENT);
		CHECK_EQ_INT(pyline__line(PYLINE_311, tab311, sizeof(tab311), 1, INT64_MAX, &got), -ENOENT);
		CHECK_EQ_INT(got, 7);
	}
	/* Untrusted bytes: any table, any address, stays in bounds and answers. */
	{
		uint8_t junk[64];
		uint32_t got;
		unsigned seed = 1;

		for (int round = 0; round < 20000; round++) {
			for (size_t i = 0; i < sizeof(junk); i++)
				junk[i] = (uint8_t)((seed = seed * 1103515245 + 12345) >> 16);
			for (int fmt = 0; fmt < 2; fmt++) {
				int err = pyline__line(fmt ? PYLINE_311 : PYLINE_310, junk, seed % sizeof(junk), 1,
						       seed % 200, &got);

				CHECK(err == 0 || err == -ENOENT || err == -EINVAL);
			}
		}
		CHECK_EQ_INT(pyline__line(PYLINE_311, junk, 0, 5, 0, &got), -ENOENT);
		CHECK_EQ_INT(pyline__line(PYLINE_311, (const uint8_t *)"\x01", 1, 5, 0, &got), -EINVAL);
		CHECK_EQ_INT(pyline__line(2, junk, 4, 5, 0, &got), -EINVAL);
	}
	if (!versions) {
		printf("skipped: no CPython 3.10-3.13 installed\n");
		return 77;
	}
	T_DONE();
}
