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

#include "profile.h"

struct codec;

#define CODEC_PAYLOAD_VERSION 5 /* 1 to 4 are still read */
#define CODEC_MAX_VALUE_UNIT 1000000000ull

int codec__new(struct codec **out);
void codec__free(struct codec *c);

/*
 * Off-CPU and run-queue values are written in units of unit_ns (0 or 1:
 * nanoseconds, exact), rounded with the error carried within each pid,
 * tid and kind (docs/FORMAT.md, "Value units"). -EINVAL above 10^9.
 */
int codec__set_value_unit(struct codec *c, uint64_t unit_ns);

/*
 * Encodes p as a self-contained (key) record. *buf points into the codec's own buffer and stays valid until
 * the next call on c.
 */
int codec__encode(struct codec *c, const struct profile *p, const uint8_t **buf, size_t *len);

/*
 * Decodes a self-contained record (version 1, or a version 2 key) into p,
 * which is reset first. Returns -EBADMSG on malformed input (p is then left
 * reset or partial; reset it before reuse), -ENOMEM.
 */
int codec__decode(struct codec *c, const uint8_t *buf, size_t len, struct profile *p);

/*
 * Chains (docs/FORMAT.md, "Chains"): a delta record carries only the
 * strings, frames and stacks that the records before it in its chain did
 * not define. key_ref 0 encodes a key record (and starts a new chain);
 * otherwise a delta extending every record encoded since, whose key record
 * is identified by key_ref (the store passes 1 + its file offset). After a
 * failure the next record must be a key.
 */
int codec__encode_chain(struct codec *c, const struct profile *p, uint64_t key_ref,
			const uint8_t **buf, size_t *len);

/*
 * codec__encode_chain(c, p, 0, ...), the same bytes, with p lent as the
 * chain's tables: they are mapped, not copied (a big merged profile's
 * copy is about as large as its tables), and the deltas that follow
 * intern what they add into p. p must not change otherwise, nor go,
 * until the next key or codec__lend_end(): a delta finds it changed
 * (-ESTALE), not gone. A profile with two frames that read alike is
 * copied as codec__encode_chain does.
 */
int codec__encode_key_lent(struct codec *c, struct profile *p, const uint8_t **buf, size_t *len);
/* Gives the lent profile back: the next record must be a key (a delta is -ESTALE). */
void codec__lend_end(struct codec *c);
/* Heap bytes held (allocated capacity), the chain's tables included. */
size_t codec__mem_bytes(const struct codec *c);

/*
 * Where the parts of the payload last encoded end (strings; metadata and
 * frame kinds; frame modules, names and offsets; stacks; thread table;
 * entries' stacks; values), in order, the last at its length.
 */
#define CODEC_MAX_PARTS 8
size_t codec__parts(const struct codec *c, const size_t **ends);

/*
 * Decodes the record identified by rec_ref (1 + file offset; 0: not part of
 * a chain). A delta is decoded only into the p that holds its chain so far,
 * untouched since: -ESTALE otherwise (decode its records from the key first).
 * A delta keeps p's strings, frames and stacks (and their ids) and replaces
 * its samples; a key resets p. CODEC_TABLES_ONLY stops after the tables.
 */
#define CODEC_TABLES_ONLY 1u
/* The next delta is refused until a key: the caller moves to another file. */
void codec__chain_forget(struct codec *c);
int codec__decode_chain(struct codec *c, const uint8_t *buf, size_t len, uint64_t rec_ref,
			unsigned flags, struct profile *p);

/*
 * Decodes a record into p without resetting it, as profile__merge_flags()
 * would merge its decoding: tables are interned into what p holds, values
 * add up, pf_flags (PF_MERGE_*) apply, keep() may reject a sample. One
 * interning per string, frame and stack instead of two. rec_ref and flags
 * as for codec__decode_chain: a delta needs the records of its chain before
 * it merged (CODEC_TABLES_ONLY is enough) into the same p by this codec
 * (-ESTALE otherwise). On any error p may hold part of the record.
 */
int codec__decode_merge(struct codec *c, const uint8_t *buf, size_t len, uint64_t rec_ref, unsigned flags,
			unsigned pf_flags, profile_keep_fn keep, void *arg, struct profile *p);

/* Sums a profile's header figures: on-CPU samples, and counters named "lost*". */
void codec__totals(const struct profile *p, uint64_t *samples, uint64_t *lost);

#endif
