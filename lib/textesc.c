#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "textesc.h"

/*
 * Length of the valid UTF-8 character at s that prints as it is, or 0:
 * a control character, a stray or missing continuation byte, an overlong
 * form, a surrogate or past U+10FFFF.
 */
static size_t printable_len(const unsigned char *s)
{
	uint32_t c;
	size_t n;

	if (s[0] >= 0x20 && s[0] < 0x7f)
		return 1;
	if (s[0] < 0xc2 || s[0] > 0xf4)
		return 0;
	n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : 2;
	c = s[0] & (0x7f >> n);
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && c < 0x800) || (n == 4 && c < 0x10000) || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	return c >= 0x80 && c <= 0x9f ? 0 : n;
}

bool textesc__clean(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		size_t n = printable_len(p);

		if (!n)
			return false;
		p += n;
	}
	return true;
}

size_t textesc__copy(char *dst, size_t cap, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;
	size_t len = 0;

	while (*p) {
		size_t n = printable_len(p);

		if (n) {
			if (len + n >= cap)
				break;
			memcpy(dst + len, p, n);
			len += n;
			p += n;
			continue;
		}
		if (len + 4 >= cap)
			break;
		dst[len++] = '\\';
		dst[len++] = 'x';
		dst[len++] = hex[*p >> 4];
		dst[len++] = hex[*p & 15];
		p++;
	}
	dst[len] = 0;
	return len;
}

char *textesc__dup(const char *s)
{
	size_t cap = strlen(s) * 4 + 1;
	char *d = malloc(cap);

	if (d)
		textesc__copy(d, cap, s);
	return d;
}

int textesc__inplace(char *buf, size_t cap)
{
	char *orig;

	if (textesc__clean(buf))
		return 0;
	orig = strdup(buf);
	if (!orig)
		return -ENOMEM;
	textesc__copy(buf, cap, orig);
	free(orig);
	return 0;
}
