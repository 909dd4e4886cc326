/* Minimal unit-test harness: each test binary prints one line per failed check and a summary. */
#ifndef PROFD_T_H
#define PROFD_T_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int t_checks, t_failed;

#define CHECK(cond) do { \
	t_checks++; \
	if (!(cond)) { t_failed++; fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); } \
} while (0)

#define CHECK_EQ_INT(a, b) do { \
	long long _a = (long long)(a), _b = (long long)(b); \
	t_checks++; \
	if (_a != _b) { t_failed++; fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n", __FILE__, __LINE__, #a, _a, #b, _b); } \
} while (0)

#define CHECK_EQ_STR(a, b) do { \
	const char *_a = (a), *_b = (b); \
	t_checks++; \
	if (!_a || !_b || strcmp(_a, _b)) { t_failed++; fprintf(stderr, "%s:%d: %s == \"%s\", expected \"%s\"\n", __FILE__, __LINE__, #a, _a ? _a : "(null)", _b ? _b : "(null)"); } \
} while (0)

/* Ends main(): exit status 1 when any check failed. */
#define T_DONE() do { \
	printf("%s: %d checks, %d failed\n", __FILE__, t_checks, t_failed); \
	return t_failed ? 1 : 0; \
} while (0)

#endif
