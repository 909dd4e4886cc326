/*
 * .eh_frame / .debug_frame → compact unwind rows. Our own parser rather than
 * libdw's dwarf_cfi_addrframe: that answers one address at a time, and we
 * need every row boundary of every FDE, which only the CFA programs give.
 * The input is untrusted: every read is bounds-checked, every loop is bounded
 * by the section size, and an FDE we cannot parse is skipped (counted), never
 * a crash.
 */
#include "unwind_table.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define REG_RBP 6
#define REG_RSP 7
#define MAX_SEGS 16
#define MAX_REMEMBER 16
/* Beyond this, a file is not something we want in kernel memory anyway. */
#define MAX_ROWS (16u << 20)

struct seg {
	uint64_t offset, vaddr, filesz;
};

struct unwind_table {
	struct profd_urow *rows; /* the block: header, bucket index, rows (struct profd_uindex) */
	size_t nrows;            /* slots of the block */
	size_t skip;             /* where its rows start */
	struct seg segs[MAX_SEGS];
	unsigned nsegs;
	struct unwind_table_stats st;
};

/*
 * A row before compaction, plus its FDE's order for stable de-duplication.
 * 12 bytes (the pc lives in r.pc): building libLLVM or node holds half a
 * million of these at once, the largest part of a build's memory.
 */
struct raw_row {
	uint32_t order; /* terminators sort before the rows of the FDE starting at the same pc */
	struct profd_urow r;
};

struct rows_vec {
	struct raw_row *v;
	size_t n, cap;
};

struct rd {
	const uint8_t *p, *end;
	bool bad;
};

static uint64_t rd_bytes(struct rd *r, unsigned n)
{
	uint64_t v = 0;

	if (r->bad || (size_t)(r->end - r->p) < n) {
		r->bad = true;
		r->p = r->end;
		return 0;
	}
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)r->p[i] << (8 * i); /* x86-64 files are little-endian (checked at open) */
	r->p += n;
	return v;
}

static uint64_t rd_uleb(struct rd *r)
{
	uint64_t v = 0;
	unsigned shift = 0;

	while (r->p < r->end) {
		uint8_t b = *r->p++;

		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			return v;
	}
	r->bad = true;
	return 0;
}

static int64_t rd_sleb(struct rd *r)
{
	int64_t v = 0;
	unsigned shift = 0;

	while (r->p < r->end) {
		uint8_t b = *r->p++;

		if (shift < 64)
			v |= (int64_t)((uint64_t)(b & 0x7f) << shift);
		shift += 7;
		if (!(b & 0x80)) {
			if (shift < 64 && (b & 0x40))
				v |= -((int64_t)1 << shift);
			return v;
		}
	}
	r->bad = true;
	return 0;
}

/* Where a section's bytes live in the file's address space (for pc-relative pointers). */
struct sec {
	const uint8_t *data;
	size_t size;
	uint64_t vaddr;
	bool eh; /* .eh_frame (else .debug_frame) */
};

#define DW_EH_PE_omit 0xff

/* Decodes a pointer of the given DW_EH_PE encoding; returns false for what we do not support. */
static bool rd_encoded(struct rd *r, const struct sec *s, uint8_t enc, uint64_t *out)
{
	uint64_t field = s->vaddr + (uint64_t)(r->p - s->data), v;

	if (enc == DW_EH_PE_omit)
		return false;
	switch (enc & 0x0f) {
	case 0x00: v = rd_bytes(r, 8); break;
	case 0x01: v = rd_uleb(r); break;
	case 0x02: v = rd_bytes(r, 2); break;
	case 0x03: v = rd_bytes(r, 4); break;
	case 0x04: v = rd_bytes(r, 8); break;
	case 0x09: v = (uint64_t)rd_sleb(r); break;
	case 0x0a: v = (uint64_t)(int64_t)(int16_t)rd_bytes(r, 2); break;
	case 0x0b: v = (uint64_t)(int64_t)(int32_t)rd_bytes(r, 4); break;
	case 0x0c: v = rd_bytes(r, 8); break;
	default: r->bad = true; return false;
	}
	switch (enc & 0x70) {
	case 0x00: break;
	case 0x10: v += field; break;
	default: return false; /* textrel/datarel/funcrel: not used for x86-64 FDE addresses */
	}
	*out = v;
	return !r->bad;
}

