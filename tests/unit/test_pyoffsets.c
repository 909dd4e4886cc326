/*
 * The CPython layout table against each interpreter's own description of
 * itself: its DWARF (gdb evaluates offsetof for every field the table
 * holds) and, from 3.13, the _Py_DebugOffsets in its _PyRuntime. The
 * interpreters are the pyenv builds (PYENV_ROOT, else /root/.pyenv) and
 * Debian's /usr/bin/python3.11; a version not installed is said and left
 * out, and the test is skipped (77) when none is.
 */
#include "pyinterp.h"
#include "pyoffsets.h"
#include "t.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct field {
	const char *name;
	size_t off; /* in struct profd_pyoffs */
	const char *expr[4]; /* for 3.10, 3.11, 3.12, 3.13; NULL: the table holds PROFD_PY_NONE */
};

#define F(n) #n, offsetof(struct profd_pyoffs, n)
#define RT "&((_PyRuntimeState *)0)->"
#define IS "&((PyInterpreterState *)0)->"
#define TS "&((PyThreadState *)0)->"
#define FO "&((PyFrameObject *)0)->"
#define IF "&((_PyInterpreterFrame *)0)->"
#define CO "&((PyCodeObject *)0)->"

static const struct field fields[] = {
	{ F(rt_interp_head), { RT "interpreters.head", RT "interpreters.head", RT "interpreters.head", RT "interpreters.head" } },
	{ F(is_tstate_head), { IS "tstate_head", IS "threads.head", IS "threads.head", IS "threads.head" } },
	{ F(ts_next), { TS "next", TS "next", TS "next", TS "next" } },
	{ F(ts_thread_id), { TS "thread_id", TS "thread_id", TS "thread_id", TS "thread_id" } },
	{ F(ts_interp), { TS "interp", TS "interp", TS "interp", TS "interp" } },
	{ F(ts_frame), { TS "frame", TS "cframe", TS "cframe", TS "current_frame" } },
	{ F(cf_current_frame), { NULL, "&((_PyCFrame *)0)->current_frame", "&((_PyCFrame *)0)->current_frame", NULL } },
	{ F(fr_previous), { FO "f_back", IF "previous", IF "previous", IF "previous" } },
	{ F(fr_code), { FO "f_code", IF "f_code", IF "f_code", IF "f_executable" } },
	{ F(fr_is_entry), { NULL, IF "is_entry", NULL, NULL } },
	{ F(fr_owner), { NULL, NULL, IF "owner", IF "owner" } },
	{ F(fr_instr), { FO "f_lasti", IF "prev_instr", IF "prev_instr", IF "instr_ptr" } },
	{ F(co_name), { CO "co_name", CO "co_qualname", CO "co_qualname", CO "co_qualname" } },
	{ F(co_filename), { CO "co_filename", CO "co_filename", CO "co_filename", CO "co_filename" } },
	{ F(co_firstlineno), { CO "co_firstlineno", CO "co_firstlineno", CO "co_firstlineno", CO "co_firstlineno" } },
	{ F(co_linetable), { CO "co_linetable", CO "co_linetable", CO "co_linetable", CO "co_linetable" } },
	{ F(co_code), { NULL, CO "co_code_adaptive", CO "co_code_adaptive", CO "co_code_adaptive" } },
	{ F(co_version), { NULL, NULL, CO "co_version", CO "co_version" } },
	{ F(bytes_size), { "&((PyBytesObject *)0)->ob_base.ob_size", "&((PyBytesObject *)0)->ob_base.ob_size",
			   "&((PyBytesObject *)0)->ob_base.ob_size", "&((PyBytesObject *)0)->ob_base.ob_size" } },
	{ F(bytes_data), { "&((PyBytesObject *)0)->ob_sval", "&((PyBytesObject *)0)->ob_sval",
			   "&((PyBytesObject *)0)->ob_sval", "&((PyBytesObject *)0)->ob_sval" } },
	{ F(str_length), { "&((PyASCIIObject *)0)->length", "&((PyASCIIObject *)0)->length",
			   "&((PyASCIIObject *)0)->length", "&((PyASCIIObject *)0)->length" } },
	{ F(str_state), { "&((PyASCIIObject *)0)->state", "&((PyASCIIObject *)0)->state",
			  "&((PyASCIIObject *)0)->state", "&((PyASCIIObject *)0)->state" } },
	{ F(str_ascii_data), { "sizeof(PyASCIIObject)", "sizeof(PyASCIIObject)", "sizeof(PyASCIIObject)",
			       "sizeof(PyASCIIObject)" } },
	{ F(str_hash), { "&((PyASCIIObject *)0)->hash", "&((PyASCIIObject *)0)->hash", "&((PyASCIIObject *)0)->hash",
			 "&((PyASCIIObject *)0)->hash" } },
	{ F(bytes_hash), { "&((PyBytesObject *)0)->ob_shash", "&((PyBytesObject *)0)->ob_shash",
			   "&((PyBytesObject *)0)->ob_shash", "&((PyBytesObject *)0)->ob_shash" } },
	{ F(str_utf8), { "&((PyCompactUnicodeObject *)0)->utf8", "&((PyCompactUnicodeObject *)0)->utf8",
			 "&((PyCompactUnicodeObject *)0)->utf8", "&((PyCompactUnicodeObject *)0)->utf8" } },
};
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

