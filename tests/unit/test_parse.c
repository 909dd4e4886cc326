#include <stdlib.h>
#include <time.h>

#include "parse.h"
#include "t.h"

#define NS 1000000000LL
/* 2026-11-30T09:00:00Z, from date -u -d 2026-11-30T09:00:00Z +%s */

int main(void)
{
	int64_t d, w, now = 1796000000 * NS;
	uint64_t u;

	CHECK(parse_duration_ns("90s", &d) == 0 && d == 90 * NS);
	CHECK(parse_duration_ns("10m", &d) == 0 && d == 600 * NS);
	CHECK(parse_duration_ns("2h", &d) == 0 && d == 7200 * NS);
	CHECK(parse_duration_ns("7d", &d) == 0 && d == 7 * 86400 * NS);
	CHECK(parse_duration_ns("500ms", &d) == 0 && d == 500000000);
	CHECK(parse_duration_ns("250us", &d) == 0 && d == 250000);
	CHECK(parse_duration_ns("15", &d) == 0 && d == 15 * NS);
	CHECK(parse_duration_ns("", &d) < 0);
	CHECK(parse_duration_ns("-5s", &d) < 0);
	CHECK(parse_duration_ns("5 s", &d) < 0);
	CHECK(parse_duration_ns("5x", &d) < 0);
	CHECK(parse_duration_ns("s", &d) < 0);
	CHECK(parse_duration_ns("99999999999999999999s", &d) < 0);
	CHECK(parse_duration_ns("9999999999999d", &d) < 0);

	CHECK(parse_size("1G", &u) == 0 && u == 1ULL << 30);
	CHECK(parse_size("512M", &u) == 0 && u == 512ULL << 20);
	CHECK(parse_size("64k", &u) == 0 && u == 64ULL << 10);
	CHECK(parse_size("1000", &u) == 0 && u == 1000);
	CHECK(parse_size("1000000000000000000000000000000", &u) < 0);
	CHECK(parse_size("20000000000T", &u) < 0);
	CHECK(parse_size("1Q", &u) < 0);
	CHECK(parse_size("-1G", &u) < 0);

	CHECK(parse_u64("18446744073709551615", &u) == 0 && u == UINT64_MAX);
	CHECK(parse_u64("18446744073709551616", &u) < 0);
	CHECK(parse_u64("12a", &u) < 0);
	CHECK(parse_u64("", &u) < 0);

	{
		const char *line = "7f00ab-ffff x", *q = line;

		CHECK(parse_hex_span(&q, line + strlen(line), &u) == 0 && u == 0x7f00ab && *q == '-');
		q++;
		CHECK(parse_hex_span(&q, line + 8, &u) == 0 && u == 0xf && q == line + 8); /* stops at end */
		q = "12345678901234567";
		CHECK(parse_hex_span(&q, q + 17, &u) < 0); /* over 64 bits */
		q = "xyz";
		CHECK(parse_hex_span(&q, q + 3, &u) < 0);
	}

	CHECK(parse_when("10m", now, &w) == 0 && w == now - 600 * NS);
	CHECK(parse_when("now", now, &w) == 0 && w == now);
	CHECK(parse_when("2026-11-30T09:00:00Z", now, &w) == 0 && w == 1796029200LL * NS);
	CHECK(parse_when("2026-11-30T11:00:00+02:00", now, &w) == 0 && w == 1796029200LL * NS);
	CHECK(parse_when("2026-11-30T08:30:00-00:30", now, &w) == 0 && w == 1796029200LL * NS);
	CHECK(parse_when("2026-11-30T09:00:00.5Z", now, &w) == 0 && w == 1796029200LL * NS + 500000000);
	CHECK(parse_when("2026-02-30T09:00:00Z", now, &w) < 0);
	CHECK(parse_when("2026-11-30T25:00:00Z", now, &w) < 0);
	CHECK(parse_when("2026-11-30T09:00:00+2", now, &w) < 0);
	CHECK(parse_when("2026-11-30", now, &w) < 0);
	CHECK(parse_when("yesterday", now, &w) < 0);

	/* Local time: the same wall-clock reading in two zones differs by their offset. */
	setenv("TZ", "UTC", 1);
	tzset();
	CHECK(parse_when("2026-11-30 09:00", now, &w) == 0 && w == 1796029200LL * NS);
	CHECK(parse_when("2026-11-30 09:00:30", now, &w) == 0 && w == 1796029230LL * NS);
	setenv("TZ", "Asia/Kolkata", 1);
	tzset();
	CHECK(parse_when("2026-11-30 14:30", now, &w) == 0 && w == 1796029200LL * NS);
	T_DONE();
}