enum { RULE_SAME = 0, RULE_UNDEF, RULE_OFFSET, RULE_OTHER };

struct rule {
	uint8_t how;
	int64_t off;
};

struct state {
	bool cfa_expr;
	uint64_t cfa_reg;
	int64_t cfa_off;
	const uint8_t *expr;
	uint64_t elen;
	struct rule rbp, ra;
};

struct cie {
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg;
	uint8_t fde_enc;
	uint8_t addr_size;
	bool aug_z, signal;
	const uint8_t *insns, *insns_end;
};

static int parse_cie(const struct sec *s, size_t off, struct cie *c)
{
	struct rd r = { s->data + off, s->data + s->size, false };
	uint64_t len = rd_bytes(&r, 4), id;
	const char *aug;
	unsigned version;
	bool dwarf64 = false;

	if (len == 0xffffffff) {
		len = rd_bytes(&r, 8);
		dwarf64 = true;
	}
	if (r.bad || len > (uint64_t)(r.end - r.p))
		return -EINVAL;
	r.end = r.p + len;
	id = rd_bytes(&r, s->eh ? 4 : (dwarf64 ? 8 : 4));
	if (s->eh ? id != 0 : (id != 0xffffffffu && id != UINT64_MAX))
		return -EINVAL;
	memset(c, 0, sizeof(*c));
	c->fde_enc = s->eh ? 0x00 : DW_EH_PE_omit; /* debug_frame: absolute, address size */
	c->addr_size = 8;
	version = rd_bytes(&r, 1);
	if (version != 1 && version != 3 && version != 4)
		return -EINVAL;
	aug = (const char *)r.p;
	while (r.p < r.end && *r.p)
		r.p++;
	if (r.p >= r.end)
		return -EINVAL;
	r.p++;
	if (strstr(aug, "eh"))
		rd_bytes(&r, 8);
	if (version == 4) {
		c->addr_size = rd_bytes(&r, 1);
		rd_bytes(&r, 1); /* segment selector size */
		if (c->addr_size != 8 && c->addr_size != 4)
			return -EINVAL;
	}
	c->code_align = rd_uleb(&r);
	c->data_align = rd_sleb(&r);
	c->ra_reg = version == 1 ? rd_bytes(&r, 1) : rd_uleb(&r);
	if (aug[0] == 'z') {
		uint64_t alen = rd_uleb(&r);
		const uint8_t *aend;

		if (r.bad || alen > (uint64_t)(r.end - r.p))
			return -EINVAL;
		aend = r.p + alen;
		c->aug_z = true;
		for (const char *a = aug + 1; *a && !r.bad; a++) {
			uint64_t ignored;

			switch (*a) {
			case 'R': c->fde_enc = rd_bytes(&r, 1); break;
			case 'L': rd_bytes(&r, 1); break;
			case 'P': {
				uint8_t enc = rd_bytes(&r, 1);

				if (enc != DW_EH_PE_omit && !rd_encoded(&r, s, enc & 0x7f, &ignored) && !r.bad)
					r.p = aend; /* an encoding we do not decode: the length lets us skip it */
				break;
			}
			case 'S': c->signal = true; break;
			case 'B': case 'G': break;
			default: goto aug_done; /* unknown letter: the rest is skipped by length */
			}
		}
aug_done:
		r.p = aend;
	} else if (aug[0] && strcmp(aug, "eh")) {
		return -EINVAL; /* an augmentation we cannot size */
	}
	if (r.bad || c->code_align == 0)
		return -EINVAL;
	c->insns = r.p;
	c->insns_end = r.end;
	return 0;
}

