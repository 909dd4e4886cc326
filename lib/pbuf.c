#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pbuf.h"

void pbuf__reserve(struct pbuf *p, size_t n)
{
	size_t ncap;
	uint8_t *nb;

	if (p->err || p->len + n <= p->cap)
		return;
	ncap = p->cap ? p->cap : 256;
	while (ncap < p->len + n)
		ncap *= 2;
	nb = realloc(p->b, ncap);
	if (!nb) {
		p->err = -ENOMEM;
		return;
	}
	p->b = nb;
	p->cap = ncap;
}

void pbuf__bytes(struct pbuf *p, const void *d, size_t n)
{
	pbuf__reserve(p, n);
	if (p->err)
		return;
	if (n)
		memcpy(p->b + p->len, d, n);
	p->len += n;
}

void pbuf__varint(struct pbuf *p, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;

	do {
		tmp[n++] = (v & 0x7f) | (v > 0x7f ? 0x80 : 0);
		v >>= 7;
	} while (v);
	pbuf__bytes(p, tmp, n);
}

void pbuf__uint(struct pbuf *p, unsigned field, uint64_t v)
{
	if (!v)
		return;
	pbuf__varint(p, (uint64_t)field << 3);
	pbuf__varint(p, v);
}

void pbuf__len(struct pbuf *p, unsigned field, const void *d, size_t n)
{
	pbuf__varint(p, (uint64_t)field << 3 | 2);
	pbuf__varint(p, n);
	pbuf__bytes(p, d, n);
}

void pbuf__msg(struct pbuf *p, unsigned field, struct pbuf *sub)
{
	if (sub->err && !p->err)
		p->err = sub->err;
	pbuf__len(p, field, sub->b, sub->len);
	sub->len = 0;
}

void pbuf__free(struct pbuf *p)
{
	free(p->b);
	*p = (struct pbuf){ 0 };
}
