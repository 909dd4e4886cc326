/* pystack: where Python frames go among native ones, and their frame text. */
#include "pystack.h"
#include "t.h"

#include <errno.h>
#include <stdio.h>

#define PY(id) (PROFD_PY_FRAME | (id))
#define PYE(id) (PROFD_PY_FRAME | PROFD_PY_ENTRY | (id))

/* Merges and writes the result as the ips' low bytes, root first: "a b c". */
static const char *merged(const __u64 *ips, uint32_t n, const uint8_t *is_eval)
{
	static char buf[512];
	uint32_t out[64], k = pystack__merge(ips, n, is_eval, out);
	size_t len = 0;

	buf[0] = 0;
	for (uint32_t i = 0; i < k; i++)
		len += snprintf(buf + len, sizeof(buf) - len, "%s%x", i ? " " : "", (unsigned)(ips[out[i]] & 0xff));
	return buf;
}

int main(void)
{
	/* 3.11+: one eval call ran the whole chain; C leaf below, native callers above. */
	{
		__u64 ips[] = { 0xc1, 0xe1, 0xa2, 0xa1, PY(0x15), PY(0x14), PY(0x13), PY(0x12), PYE(0x11) };
		uint8_t ev[] = { 0, 1, 0, 0 };

		CHECK(pystack__has_python(ips, 9));
		CHECK_EQ_STR(merged(ips, 9, ev), "a1 a2 11 12 13 14 15 c1");
	}
	/* A C function between two eval calls (a callback): it stays between their frames. */
	{
		__u64 ips[] = { 0xc1, 0xe2, 0xc2, 0xe1, 0xa1, PYE(0x13), PY(0x12), PYE(0x11) };
		uint8_t ev[] = { 0, 1, 0, 1, 0 };

		CHECK_EQ_STR(merged(ips, 8, ev), "a1 11 12 c2 13 c1");
	}
	/* 3.10: every frame its own eval call, native glue between them. */
	{
		__u64 ips[] = { 0xe3, 0xb2, 0xe2, 0xb1, 0xe1, 0xa1, PYE(0x13), PYE(0x12), PYE(0x11) };
		uint8_t ev[] = { 1, 0, 1, 0, 1, 0 };

		CHECK_EQ_STR(merged(ips, 9, ev), "a1 11 b1 12 b2 13");
	}
	/* More frame groups than eval frames walked: the outermost eval takes the rest, in order. */
	{
		__u64 ips[] = { 0xe1, 0xa1, PYE(0x12), PYE(0x11) };
		uint8_t ev[] = { 1, 0 };

		CHECK_EQ_STR(merged(ips, 4, ev), "a1 11 12");
	}
	/* Fewer: an outer eval with nothing left keeps its native frame. */
	{
		__u64 ips[] = { 0xe2, 0xe1, 0xa1, PYE(0x11) };
		uint8_t ev[] = { 1, 1, 0 };

		CHECK_EQ_STR(merged(ips, 4, ev), "a1 e1 11");
	}
	/* No eval frame walked (the native walk broke off): Python frames first, natives as they came. */
	{
		__u64 ips[] = { 0xc1, 0xc2, PY(0x12), PYE(0x11) };
		uint8_t ev[] = { 0, 0 };

		CHECK_EQ_STR(merged(ips, 4, ev), "11 12 c2 c1");
	}
	/* Native only. */
	{
		__u64 ips[] = { 0xc1, 0xc2 };

		CHECK(!pystack__has_python(ips, 2));
		CHECK(!pystack__has_python(ips, 0));
	}

	char t[64];

	CHECK_EQ_INT(pystack__frame_text("dumps", "/root/.pyenv/versions/3.11.7/lib/python3.11/json/__init__.py", t, sizeof(t)), 0);
	CHECK_EQ_STR(t, "dumps (json/__init__.py)");
	pystack__frame_text("get", "/srv/venv/lib/python3.12/site-packages/requests/api.py", t, sizeof(t));
	CHECK_EQ_STR(t, "get (requests/api.py)");
	pystack__frame_text("Worker.handle", "/srv/app/server.py", t, sizeof(t));
	CHECK_EQ_STR(t, "Worker.handle (server.py)");
	pystack__frame_text("main", "svc.py", t, sizeof(t));
	CHECK_EQ_STR(t, "main (svc.py)");
	pystack__frame_text("<module>", "<string>", t, sizeof(t));
	CHECK_EQ_STR(t, "<module> (<string>)");
	CHECK_EQ_INT(pystack__frame_text("a_very_long_function_name_indeed", "/x/y/zzzzzzzzzzzzzzzzzzzzzzzzz.py", t, 32), -ENOSPC);
	T_DONE();
}