static int push_row(struct rows_vec *rv, uint64_t pc, uint32_t order, const struct profd_urow *r)
{
	if (rv->n == rv->cap) {
		size_t cap = rv->cap ? rv->cap * 2 : 4096;
		struct raw_row *v;

		if (cap > MAX_ROWS * 2)
			return -EFBIG;
		v = realloc(rv->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		rv->v = v;
		rv->cap = cap;
	}
	/* Only a terminator can lie at 2^32 (an FDE ending at the top): nothing above it needs one. */
	if (pc > UINT32_MAX)
		return 0;
	rv->v[rv->n] = (struct raw_row){ .order = order, .r = *r };
	rv->v[rv->n++].r.pc = (uint32_t)pc;
	return 0;
}

/* Matches the two standard x86-64 PLT CFA expressions (lazy .plt: lit11; .plt.sec and BND: lit10). */
static bool match_plt(const uint8_t *e, uint64_t len, int64_t *off, int *thr)
{
	struct rd r = { e, e + len, false };

	if (rd_bytes(&r, 1) != 0x77) /* DW_OP_breg7 (rsp) */
		return false;
	*off = rd_sleb(&r);
	if (rd_bytes(&r, 1) != 0x80 || rd_sleb(&r) != 0) /* DW_OP_breg16 (rip) 0 */
		return false;
	if (rd_bytes(&r, 1) != 0x3f || rd_bytes(&r, 1) != 0x1a) /* lit15 and */
		return false;
	*thr = (int)rd_bytes(&r, 1) - 0x30; /* litN */
	if (*thr < 0 || *thr > 15)
		return false;
	/* ge lit3 shl plus */
	return rd_bytes(&r, 1) == 0x2a && rd_bytes(&r, 1) == 0x33 && rd_bytes(&r, 1) == 0x24 &&
	       rd_bytes(&r, 1) == 0x22 && !r.bad && r.p == r.end;
}

/* DW_OP_breg6 (rbp) N; DW_OP_deref: gcc's CFA after realigning the stack in main. */
static bool match_deref_rbp(const uint8_t *e, uint64_t len, int64_t *off)
{
	struct rd r = { e, e + len, false };

	if (rd_bytes(&r, 1) != 0x76)
		return false;
	*off = rd_sleb(&r);
	return rd_bytes(&r, 1) == 0x06 && !r.bad && r.p == r.end;
}

static void compact(const struct state *s, const struct cie *c, struct profd_urow *out)
{
	uint8_t cfa = PROFD_UR_CFA_UNSUP, rbp = PROFD_UR_RBP_UNDEF;
	int64_t off = 0, eoff;
	int thr;

	memset(out, 0, sizeof(*out));
	if (c->signal) {
		cfa = PROFD_UR_CFA_SIGNAL;
	} else if (s->ra.how == RULE_UNDEF) {
		cfa = PROFD_UR_CFA_END;
	} else if (s->ra.how != RULE_OFFSET || s->ra.off != -8) {
		cfa = PROFD_UR_CFA_UNSUP;
	} else if (!s->cfa_expr && (s->cfa_reg == REG_RSP || s->cfa_reg == REG_RBP) &&
		   s->cfa_off >= 0 && s->cfa_off <= UINT16_MAX) {
		cfa = s->cfa_reg == REG_RSP ? PROFD_UR_CFA_RSP : PROFD_UR_CFA_RBP;
		off = s->cfa_off;
	} else if (s->cfa_expr && match_plt(s->expr, s->elen, &eoff, &thr) && eoff >= 0 &&
		   eoff <= UINT16_MAX) {
		cfa = PROFD_UR_CFA_PLT;
		off = eoff;
		out->rbp_off = thr;
	} else if (s->cfa_expr && match_deref_rbp(s->expr, s->elen, &eoff) && eoff >= INT16_MIN &&
		   eoff <= INT16_MAX) {
		cfa = PROFD_UR_CFA_DEREF_RBP;
		off = (uint16_t)(int16_t)eoff;
	}
	if (s->rbp.how == RULE_SAME)
		rbp = PROFD_UR_RBP_SAME;
	else if (s->rbp.how == RULE_OFFSET && s->rbp.off % 8 == 0 && s->rbp.off / 8 >= INT8_MIN &&
		 s->rbp.off / 8 <= INT8_MAX)
		rbp = PROFD_UR_RBP_AT_CFA;
	if (rbp == PROFD_UR_RBP_AT_CFA && cfa != PROFD_UR_CFA_PLT)
		out->rbp_off = s->rbp.off / 8;
	if (cfa == PROFD_UR_CFA_PLT || cfa == PROFD_UR_CFA_SIGNAL || cfa == PROFD_UR_CFA_END ||
	    cfa == PROFD_UR_CFA_UNSUP) {
		/* rbp does not matter (or is restored from the ucontext): keep rows mergeable. */
		rbp = PROFD_UR_RBP_SAME;
		if (cfa != PROFD_UR_CFA_PLT)
			out->rbp_off = 0;
	}
	out->cfa_off = (uint16_t)off;
	out->kind = cfa | rbp << 4;
}

struct fde_ctx {
	const struct sec *s;
	const struct cie *c;
	struct rows_vec *rv;
	uint32_t order;
	uint64_t end;
	struct unwind_table_stats *st;
};

static int emit(struct fde_ctx *f, uint64_t pc, const struct state *s)
{
	struct profd_urow r;

	compact(s, f->c, &r);
	f->st->raw_rows++;
	return push_row(f->rv, pc, f->order, &r);
}

/*
 * Runs a CFA program. With f NULL (the CIE's initial instructions) it only
 * updates st; otherwise it emits a row each time the location advances.
 */
static int run_cfa(struct fde_ctx *f, const struct cie *c, const uint8_t *p, const uint8_t *end,
		   struct state *st, const struct state *init, uint64_t *loc)
{
	struct rd r = { p, end, false };
	struct state stack[MAX_REMEMBER];
	unsigned depth = 0;
	int err;

	while (r.p < r.end && !r.bad) {
		uint8_t op = rd_bytes(&r, 1), lo = op & 0x3f;
		uint64_t reg = 0, adv = 0, newloc;
		int64_t off = 0;
		struct rule *rule;
		bool advance = false;

		switch (op >> 6) {
		case 1: adv = lo; advance = true; break;
		case 2: reg = lo; off = (int64_t)rd_uleb(&r) * c->data_align; goto set_offset;
		case 3: reg = lo; goto restore;
		}
		switch (op) {
		case 0x00: break; /* nop */
		case 0x01: /* set_loc */
			if (!f || !rd_encoded(&r, f->s, f->s->eh ? c->fde_enc : 0x00, &newloc))
				return -EINVAL;
			if (newloc < *loc)
				return -EINVAL;
			adv = (newloc - *loc) / c->code_align;
			advance = true;
			break;
		case 0x02: adv = rd_bytes(&r, 1); advance = true; break;
		case 0x03: adv = rd_bytes(&r, 2); advance = true; break;
		case 0x04: adv = rd_bytes(&r, 4); advance = true; break;
		case 0x05: reg = rd_uleb(&r); off = (int64_t)rd_uleb(&r) * c->data_align; goto set_offset;
		case 0x06: reg = rd_uleb(&r); goto restore;
		case 0x07: /* undefined */
		case 0x08: /* same_value */
			reg = rd_uleb(&r);
			rule = reg == REG_RBP ? &st->rbp : reg == c->ra_reg ? &st->ra : NULL;
			if (rule)
				*rule = (struct rule){ op == 0x07 ? RULE_UNDEF : RULE_SAME, 0 };
			break;
		case 0x09: /* register */
			reg = rd_uleb(&r);
			rd_uleb(&r);
			goto set_other;
		case 0x0a:
			if (depth == MAX_REMEMBER)
				return -EINVAL;
			stack[depth++] = *st;
			break;
		case 0x0b:
			if (depth == 0)
				return -EINVAL;
			*st = stack[--depth];
			break;
		case 0x0c: st->cfa_reg = rd_uleb(&r); st->cfa_off = (int64_t)rd_uleb(&r); st->cfa_expr = false; break;
		case 0x0d: st->cfa_reg = rd_uleb(&r); st->cfa_expr = false; break;
		case 0x0e: st->cfa_off = (int64_t)rd_uleb(&r); break;
		case 0x0f: {
			uint64_t n = rd_uleb(&r);

			if (r.bad || n > (uint64_t)(r.end - r.p))
				return -EINVAL;
			st->cfa_expr = true;
			st->expr = r.p;
			st->elen = n;
			r.p += n;
			break;
		}
		case 0x10: /* expression */
		case 0x16: { /* val_expression */
			uint64_t n;

			reg = rd_uleb(&r);
			n = rd_uleb(&r);
			if (r.bad || n > (uint64_t)(r.end - r.p))
				return -EINVAL;
			r.p += n;
			goto set_other;
		}
		case 0x11: reg = rd_uleb(&r); off = rd_sleb(&r) * c->data_align; goto set_offset;
		case 0x12: st->cfa_reg = rd_uleb(&r); st->cfa_off = rd_sleb(&r) * c->data_align; st->cfa_expr = false; break;
		case 0x13: st->cfa_off = rd_sleb(&r) * c->data_align; break;
		case 0x14: reg = rd_uleb(&r); rd_uleb(&r); goto set_other;
		case 0x15: reg = rd_uleb(&r); rd_sleb(&r); goto set_other;
		case 0x2e: rd_uleb(&r); break; /* GNU_args_size: only matters for landing pads */
		case 0x2f: reg = rd_uleb(&r); off = -(int64_t)rd_uleb(&r) * c->data_align; goto set_offset;
		default:
			if (op >> 6)
				break;
			return -EINVAL; /* an opcode we cannot size: the rest of the program is unreadable */
		}
		if (advance) {
			newloc = *loc + adv * c->code_align;
			if (!f)
				return -EINVAL; /* CIE initial instructions never advance */
			if (newloc > *loc && *loc < f->end) {
				if ((err = emit(f, *loc, st)))
					return err;
			}
			*loc = newloc;
		}
		continue;
set_offset:
		rule = reg == REG_RBP ? &st->rbp : reg == c->ra_reg ? &st->ra : NULL;
		if (rule)
			*rule = (struct rule){ RULE_OFFSET, off };
		continue;
set_other:
		rule = reg == REG_RBP ? &st->rbp : reg == c->ra_reg ? &st->ra : NULL;
		if (rule)
			*rule = (struct rule){ RULE_OTHER, 0 };
		continue;
restore:
		if (!init)
			return -EINVAL;
		if (reg == REG_RBP)
			st->rbp = init->rbp;
		else if (reg == c->ra_reg)
			st->ra = init->ra;
		continue;
	}
	return r.bad ? -EINVAL : 0;
}

static int parse_fde(const struct sec *s, const uint8_t *body, const uint8_t *end, size_t cie_off,
		     struct rows_vec *rv, uint32_t order, struct unwind_table_stats *stats)
{
	struct rd r = { body, end, false };
	struct cie c;
	struct state init = { .cfa_reg = REG_RSP }, st;
	struct profd_urow none = { 0 };
	uint64_t start, range, loc;
	struct fde_ctx f;
	int err;

	if (cie_off >= s->size || parse_cie(s, cie_off, &c))
		return -EINVAL;
	if (s->eh) {
		if (!rd_encoded(&r, s, c.fde_enc, &start))
			return -EINVAL;
		rd_encoded(&r, s, c.fde_enc & 0x0f, &range);
	} else {
		start = rd_bytes(&r, c.addr_size);
		range = rd_bytes(&r, c.addr_size);
	}
	if (r.bad || range == 0)
		return r.bad ? -EINVAL : 0;
	if (start > UINT32_MAX || range > UINT32_MAX || start + range > (uint64_t)UINT32_MAX + 1)
		return -EFBIG;
	if (c.aug_z) {
		uint64_t alen = rd_uleb(&r);

		if (r.bad || alen > (uint64_t)(r.end - r.p))
			return -EINVAL;
		r.p += alen;
	}
	if (run_cfa(NULL, &c, c.insns, c.insns_end, &init, NULL, &loc))
		return -EINVAL;
	st = init;
	loc = start;
	f = (struct fde_ctx){ .s = s, .c = &c, .rv = rv, .order = order, .end = start + range, .st = stats };
	err = run_cfa(&f, &c, r.p, r.end, &st, &init, &loc);
	if (err == -ENOMEM || err == -EFBIG)
		return err;
	if (err) {
		/* Rows before the bad opcode stand; from here on, stop cleanly. */
		st.ra.how = RULE_OTHER;
	}
	if (loc < start + range && (err = emit(&f, loc, &st)))
		return err;
	stats->raw_rows++;
	return push_row(rv, start + range, order, &none);
}

static int parse_section(const struct sec *s, struct rows_vec *rv, struct unwind_table_stats *st)
{
	size_t off = 0;
	uint32_t order = 1;
	int err;

	while (off + 4 <= s->size) {
		struct rd r = { s->data + off, s->data + s->size, false };
		uint64_t len = rd_bytes(&r, 4), id;
		bool dwarf64 = false;
		const uint8_t *body, *end;
		size_t id_off;

		if (len == 0) {
			if (s->eh)
				break; /* the .eh_frame terminator */
			off += 4;
			continue;
		}
		if (len == 0xffffffff) {
			len = rd_bytes(&r, 8);
			dwarf64 = true;
		}
		if (r.bad || len > (uint64_t)(r.end - r.p) || len < 4)
			break;
		end = r.p + len;
		id_off = r.p - s->data;
		id = rd_bytes(&r, (s->eh || !dwarf64) ? 4 : 8);
		body = r.p;
		off = end - s->data;
		if (s->eh ? id == 0 : (id == 0xffffffffu || id == UINT64_MAX))
			continue; /* a CIE, parsed when an FDE names it */
		st->fdes++;
		if (s->eh && id > id_off) {
			st->bad_fdes++;
			continue;
		}
		err = parse_fde(s, body, end, s->eh ? id_off - id : id, rv, order++, st);
		if (err == -ENOMEM || err == -EFBIG)
			return err;
		if (err)
			st->bad_fdes++;
	}
	return 0;
}

/*
 * The rows' order as one integer: pc; at one pc a closing NONE row first,
 * so the function starting there wins; then the FDE's order (below 2^31:
 * every FDE pushes a row, and a table holds at most 2 * MAX_ROWS of them).
 */
static inline uint64_t raw_key(const struct raw_row *x)
{
	return (uint64_t)x->r.pc << 32 | (uint64_t)(PROFD_UR_CFA(x->r.kind) != PROFD_UR_CFA_NONE) << 31 |
	       x->order;
}

/*
 * Stable (rows of one FDE at one pc keep their order: the last one holds).
 * FDEs come mostly in address order (cc1: 7,316 descents in 489,187 rows),
 * so a merge of two halves already in order is skipped, and the key and
 * 12-byte copies are inline: qsort's generic merge called memcpy and the
 * comparator for every move, half the build time of a large binary.
 */
static int sort_rows(struct rows_vec *rv)
{
	struct raw_row *a = rv->v, *tmp;
	size_t n = rv->n, i, wmax;

	for (i = 1; i < n && raw_key(&a[i - 1]) <= raw_key(&a[i]); i++)
		;
	if (i >= n)
		return 0;
	/* Insertion sort of blocks of 16, then merges of blocks 16, 32, ... wide. */
	for (size_t lo = 0; lo < n; lo += 16) {
		size_t hi = lo + 16 < n ? lo + 16 : n;

		for (size_t j = lo + 1; j < hi; j++) {
			struct raw_row x = a[j];
			uint64_t k = raw_key(&x);
			size_t m = j;

			for (; m > lo && raw_key(&a[m - 1]) > k; m--)
				a[m] = a[m - 1];
			a[m] = x;
		}
	}
	if (n <= 16)
		return 0;
	/* The left block of a merge is copied out: the widest is below n rows (qsort's took n). */
	for (wmax = 16; wmax * 2 < n; wmax *= 2)
		;
	tmp = malloc(wmax * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	for (size_t w = 16; w < n; w *= 2) {
		for (size_t lo = 0; lo + w < n; lo += 2 * w) {
			size_t mid = lo + w, hi = lo + 2 * w < n ? lo + 2 * w : n, p = 0, q = mid, o = lo;

			if (raw_key(&a[mid - 1]) <= raw_key(&a[mid]))
				continue;
			memcpy(tmp, a + lo, w * sizeof(*a));
			while (p < w && q < hi)
				a[o++] = raw_key(&tmp[p]) <= raw_key(&a[q]) ? tmp[p++] : a[q++];
			while (p < w)
				a[o++] = tmp[p++];
		}
	}
	free(tmp);
	return 0;
}

static bool same_rule(const struct profd_urow *a, const struct profd_urow *b)
{
	return a->kind == b->kind && a->cfa_off == b->cfa_off && a->rbp_off == b->rbp_off;
}

/*
 * Buckets of about ROWS_PER_BUCKET rows on average: the walker's search
 * in one takes 3 or 4 steps, and the index adds 1/16 to the rows' size.
 */
#define ROWS_PER_BUCKET 8

/*
 * Puts the header and the bucket index (struct profd_uindex) in front of
 * the n rows compacted at the start of rv's buffer, which becomes the
 * table's block.
 */
static int add_index(struct unwind_table *t, struct rows_vec *rv, size_t n)
{
	struct profd_urow *blk = (struct profd_urow *)rv->v;
	uint64_t range, want = n / ROWS_PER_BUCKET ? n / ROWS_PER_BUCKET : 1;
	size_t nb, skip, len, have = rv->cap * sizeof(*rv->v);
	struct profd_uindex *h;
	uint32_t *idx, shift = 0;
	void *p;

	if (n == 0) {
		t->rows = realloc(rv->v, sizeof(*t->rows));
		t->rows = t->rows ? t->rows : blk;
		rv->v = NULL;
		return 0;
	}
	range = (uint64_t)blk[n - 1].pc - blk[0].pc;
	while (shift < 32 && (range >> shift) + 1 > want)
		shift++;
	nb = (range >> shift) + 1;
	skip = PROFD_UIDX_SLOTS(nb);
	len = (skip + n) * sizeof(*blk);
	if (len > have) {
		p = realloc(rv->v, len);
		if (!p)
			return -ENOMEM;
		rv->v = p;
		blk = p;
	}
	memmove(blk + skip, blk, n * sizeof(*blk));
	memset(blk, 0, skip * sizeof(*blk));
	h = (struct profd_uindex *)blk;
	h->base = blk[skip].pc;
	h->nb_shift = (uint32_t)nb << 8 | shift;
	idx = (uint32_t *)(blk + 1);
	for (size_t b = 0, j = 0; b < nb; b++) {
		uint64_t start = (uint64_t)h->base + ((uint64_t)b << shift);

		while (j + 1 < n && blk[skip + j + 1].pc <= start)
			j++;
		idx[b] = (uint32_t)j;
	}
	idx[nb] = (uint32_t)(n - 1);
	/* Shrinking a block keeps its contents; a failure leaves the larger block, as good. */
	p = len < have ? realloc(rv->v, len) : NULL;
	t->rows = p ? p : (struct profd_urow *)rv->v;
	rv->v = NULL;
	rv->n = rv->cap = 0;
	t->nrows = skip + n;
	t->skip = skip;
	return 0;
}

static int finish(struct unwind_table *t, struct rows_vec *rv)
{
	struct profd_urow *out;
	size_t n = 0;
	int err;

	err = sort_rows(rv);
	if (err)
		return err;
	/*
	 * Compacted in place, into the front of the same buffer: row n is
	 * written at byte 8n, below raw row i >= n at byte 12i, after that one
	 * was read. A second array beside the raw one would add a third to the
	 * build's peak.
	 */
	out = (struct profd_urow *)rv->v;
	for (size_t i = 0; i < rv->n; i++) {
		struct profd_urow r = rv->v[i].r;

		/* Of several rows at one pc the last one holds. */
		if (i + 1 < rv->n && rv->v[i + 1].r.pc == r.pc)
			continue;
		if (n == 0 && PROFD_UR_CFA(r.kind) == PROFD_UR_CFA_NONE)
			continue;
		if (n && same_rule(&out[n - 1], &r))
			continue;
		if (PROFD_UR_CFA(r.kind) == PROFD_UR_CFA_UNSUP)
			t->st.unsupported++;
		out[n++] = r;
	}
	return add_index(t, rv, n);
}

static int load_segs(Elf *elf, struct unwind_table *t)
{
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return -ENOEXEC;
	for (size_t i = 0; i < n && t->nsegs < MAX_SEGS; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		t->segs[t->nsegs++] = (struct seg){ ph.p_offset, ph.p_vaddr, ph.p_filesz };
	}
	return 0;
}

static int build(Elf *elf, struct unwind_table **out)
{
	struct unwind_table *t = NULL;
	struct rows_vec rv = { 0 };
	Elf_Scn *scn = NULL, *eh = NULL, *dbg = NULL;
	size_t shstrndx;
	GElf_Ehdr eh_hdr;
	int err = -ENOEXEC;

	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh_hdr) ||
	    eh_hdr.e_ident[EI_CLASS] != ELFCLASS64 || eh_hdr.e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh_hdr.e_machine != EM_X86_64 || elf_getshdrstrndx(elf, &shstrndx))
		goto out;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name)
			continue;
		if (!strcmp(name, ".eh_frame"))
			eh = scn;
		else if (!strcmp(name, ".debug_frame"))
			dbg = scn;
	}
	t = calloc(1, sizeof(*t));
	err = -ENOMEM;
	if (!t)
		goto out;
	err = load_segs(elf, t);
	if (err)
		goto out;
	/*
	 * .debug_frame only when there is no .eh_frame: mixing both would need
	 * per-function precedence, and every x86-64 toolchain emits .eh_frame.
	 */
	err = -ENOENT;
	for (int pass = 0; pass < 2; pass++) {
		Elf_Scn *sc = pass == 0 ? eh : (eh ? NULL : dbg);
		GElf_Shdr sh;
		Elf_Data *d;
		struct sec s;

		if (!sc || !gelf_getshdr(sc, &sh))
			continue;
		if ((sh.sh_flags & SHF_COMPRESSED) && elf_compress(sc, 0, 0) < 0)
			continue;
		d = elf_getdata(sc, NULL);
		if (!d || !d->d_buf || d->d_size == 0)
			continue;
		s = (struct sec){ d->d_buf, d->d_size, sh.sh_addr, pass == 0 };
		t->st.source = pass + 1;
		err = parse_section(&s, &rv, &t->st);
		if (err)
			goto out;
	}
	if (t->st.source == 0)
		goto out;
	err = finish(t, &rv);
