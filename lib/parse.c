#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "parse.h"

int parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!s || !*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

/* Splits "123unit" into a number and its unit; the number must not overflow. */
static int split_number(const char *s, uint64_t *num, const char **unit)
{
	uint64_t v = 0;
	const char *p = s;

	if (!s || !*s || !isdigit((unsigned char)*s))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	*num = v;
	*unit = p;
	return 0;
}

int parse_duration_ns(const char *s, int64_t *out)
{
	static const struct { const char *u; uint64_t ns; } units[] = {
		{ "", 1000000000ULL }, { "ns", 1 }, { "us", 1000 }, { "ms", 1000000 },
		{ "s", 1000000000ULL }, { "m", 60000000000ULL }, { "min", 60000000000ULL },
		{ "h", 3600000000000ULL }, { "d", 86400000000000ULL }, { "w", 604800000000000ULL },
	};
	const char *unit;
	uint64_t v;
	int err = split_number(s, &v, &unit);

	if (err)
		return err;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(unit, units[i].u))
			continue;
		if (v > (uint64_t)INT64_MAX / units[i].ns)
			return -ERANGE;
		*out = (int64_t)(v * units[i].ns);
		return 0;
	}
	return -EINVAL;
}

int parse_size(const char *s, uint64_t *out)
{
	static const struct { const char *u; unsigned shift; } units[] = {
		{ "", 0 }, { "B", 0 }, { "K", 10 }, { "KB", 10 }, { "KiB", 10 }, { "M", 20 },
		{ "MB", 20 }, { "MiB", 20 }, { "G", 30 }, { "GB", 30 }, { "GiB", 30 },
		{ "T", 40 }, { "TB", 40 }, { "TiB", 40 },
	};
	const char *unit;
	uint64_t v;
	int err = split_number(s, &v, &unit);

	if (err)
		return err;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcasecmp(unit, units[i].u))
			continue;
		if (units[i].shift && v > (UINT64_MAX >> units[i].shift))
			return -ERANGE;
		*out = v << units[i].shift;
		return 0;
	}
	return -EINVAL;
}

static int digits(const char **p, int n, int *out)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (!isdigit((unsigned char)(*p)[i]))
			return -EINVAL;
		v = v * 10 + ((*p)[i] - '0');
	}
	*p += n;
	*out = v;
	return 0;
}

static int days_in_month(int y, int m)
{
	static const int d[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	return m == 2 ? 28 + leap : d[m - 1];
}

static int parse_timestamp(const char *s, int64_t *out)
{
	const char *p = s;
	struct tm tm = { 0 };
	int Y, M, D, h, m, sec = 0, off_min = 0, has_zone = 0;
	int64_t frac_ns = 0;
	time_t t;

	if (digits(&p, 4, &Y) || *p++ != '-' || digits(&p, 2, &M) || *p++ != '-' ||
	    digits(&p, 2, &D))
		return -EINVAL;
	if (*p != 'T' && *p != 't' && *p != ' ')
		return -EINVAL;
	p++;
	if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &m))
		return -EINVAL;
	if (*p == ':') {
		p++;
		if (digits(&p, 2, &sec))
			return -EINVAL;
		if (*p == '.') {
			int64_t scale = 100000000;

			p++;
			if (!isdigit((unsigned char)*p))
				return -EINVAL;
			for (; isdigit((unsigned char)*p); p++, scale /= 10)
				frac_ns += (*p - '0') * scale;
		}
	}
	if (*p == 'Z' || *p == 'z') {
		has_zone = 1;
		p++;
	} else if (*p == '+' || *p == '-') {
		int sign = *p == '-' ? -1 : 1, oh, om;

		p++;
		if (digits(&p, 2, &oh) || *p++ != ':' || digits(&p, 2, &om) || oh > 23 || om > 59)
			return -EINVAL;
		has_zone = 1;
		off_min = sign * (oh * 60 + om);
	}
	if (*p)
		return -EINVAL;
	if (M < 1 || M > 12 || D < 1 || D > days_in_month(Y, M) || h > 23 || m > 59 || sec > 60)
		return -EINVAL;
	tm.tm_year = Y - 1900;
	tm.tm_mon = M - 1;
	tm.tm_mday = D;
	tm.tm_hour = h;
	tm.tm_min = m;
	tm.tm_sec = sec;
	if (has_zone) {
		t = timegm(&tm);
		t -= (time_t)off_min * 60;
	} else {
		tm.tm_isdst = -1;
		t = mktime(&tm);
	}
	if (t == (time_t)-1 && !(Y == 1969 && M == 12 && D == 31))
		return -ERANGE;
	if (t < 0 || (int64_t)t > INT64_MAX / 1000000000 - 1)
		return -ERANGE;
	*out = (int64_t)t * 1000000000 + frac_ns;
	return 0;
}

int parse_when(const char *s, int64_t now_ns, int64_t *out)
{
	int64_t d;

	if (!s || !*s)
		return -EINVAL;
	if (!strcasecmp(s, "now")) {
		*out = now_ns;
		return 0;
	}
	if (strlen(s) >= 10 && s[4] == '-')
		return parse_timestamp(s, out);
	if (parse_duration_ns(s, &d))
		return -EINVAL;
	*out = now_ns - d;
	return 0;
}

void format_duration(int64_t ns, char *buf, unsigned long len)
{
	uint64_t v = ns < 0 ? (uint64_t)(-(ns + 1)) + 1 : (uint64_t)ns;
	const char *sign = ns < 0 ? "-" : "";

	if (v < 1000)
		snprintf(buf, len, "%s%lluns", sign, (unsigned long long)v);
	else if (v < 1000000)
		snprintf(buf, len, "%s%lluus", sign, (unsigned long long)(v / 1000));
	else if (v < 1000000000)
		snprintf(buf, len, "%s%llums", sign, (unsigned long long)(v / 1000000));
	else if (v < 60000000000ULL)
		snprintf(buf, len, "%s%.1fs", sign, v / 1e9);
	else if (v < 3600000000000ULL)
		snprintf(buf, len, "%s%llum%llus", sign, (unsigned long long)(v / 60000000000ULL),
			 (unsigned long long)(v / 1000000000 % 60));
	else if (v < 86400000000000ULL)
		snprintf(buf, len, "%s%lluh%llum", sign, (unsigned long long)(v / 3600000000000ULL),
			 (unsigned long long)(v / 60000000000ULL % 60));
	else
		snprintf(buf, len, "%s%llud%lluh", sign, (unsigned long long)(v / 86400000000000ULL),
			 (unsigned long long)(v / 3600000000000ULL % 24));
}

int parse_hex_span(const char **p, const char *end, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;
	int digits = 0;

	while (s < end) {
		int d;
		char c = *s;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			break;
		if (++digits > 16)
			return -EINVAL;
		x = x << 4 | (uint64_t)d;
		s++;
	}
	if (!digits)
		return -EINVAL;
	*p = s;
	*v = x;
	return 0;
}
