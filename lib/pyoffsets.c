/*
 * The layouts profd reads CPython by. Offsets are for 64-bit builds without
 * free threading and hold for every patch release of a minor version (the
 * structures are part of the ABI a minor release keeps); test_pyoffsets
 * checks them against each interpreter's debug information and, from 3.13,
 * against the interpreter's own _Py_DebugOffsets.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "pyoffsets.h"

struct pyversion {
	uint32_t version;
	struct profd_pyoffs o;
};

static const struct pyversion table[] = {
	{ 0x030a, {
		.rt_interp_head = 32, .is_tstate_head = 8, .ts_next = 8, .ts_thread_id = 176,
		.ts_interp = 16, .ts_frame = 24, .cf_current_frame = PROFD_PY_NONE,
		.fr_previous = 24, .fr_code = 32, .fr_is_entry = PROFD_PY_NONE, .fr_owner = PROFD_PY_NONE,
		.fr_instr = 96,
		.co_name = 112 /* co_name: 3.10 has no co_qualname */, .co_filename = 104, .co_firstlineno = 40,
		.co_linetable = 120, .co_code = PROFD_PY_NONE, .co_version = PROFD_PY_NONE,
		.bytes_size = 16, .bytes_data = 32, .bytes_hash = 24, .str_hash = 24,
		.str_length = 16, .str_state = 32, .str_ascii_data = 48, .str_utf8 = 56,
		.flags = PROFD_PY_F_ALL_ENTRY | PROFD_PY_F_LASTI,
	} },
	{ 0x030b, {
		.rt_interp_head = 40, .is_tstate_head = 16, .ts_next = 8, .ts_thread_id = 152,
		.ts_interp = 16, .ts_frame = 56, .cf_current_frame = 8,
		.fr_previous = 48, .fr_code = 32, .fr_is_entry = 68, .fr_owner = PROFD_PY_NONE,
		.fr_instr = 56,
		.co_name = 128, .co_filename = 112, .co_firstlineno = 72,
		.co_linetable = 136, .co_code = 184, .co_version = PROFD_PY_NONE,
		.bytes_size = 16, .bytes_data = 32, .bytes_hash = 24, .str_hash = 24,
		.str_length = 16, .str_state = 32, .str_ascii_data = 48, .str_utf8 = 56,
		.flags = PROFD_PY_F_CFRAME,
	} },
	{ 0x030c, {
		.rt_interp_head = 40, .is_tstate_head = 72, .ts_next = 8, .ts_thread_id = 136,
		.ts_interp = 16, .ts_frame = 56, .cf_current_frame = 0,
		.fr_previous = 8, .fr_code = 0, .fr_is_entry = PROFD_PY_NONE, .fr_owner = 70,
		.fr_instr = 56,
		.co_name = 128, .co_filename = 112, .co_firstlineno = 68,
		.co_linetable = 136, .co_code = 192, .co_version = 92,
		.bytes_size = 16, .bytes_data = 32, .bytes_hash = 24, .str_hash = 24,
		.str_length = 16, .str_state = 32, .str_ascii_data = 40, .str_utf8 = 48,
		.flags = PROFD_PY_F_CFRAME,
	} },
	{ 0x030d, {
		.rt_interp_head = 632, .is_tstate_head = 7344, .ts_next = 8, .ts_thread_id = 152,
		.ts_interp = 16, .ts_frame = 72, .cf_current_frame = PROFD_PY_NONE,
		.fr_previous = 8, .fr_code = 0, .fr_is_entry = PROFD_PY_NONE, .fr_owner = 70,
		.fr_instr = 56,
		.co_name = 128, .co_filename = 112, .co_firstlineno = 68,
		.co_linetable = 136, .co_code = 200, .co_version = 92,
		.bytes_size = 16, .bytes_data = 32, .bytes_hash = 24, .str_hash = 24,
		.str_length = 16, .str_state = 32, .str_ascii_data = 40, .str_utf8 = 48,
		.flags = 0,
	} },
};

#define NVERSIONS (sizeof(table) / sizeof(table[0]))

const struct profd_pyoffs *pyoffsets__find(uint32_t version)
{
	for (size_t i = 0; i < NVERSIONS; i++)
		if (table[i].version == version)
			return &table[i].o;
	return NULL;
}

uint32_t pyoffsets__version(unsigned i)
{
	return i < NVERSIONS ? table[i].version : 0;
}

static uint64_t u64_at(const uint8_t *p, size_t off)
{
	uint64_t v;

	memcpy(&v, p + off, sizeof(v));
	return v;
}

/*
 * Where _Py_DebugOffsets (3.13) keeps each offset the table holds: pairs
 * of (offset of the field in _Py_DebugOffsets, offset of the table's field).
 */
static const struct {
	uint16_t debug;
	uint16_t ours;
} debug313[] = {
	{ 40, offsetof(struct profd_pyoffs, rt_interp_head) },
	{ 72, offsetof(struct profd_pyoffs, is_tstate_head) },
	{ 168, offsetof(struct profd_pyoffs, ts_next) },
	{ 176, offsetof(struct profd_pyoffs, ts_interp) },
	{ 184, offsetof(struct profd_pyoffs, ts_frame) },
	{ 192, offsetof(struct profd_pyoffs, ts_thread_id) },
	{ 232, offsetof(struct profd_pyoffs, fr_previous) },
	{ 240, offsetof(struct profd_pyoffs, fr_code) },
	{ 248, offsetof(struct profd_pyoffs, fr_instr) },
	{ 264, offsetof(struct profd_pyoffs, fr_owner) },
	{ 280, offsetof(struct profd_pyoffs, co_filename) },
	{ 296, offsetof(struct profd_pyoffs, co_name) },
	{ 304, offsetof(struct profd_pyoffs, co_linetable) },
	{ 312, offsetof(struct profd_pyoffs, co_firstlineno) },
	{ 344, offsetof(struct profd_pyoffs, co_code) },
	{ 520, offsetof(struct profd_pyoffs, bytes_size) },
	{ 528, offsetof(struct profd_pyoffs, bytes_data) },
	{ 544, offsetof(struct profd_pyoffs, str_state) },
	{ 552, offsetof(struct profd_pyoffs, str_length) },
	{ 560, offsetof(struct profd_pyoffs, str_ascii_data) },
};

#define DEBUG313_SIZE 584

int pyoffsets__check_debug(uint32_t version, const uint8_t *image, size_t len)
{
	const struct profd_pyoffs *o = pyoffsets__find(version);

	if (len < DEBUG313_SIZE || memcmp(image, "xdebugpy", 8) || (u64_at(image, 8) >> 16) != version)
		return -EINVAL;
	/* Only the build the table describes: a free-threaded one lays its objects out otherwise. */
	if (!o || version != 0x030d || u64_at(image, 16) != 0)
		return -EPROTO;
	for (size_t i = 0; i < sizeof(debug313) / sizeof(debug313[0]); i++) {
		uint16_t ours;

		memcpy(&ours, (const uint8_t *)o + debug313[i].ours, sizeof(ours));
		if (u64_at(image, debug313[i].debug) != ours)
			return -EPROTO;
	}
	return 0;
}