out:
	free(rv.v);
	if (err) {
		unwind_table__free(t);
		return err;
	}
	*out = t;
	return 0;
}

int unwind_table__open_fd(int fd, struct unwind_table **out)
{
	Elf *elf;
	int err;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf)
		return -ENOEXEC;
	err = build(elf, out);
	elf_end(elf);
	return err;
}

int unwind_table__open_mem(const void *buf, size_t len, struct unwind_table **out)
{
	void *copy = malloc(len ? len : 1); /* libelf may write (decompression) into the image */
	Elf *elf;
	int err;

	if (!copy)
		return -ENOMEM;
	memcpy(copy, buf, len);
	elf_version(EV_CURRENT);
	elf = elf_memory(copy, len);
	err = elf ? build(elf, out) : -ENOEXEC;
	elf_end(elf);
	free(copy);
	return err;
}

void unwind_table__drop_rows(struct unwind_table *t)
{
	free(t->rows);
	t->rows = NULL;
}

void unwind_table__free(struct unwind_table *t)
{
	if (!t)
		return;
	free(t->rows);
	free(t);
}

size_t unwind_table__nrows(const struct unwind_table *t)
{
	return t->nrows;
}

const struct profd_urow *unwind_table__rows(const struct unwind_table *t)
{
	return t->rows;
}

