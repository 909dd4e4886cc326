/* Protocol buffers wire encoding into a growable buffer; the first allocation error sticks. */
#ifndef PROFD_PBUF_H
#define PROFD_PBUF_H

#include <stddef.h>
#include <stdint.h>

struct pbuf {
	uint8_t *b;
	size_t len, cap;
	int err; /* 0 or -ENOMEM, kept until pbuf__free */
};

/* Room for n more bytes after len (for writers that fill b directly). */
void pbuf__reserve(struct pbuf *p, size_t n);
void pbuf__bytes(struct pbuf *p, const void *d, size_t n);
void pbuf__varint(struct pbuf *p, uint64_t v);
/* A varint field; proto3 omits zero scalars, and so does this. */
void pbuf__uint(struct pbuf *p, unsigned field, uint64_t v);
/* A length-delimited field (bytes, string, or an encoded message). */
void pbuf__len(struct pbuf *p, unsigned field, const void *d, size_t n);
/* Appends sub as a message field of p and empties sub for reuse. */
void pbuf__msg(struct pbuf *p, unsigned field, struct pbuf *sub);
void pbuf__free(struct pbuf *p);

#endif