static uint16_t table_value(const struct profd_pyoffs *o, size_t off)
{
	uint16_t v;

	memcpy(&v, (const uint8_t *)o + off, sizeof(v));
	return v;
}

/* The libpython of pyenv's X.Y, or NULL. */
static char *find_libpython(unsigned minor)
{
	const char *root = getenv("PYENV_ROOT") ? getenv("PYENV_ROOT") : "/root/.pyenv";
	char pat[512], *out = NULL;
	glob_t g;

	snprintf(pat, sizeof(pat), "%s/versions/3.%u.*/lib/libpython3.%u.so.1.0", root, minor, minor);
	if (glob(pat, 0, NULL, &g) == 0 && g.gl_pathc > 0)
		out = strdup(g.gl_pathv[g.gl_pathc - 1]);
	globfree(&g);
	return out;
}

/* Every field against gdb's offsetof from the file's DWARF; returns the fields checked. */
static int check_dwarf(const char *path, uint32_t version, const struct profd_pyoffs *o)
{
	unsigned vi = (version & 0xff) - 10;
	char cmd[8192], line[512];
	size_t len = 0;
	long vals[NFIELDS];
	int n = 0, checked = 0;
	FILE *f;

	len += snprintf(cmd + len, sizeof(cmd) - len, "gdb -nx -batch");
	for (size_t i = 0; i < NFIELDS; i++)
		if (fields[i].expr[vi])
			len += snprintf(cmd + len, sizeof(cmd) - len, " -ex 'print (long)(%s)'", fields[i].expr[vi]);
	snprintf(cmd + len, sizeof(cmd) - len, " '%s' 2>&1", path);
	f = popen(cmd, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		long v;
		int k;

		if (sscanf(line, "$%d = %ld", &k, &v) == 2 && n < (int)NFIELDS)
			vals[n++] = v;
		else
			fprintf(stderr, "gdb: %s", line);
	}
	pclose(f);
	n = 0;
	for (size_t i = 0; i < NFIELDS; i++) {
		uint16_t want = table_value(o, fields[i].off);

		if (!fields[i].expr[vi]) {
			CHECK_EQ_INT(want, PROFD_PY_NONE);
			continue;
		}
		if (table_value(o, fields[i].off) != vals[n])
			fprintf(stderr, "3.%u %s: table %u, DWARF %ld\n", vi + 10, fields[i].name, want, vals[n]);
		CHECK_EQ_INT(want, vals[n]);
		n++;
		checked++;
	}
	return checked;
}