void unwind_table__stats(const struct unwind_table *t, struct unwind_table_stats *st)
{
	*st = t->st;
}

int unwind_table__lookup(const struct unwind_table *t, uint64_t vaddr, struct profd_urow *row)
{
	const struct profd_uindex *h = (const void *)t->rows;
	const uint32_t *idx;
	const struct profd_urow *rows;
	size_t lo, hi, nb, b;

	/* After drop_rows there is nothing to search, nor a block to point into. */
	if (!t->rows || t->nrows <= t->skip || vaddr < h->base)
		return -ENOENT;
	idx = (const void *)(t->rows + 1);
	rows = t->rows + t->skip;
	/* What the walker does (bpf/unwind.h uw_find_row): the search runs within one bucket. */
	nb = PROFD_UIDX_NB(h);
	b = (vaddr - h->base) >> PROFD_UIDX_SHIFT(h);
	if (b >= nb)
		b = nb - 1;
	lo = idx[b] + 1;
	hi = idx[b + 1] + 1;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rows[mid].pc <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	*row = rows[lo - 1];
	return 0;
}

int unwind_table__segment(const struct unwind_table *t, unsigned i, uint64_t *offset, uint64_t *filesz,
			  uint64_t *vaddr)
{
	if (i >= t->nsegs)
		return -ENOENT;
	*offset = t->segs[i].offset;
	*filesz = t->segs[i].filesz;
	*vaddr = t->segs[i].vaddr;
	return 0;
}

int unwind_table__file_to_vaddr(const struct unwind_table *t, uint64_t off, uint64_t *vaddr)
{
	for (unsigned i = 0; i < t->nsegs; i++) {
		const struct seg *s = &t->segs[i];

		/* Mappings start page-aligned, at or below the segment's own offset. */
		if (off >= (s->offset & ~0xfffULL) && off < s->offset + s->filesz) {
			*vaddr = off - s->offset + s->vaddr;
			return 0;
		}
	}
	return -ENOENT;
}
