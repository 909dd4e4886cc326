/*
 * The window payload: a struct profile as bytes (varints, deltas, columns,
 * interned tables), before compression. Layout in docs/FORMAT.md, "Payload".
 * Decoding treats its input as hostile: every count, length and id is
 * checked against what is left and what exists.
 */
#ifndef PROFD_CODEC_H
#define PROFD_CODEC_H

#include <stddef.h>
#include <stdint.h>

struct profile;
struct codec;

#define CODEC_PAYLOAD_VERSION 1

int codec__new(struct codec **out);
void codec__free(struct codec *c);

/*
 * Encodes p. *buf points into the codec's own buffer and stays valid until
 * the next call on c.
 */
int codec__encode(struct codec *c, const struct profile *p, const uint8_t **buf, size_t *len);

/*
 * Decodes buf into p, which is reset first. Returns -EBADMSG on malformed
 * input (p is then left reset or partial; reset it before reuse), -ENOMEM.
 */
int codec__decode(struct codec *c, const uint8_t *buf, size_t len, struct profile *p);

/* Sums a profile's header figures: on-CPU samples, and counters named "lost*". */
void codec__totals(const struct profile *p, uint64_t *samples, uint64_t *lost);

#endif