int main(void)
{
	int versions = 0, has_gdb = system("gdb --version >/dev/null 2>&1") == 0;

	if (!has_gdb)
		printf("note: no gdb: offsets checked against _Py_DebugOffsets and by probing only\n");
	for (unsigned i = 0; pyoffsets__version(i); i++) {
		uint32_t version = pyoffsets__version(i);
		const struct profd_pyoffs *o = pyoffsets__find(version);
		char *path = find_libpython(version & 0xff);
		struct pyinterp_file pf;
		int fd;

		/* What the BPF reader reads must cover the offsets: 112 bytes of a frame, 160 of a code object. */
		CHECK(o->fr_previous + 8 <= 112 && o->fr_code + 8 <= 112 && o->fr_instr + 8 <= 112);
		CHECK(o->fr_is_entry == PROFD_PY_NONE || o->fr_is_entry < 112);
		CHECK(o->fr_owner == PROFD_PY_NONE || o->fr_owner < 112);
		CHECK(o->co_name + 8 <= 160 && o->co_filename + 8 <= 160 && o->co_firstlineno + 4 <= 160);
		CHECK(o->co_linetable + 8 <= 160 && (o->co_version == PROFD_PY_NONE || o->co_version + 4 <= 160));
		/* One read covers the thread state's fields: 256 bytes. */
		CHECK(o->ts_thread_id + 8 <= 256 && o->ts_frame + 8 <= 256 && o->ts_interp + 8 <= 256);
		CHECK(o->bytes_size + 8 <= 32 && o->bytes_data <= 32 && o->bytes_hash + 8 <= 32);
		/* A name's hash is checked from the first 32 bytes of its str object. */
		CHECK(o->str_hash + 8 <= 32 && o->str_length + 8 <= 32);
		/* An instruction pointer for 3.11+, an instruction index before. */
		CHECK(!!(o->flags & PROFD_PY_F_LASTI) == (version < 0x030b) && (o->co_code == PROFD_PY_NONE) == (version < 0x030b));
		CHECK(o->str_utf8 + 8 <= 64 && o->str_state + 4 <= 64 && o->str_length + 8 <= 64);
		if (!path) {
			printf("note: no pyenv CPython 3.%u: its layout is not checked here\n", version & 0xff);
			continue;
		}
		versions++;
		fd = open(path, O_RDONLY | O_CLOEXEC);
		CHECK(fd >= 0);
		/* The probe finds the runtime, the version, and (3.13) a _Py_DebugOffsets that agrees. */
		CHECK_EQ_INT(pyinterp__probe_fd(fd, path, &pf), 0);
		CHECK_EQ_INT(pf.version, version);
		CHECK(pf.runtime != 0 && pf.code_type != 0);
		/* The drain tells eval frames by this range where the symbolizer cannot name them. */
		CHECK(pf.eval != 0 && pf.eval_size > 0);
		close(fd);
		if (has_gdb)
			printf("3.%u: %d offsets checked against the DWARF of %s\n", version & 0xff,
			       check_dwarf(path, version, o), path);
		free(path);
	}
	if (access("/usr/bin/python3.11", R_OK) == 0) {
		struct pyinterp_file pf;
		int fd = open("/usr/bin/python3.11", O_RDONLY | O_CLOEXEC);

		versions++;
		CHECK_EQ_INT(pyinterp__probe_fd(fd, "/usr/bin/python3.11", &pf), 0);
		CHECK_EQ_INT(pf.version, 0x030b);
		CHECK(pf.eval != 0 && pf.eval_size > 0);
		close(fd);
	}

	/* _Py_DebugOffsets that disagree, or are not one, are refused. */
	{
		uint8_t img[584] = "xdebugpy";
		uint64_t v = 0x030d00f0;

		memcpy(img + 8, &v, 8);
		CHECK_EQ_INT(pyoffsets__check_debug(0x030d, img, sizeof(img)), -EPROTO);
		CHECK_EQ_INT(pyoffsets__check_debug(0x030d, img, 100), -EINVAL);
		img[0] = 'X';
		CHECK_EQ_INT(pyoffsets__check_debug(0x030d, img, sizeof(img)), -EINVAL);
		CHECK(pyoffsets__find(0x030e) == NULL && pyoffsets__find(0x0309) == NULL);
	}
	if (!versions) {
		printf("skipped: no CPython 3.10-3.13 installed\n");
		return 77;
	}
	T_DONE();
}
