/*
 * libFuzzer target: what profd makes of bytes a sampled Python process
 * holds: a code object's line table (both formats, any first line and
 * instruction), the merge of its frames into a native stack, and a
 * frame's text from its names.
 * Layout: [0] format and flags, [1..4] firstlineno, [5..12] lasti, the rest
 * the line table; the same bytes as a stack of words and as two names.
 */
#include "pyline.h"
#include "pystack.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_WORDS 128

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int32_t first;
	int64_t lasti;
	uint32_t line, n, out[MAX_WORDS];
	__u64 ips[MAX_WORDS];
	uint8_t is_eval[MAX_WORDS];
	char text[256], *names;

	if (size < 13)
		return 0;
	memcpy(&first, data + 1, sizeof(first));
	memcpy(&lasti, data + 5, sizeof(lasti));
	/* The table as the walker hands it over: an exact-size copy, so any read past it is caught. */
	uint8_t *tab = malloc(size - 13 ? size - 13 : 1);
	if (!tab)
		return 0;
	memcpy(tab, data + 13, size - 13);
	(void)pyline__line(data[0] & 1 ? PYLINE_311 : PYLINE_310, tab, size - 13, first, lasti, &line);
	(void)pyline__line(data[0] & 1 ? PYLINE_311 : PYLINE_310, tab, size - 13, first, -1, &line);
	free(tab);

	n = (uint32_t)(size / sizeof(__u64));
	if (n > MAX_WORDS)
		n = MAX_WORDS;
	memcpy(ips, data, n * sizeof(__u64));
	for (uint32_t i = 0; i < n; i++)
		is_eval[i] = data[i] & 1;
	if (pystack__has_python(ips, n))
		(void)pystack__merge(ips, n, is_eval, out);

	names = malloc(size + 1);
	if (!names)
		return 0;
	memcpy(names, data, size);
	names[size] = 0;
	(void)pystack__frame_text(names, names + strnlen(names, size) / 2, text, sizeof(text));
	free(names);
	return 0;
}
