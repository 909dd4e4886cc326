/*
 * ELF symbol reader. Files are untrusted (containers, users' binaries) and
 * read by root, so every count and size is capped, libelf reads with pread
 * (ELF_C_READ) rather than mmap, and nothing outlives elfsym__open_*
 * except our own copies.
 */
#include "elfsym.h"
#include "strtab.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <lzma.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define MAX_FILE_BYTES (16ull << 30)
#define MAX_SECTION_BYTES (512u << 20)
#define MAX_SYMS (4u << 20)
#define MAX_STR_BYTES (256u << 20)
/* finalize() copies the kept names into an exact-size table anyway: start small. */
#define FIRST_STR_BYTES 4096
/* Longer names are cut here: the longest C++ names seen in distribution libraries fit. */
#define MAX_NAME_LEN 1024
#define MAX_LOADS 64
#define MAX_SECTIONS (1u << 16)
#define MAX_NOTE_BYTES (1u << 20)
#define MAX_BUILD_ID 64
#define MAX_DEBUGLINK 1024
#define MAX_DEBUGDATA_IN (64u << 20)
#define MAX_DEBUGDATA_OUT (256u << 20)
/* Per file when the caller sets no budget: what the limits above allowed before there was one. */
#define DEFAULT_MAX_BYTES (1024u << 20)
/* A symbol without size and without a following one still ends somewhere. */
#define MAX_UNSIZED_SPAN (1u << 20)

/*
 * 16 bytes a symbol: a busy host's cache holds a few hundred thousand. The
 * address fits 56 bits (no user space reaches higher on any 64-bit ABI), so
 * the top byte carries the flag and the priority; a span over 4 GB is
 * clamped (no function is that long, only a corrupt size field).
 */
struct esym {
	uint64_t bits;    /* addr | prio << PRIO_SHIFT | unsized << 63 */
	uint32_t span;    /* sized: size; unsized: to the section end (bounded again by the next symbol) */
	uint32_t name;    /* offset into str */
};

#define ADDR_BITS 56
#define ADDR_MASK ((1ull << ADDR_BITS) - 1)
#define PRIO_SHIFT ADDR_BITS
#define UNSIZED_BIT (1ull << 63)

static inline uint64_t sym_addr(const struct esym *s)
{
	return s->bits & ADDR_MASK;
}

static inline uint8_t sym_prio(const struct esym *s)
{
	return (uint8_t)(s->bits >> PRIO_SHIFT & 0x3f);
}

static inline int sym_unsized(const struct esym *s)
{
	return !!(s->bits & UNSIZED_BIT);
}

static inline uint64_t sym_end(const struct esym *s)
{
	return sym_addr(s) + s->span;
}

struct eload {
	uint64_t off, filesz, vaddr;
	uint32_t flags;
};

struct elfsym {
	struct esym *syms;
	size_t nsyms, cap;
	struct strtab *str;
	struct eload loads[MAX_LOADS];
	size_t nloads;
	uint8_t build_id[MAX_BUILD_ID];
	size_t build_id_len;
	char *debuglink;
	uint32_t debuglink_crc;
	bool full_symtab;
	/*
	 * The file's budget, checked before each allocation: bytes of sections
	 * read (libelf keeps them until elf_end), symbols and names kept, and
	 * MiniDebugInfo decompressed. A file over it is refused (-EFBIG).
	 */
	size_t max_bytes;
	size_t read_bytes;
};

struct secrange {
	uint64_t addr, end;
};

/*
 * Offsets already interned, by the offset they came from (a symbol's
 * st_name, or a name's offset in the table being replaced): symbols that
 * share a name are hashed once, not once each. Direct-mapped: a clash only
 * costs a hash.
 */
#define MEMO_MAX_SLOTS 65536
struct name_memo {
	uint32_t mask;
	struct { uint32_t from, to; } slot[]; /* from: source offset + 1; 0: empty */
};

/* Sized to the symbols it serves: a small library's table should not cost a large block. */
static struct name_memo *memo_new(size_t nsyms)
{
	size_t n = 16;
	struct name_memo *m;

	while (n < nsyms && n < MEMO_MAX_SLOTS)
		n <<= 1;
	m = calloc(1, sizeof(*m) + n * sizeof(m->slot[0]));
	if (m)
		m->mask = (uint32_t)(n - 1);
	return m;
}

static int intern_memo(struct strtab *t, struct name_memo *memo, uint32_t from, const char *name, size_t len,
		       uint32_t *off)
{
	size_t slot = memo ? ((from * 0x9e3779b1u) >> 8) & memo->mask : 0;
	int err;

	if (memo && memo->slot[slot].from == from + 1) {
		*off = memo->slot[slot].to;
		return 0;
	}
	err = strtab__intern(t, name, len, off);
	if (!err && memo) {
		memo->slot[slot].from = from + 1;
		memo->slot[slot].to = *off;
	}
	return err;
}

static int add_sym(struct elfsym *e, uint64_t addr, uint64_t end, bool unsized, uint8_t prio,
		   const char *name, size_t len, struct name_memo *memo, uint32_t from)
{
	struct esym *s;
	int err;

	if (e->nsyms >= MAX_SYMS)
		return -EFBIG;
	if (e->nsyms == e->cap) {
		size_t ncap = e->cap ? e->cap * 2 : 256;
		struct esym *ns;

		if (ncap * sizeof(*ns) + strtab__len(e->str) > e->max_bytes)
			return -EFBIG;
		ns = realloc(e->syms, ncap * sizeof(*ns));
		if (!ns)
			return -ENOMEM;
		e->syms = ns;
		e->cap = ncap;
	}
	if (addr > ADDR_MASK || end < addr)
		return 0;
	s = &e->syms[e->nsyms];
	if (strtab__len(e->str) + len + 1 + e->cap * sizeof(*s) > e->max_bytes)
		return -EFBIG;
	err = intern_memo(e->str, memo, from, name, len, &s->name);
	if (err)
		return err;
	s->bits = addr | (uint64_t)(prio & 0x3f) << PRIO_SHIFT | (unsized ? UNSIZED_BIT : 0);
	s->span = end - addr > UINT32_MAX ? UINT32_MAX : (uint32_t)(end - addr);
	e->nsyms++;
	return 0;
}

/*
 * Of several names for one address, perf's choice: sized over unsized,
 * global over weak over local, fewer leading underscores, then the shorter
 * name (printf over _IO_printf).
 */
static uint8_t name_prio(bool unsized, int bind, const char *name)
{
	int us = 0;

	while (us < 3 && name[us] == '_')
		us++;
	return (uint8_t)((unsized ? 0 : 1) << 5 | (bind == STB_GLOBAL ? 2 : bind == STB_WEAK ? 1 : 0) << 3 |
			 (3 - us));
}

static int cmp_sym(const void *a, const void *b, void *arg)
{
	const struct esym *x = a, *y = b;
	const struct strtab *str = arg;
	size_t lx, ly;

	if (sym_addr(x) != sym_addr(y))
		return sym_addr(x) < sym_addr(y) ? -1 : 1;
	if (sym_prio(x) != sym_prio(y))
		return sym_prio(x) > sym_prio(y) ? -1 : 1;
	lx = strlen(strtab__str(str, x->name));
	ly = strlen(strtab__str(str, y->name));
	if (lx != ly)
		return lx < ly ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

/*
 * Sorts and keeps one symbol per address: aliases (memcpy/__memcpy_avx) name
 * the same code. Then the arrays are cut to size and the strings of the
 * dropped names (aliases, and the .dynsym copies of .symtab names) left out:
 * the cache keeps only what lookups can return, in exactly-sized blocks.
 */
static int finalize(struct elfsym *e)
{
	size_t w = 0, len = 0;
	struct strtab *kept = NULL;
	struct name_memo *memo;
	struct esym *ns;
	int err;

	if (!e->nsyms) {
		free(e->syms);
		e->syms = NULL;
		e->cap = 0;
		strtab__reset(e->str);
		strtab__shrink(e->str);
		return 0;
	}
	qsort_r(e->syms, e->nsyms, sizeof(*e->syms), cmp_sym, e->str);
	for (size_t r = 1; r < e->nsyms; r++) {
		if (sym_addr(&e->syms[r]) == sym_addr(&e->syms[w]))
			continue;
		e->syms[++w] = e->syms[r];
	}
	e->nsyms = w + 1;
	/* Names are interned: count each offset once (the sort put equal offsets anywhere, so bound it instead). */
	len = strtab__len(e->str);
	/*
	 * Sized to the kept names: only the first add allocates, so a failure
	 * leaves every symbol naming the old table.
	 */
	err = strtab__new(len, MAX_STR_BYTES, &kept);
	memo = err ? NULL : memo_new(e->nsyms);
	if (!err && !memo)
		err = -ENOMEM;
	for (size_t i = 0; !err && i < e->nsyms; i++) {
		uint32_t from = e->syms[i].name;
		const char *name = strtab__str(e->str, from);

		err = intern_memo(kept, memo, from, name, strlen(name), &e->syms[i].name);
	}
	free(memo);
	if (!err)
		strtab__shrink(kept);
	if (err) {
		strtab__free(kept);
		return err;
	}
	strtab__free(e->str);
	e->str = kept;
	ns = realloc(e->syms, e->nsyms * sizeof(*ns));
	if (ns) {
		e->syms = ns;
		e->cap = e->nsyms;
	}
	return 0;
}

/* Section bytes libelf is about to read and keep until elf_end count against the file's budget. */
static int charge_read(struct elfsym *e, uint64_t bytes)
{
	if (bytes > e->max_bytes || e->read_bytes + bytes > e->max_bytes)
		return -EFBIG;
	e->read_bytes += bytes;
	return 0;
}

static int collect_symbols(struct elfsym *e, Elf *elf, size_t shnum, const struct secrange *secs,
			   Elf_Scn *scn, const GElf_Shdr *sh)
{
	Elf_Scn *strscn;
	GElf_Shdr strsh;
	Elf_Data *data, *strdata;
	struct name_memo *memo = NULL;
	size_t n;
	int err = 0;

	if (sh->sh_entsize == 0 || sh->sh_size > MAX_SECTION_BYTES || sh->sh_link >= shnum)
		return -EINVAL;
	strscn = elf_getscn(elf, sh->sh_link);
	if (!strscn || !gelf_getshdr(strscn, &strsh) || strsh.sh_type != SHT_STRTAB ||
	    strsh.sh_size > MAX_SECTION_BYTES)
		return -EINVAL;
	/* Before libelf reads them: a sparse file makes a huge section cost its writer nothing. */
	err = charge_read(e, sh->sh_size);
	if (!err)
		err = charge_read(e, strsh.sh_size);
	if (err)
		return err;
	data = elf_getdata(scn, NULL);
	strdata = elf_getdata(strscn, NULL);
	if (!data || !strdata || !data->d_buf || !strdata->d_buf)
		return -EINVAL;
	n = sh->sh_size / sh->sh_entsize;
	memo = memo_new(n);
	if (!memo)
		return -ENOMEM;
	for (size_t i = 1; i < n; i++) {
		GElf_Sym sym;
		const char *name;
		size_t avail, len;
		uint64_t end = 0;
		int type, bind;
		bool unsized;
		uint8_t prio;

		if (!gelf_getsym(data, (int)i, &sym))
			break;
		type = GELF_ST_TYPE(sym.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC)
			continue;
		if (sym.st_shndx == SHN_UNDEF || sym.st_value == 0 || sym.st_name >= strdata->d_size)
			continue;
		name = (const char *)strdata->d_buf + sym.st_name;
		avail = strdata->d_size - sym.st_name;
		len = strnlen(name, avail < MAX_NAME_LEN ? avail : MAX_NAME_LEN);
		if (len == 0 || len == avail)
			continue; /* empty or not terminated inside the table */
		unsized = sym.st_size == 0;
		if (!unsized) {
			if (sym.st_size > UINT64_MAX - sym.st_value)
				continue;
			end = sym.st_value + sym.st_size;
		} else {
			if (sym.st_shndx < shnum && secs && secs[sym.st_shndx].addr <= sym.st_value &&
			    sym.st_value < secs[sym.st_shndx].end)
				end = secs[sym.st_shndx].end;
			else
				end = sym.st_value + MAX_UNSIZED_SPAN;
			if (end < sym.st_value)
				end = UINT64_MAX;
		}
		bind = GELF_ST_BIND(sym.st_info);
		prio = name_prio(unsized, bind, name);
		err = add_sym(e, sym.st_value, end, unsized, prio, name, len, memo, (uint32_t)sym.st_name);
		if (err)
			break;
	}
	free(memo);
	return err;
}

static void note_build_id(struct elfsym *e, Elf_Data *data)
{
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nh;

	while (off < data->d_size && (next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > off) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    !memcmp((const char *)data->d_buf + name_off, "GNU", 4) && nh.n_descsz > 0 &&
		    nh.n_descsz <= MAX_BUILD_ID && desc_off + nh.n_descsz <= data->d_size) {
			memcpy(e->build_id, (const char *)data->d_buf + desc_off, nh.n_descsz);
			e->build_id_len = nh.n_descsz;
			return;
		}
		off = next;
	}
}

static int read_phdrs(struct elfsym *e, Elf *elf)
{
	GElf_Ehdr eh;
	size_t phnum;

	/* libelf reports 0 headers when e_phnum promises more than the file holds. */
	if (!gelf_getehdr(elf, &eh) || elf_getphdrnum(elf, &phnum) ||
	    (eh.e_phnum != PN_XNUM && phnum != eh.e_phnum))
		return -EINVAL;
	if (phnum > 4096)
		return -EINVAL;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph))
			return -EINVAL;
		if (ph.p_type == PT_LOAD && e->nloads < MAX_LOADS && ph.p_filesz > 0 &&
		    ph.p_offset + ph.p_filesz >= ph.p_offset && ph.p_vaddr + ph.p_filesz >= ph.p_vaddr) {
			e->loads[e->nloads++] = (struct eload){ ph.p_offset, ph.p_filesz, ph.p_vaddr, ph.p_flags };
		} else if (ph.p_type == PT_NOTE && !e->build_id_len && ph.p_filesz > 0 &&
			   ph.p_filesz <= MAX_NOTE_BYTES) {
			Elf_Data *d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz,
							   ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);

			if (d && d->d_buf)
				note_build_id(e, d);
		}
	}
	return 0;
}

static int read_debuglink(struct elfsym *e, Elf *elf, Elf_Scn *scn)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	const char *s;
	size_t len, crc_off;
	uint8_t c[4];
	GElf_Ehdr eh;

	if (!d || !d->d_buf || d->d_size > MAX_DEBUGLINK + 8)
		return 0;
	s = d->d_buf;
	len = strnlen(s, d->d_size);
	crc_off = (len + 4) & ~(size_t)3;
	if (len == 0 || len == d->d_size || crc_off + 4 > d->d_size || memchr(s, '/', len) ||
	    !strcmp(s, ".") || !strcmp(s, ".."))
		return 0;
	if (!gelf_getehdr(elf, &eh))
		return 0;
	memcpy(c, s + crc_off, 4);
	e->debuglink_crc = eh.e_ident[EI_DATA] == ELFDATA2MSB ?
		(uint32_t)c[0] << 24 | (uint32_t)c[1] << 16 | (uint32_t)c[2] << 8 | c[3] :
		(uint32_t)c[3] << 24 | (uint32_t)c[2] << 16 | (uint32_t)c[1] << 8 | c[0];
	e->debuglink = strndup(s, len);
	return e->debuglink ? 0 : -ENOMEM;
}

static int parse_elf(struct elfsym *e, Elf *elf, bool nested);

/* MiniDebugInfo: an xz-compressed ELF holding the .symtab that strip removed. */
static int read_debugdata(struct elfsym *e, Elf_Scn *scn, const GElf_Shdr *sh)
{
	lzma_stream strm = LZMA_STREAM_INIT;
	Elf_Data *d;
	uint8_t *out = NULL, *no;
	size_t cap = 0;
	Elf *inner = NULL;
	int err = 0;

	if (sh->sh_type != SHT_PROGBITS || sh->sh_size > MAX_DEBUGDATA_IN)
		return -EINVAL;
	err = charge_read(e, sh->sh_size);
	if (err)
		return err;
	d = elf_getdata(scn, NULL);
	if (!d || !d->d_buf)
		return -EINVAL;
	if (lzma_stream_decoder(&strm, 64u << 20, 0) != LZMA_OK)
		return -ENOMEM;
	strm.next_in = d->d_buf;
	strm.avail_in = d->d_size;
	for (;;) {
		lzma_ret r;

		if (strm.avail_out == 0) {
			size_t ncap = cap ? cap * 2 : 1u << 16;

			if (cap >= MAX_DEBUGDATA_OUT || e->read_bytes + ncap > e->max_bytes) {
				err = -EFBIG;
				goto out;
			}
			no = realloc(out, ncap);
			if (!no) {
				err = -ENOMEM;
				goto out;
			}
			out = no;
			strm.next_out = out + cap;
			strm.avail_out = ncap - cap;
			cap = ncap;
		}
		r = lzma_code(&strm, LZMA_FINISH);
		if (r == LZMA_STREAM_END)
			break;
		if (r != LZMA_OK) {
			err = r == LZMA_MEM_ERROR ? -ENOMEM : -EINVAL;
			goto out;
		}
	}
	inner = elf_memory((char *)out, cap - strm.avail_out);
	if (!inner || elf_kind(inner) != ELF_K_ELF) {
		err = -EINVAL;
		goto out;
	}
	err = parse_elf(e, inner, true);
out:
	if (inner)
		elf_end(inner);
	lzma_end(&strm);
	free(out);
	return err;
}

/* PLT slots bound to a symbol; slots past this many are left unnamed (a corrupt count). */
#define MAX_PLT_SLOTS (1u << 20)

/*
 * The PLT stubs by the name of what they jump to, "func@plt", as perf and
 * objdump name them: no symbol table covers them, and in an interpreter a
 * few per cent of samples land in them. Slot i of .plt.sec (IBT builds) or
 * slot i + 1 of .plt (slot 0 is the resolver's) serves the i-th relocation
 * of .rela.plt, whose symbol is in the table it links to (.dynsym).
 */
static int add_plt(struct elfsym *e, Elf *elf, size_t shnum, size_t shstrndx, uint16_t machine)
{
	Elf_Scn *scn = NULL, *rel = NULL, *dyn, *strscn;
	GElf_Shdr sh, relsh = { 0 }, dynsh, strsh, plt = { 0 }, pltsec = { 0 };
	Elf_Data *reld, *dynd, *strd;
	uint64_t base, header, slot = 16, end;
	size_t n;
	int err = 0;

	if (machine != EM_X86_64 && machine != EM_AARCH64)
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		if ((sh.sh_type == SHT_RELA || sh.sh_type == SHT_REL) &&
		    (!strcmp(name, ".rela.plt") || !strcmp(name, ".rel.plt"))) {
			rel = scn;
			relsh = sh;
		} else if (!strcmp(name, ".plt")) {
			plt = sh;
		} else if (!strcmp(name, ".plt.sec")) {
			pltsec = sh;
		}
	}
	if (!rel || !relsh.sh_entsize || relsh.sh_size > MAX_SECTION_BYTES || relsh.sh_link >= shnum)
		return 0;
	if (pltsec.sh_size) {
		base = pltsec.sh_addr;
		end = pltsec.sh_addr + pltsec.sh_size;
		header = 0;
	} else if (plt.sh_size) {
		base = plt.sh_addr;
		end = plt.sh_addr + plt.sh_size;
		header = machine == EM_AARCH64 ? 32 : 16;
	} else {
		return 0;
	}
	if (end < base)
		return 0;
	dyn = elf_getscn(elf, relsh.sh_link);
	if (!dyn || !gelf_getshdr(dyn, &dynsh) || dynsh.sh_type != SHT_DYNSYM || !dynsh.sh_entsize ||
	    dynsh.sh_size > MAX_SECTION_BYTES || dynsh.sh_link >= shnum)
		return 0;
	strscn = elf_getscn(elf, dynsh.sh_link);
	if (!strscn || !gelf_getshdr(strscn, &strsh) || strsh.sh_type != SHT_STRTAB ||
	    strsh.sh_size > MAX_SECTION_BYTES)
		return 0;
	/* .dynsym and its names were read (and counted) for the symbols already; libelf keeps them. */
	err = charge_read(e, relsh.sh_size);
	if (err)
		return err;
	reld = elf_getdata(rel, NULL);
	dynd = elf_getdata(dyn, NULL);
	strd = elf_getdata(strscn, NULL);
	if (!reld || !dynd || !strd || !reld->d_buf || !dynd->d_buf || !strd->d_buf)
		return 0;
	n = relsh.sh_size / relsh.sh_entsize;
	if (n > MAX_PLT_SLOTS)
		n = MAX_PLT_SLOTS;
	for (size_t i = 0; i < n; i++) {
		uint64_t addr = base + header + i * slot, info;
		char name[MAX_NAME_LEN + 5];
		const char *sname;
		GElf_Sym sym;
		size_t avail, len;

		if (addr < base || addr + slot > end)
			break;
		if (relsh.sh_type == SHT_RELA) {
			GElf_Rela r;

			if (!gelf_getrela(reld, (int)i, &r))
				break;
			info = r.r_info;
		} else {
			GElf_Rel r;

			if (!gelf_getrel(reld, (int)i, &r))
				break;
			info = r.r_info;
		}
		/* An IRELATIVE slot has no symbol: it stays unnamed, but keeps its place. */
		if (GELF_R_SYM(info) == 0 || !gelf_getsym(dynd, (int)GELF_R_SYM(info), &sym) ||
		    sym.st_name >= strd->d_size)
			continue;
		sname = (const char *)strd->d_buf + sym.st_name;
		avail = strd->d_size - sym.st_name;
		len = strnlen(sname, avail < MAX_NAME_LEN ? avail : MAX_NAME_LEN);
		if (len == 0 || len == avail)
			continue;
		memcpy(name, sname, len);
		memcpy(name + len, "@plt", 5);
		/* Local binding, sized: a real symbol at the same address keeps its name. */
		err = add_sym(e, addr, addr + slot, false, name_prio(false, STB_LOCAL, name), name,
			      len + 4, NULL, 0);
		if (err)
			break;
	}
	return err;
}

/* nested: the MiniDebugInfo image, which only contributes symbols. */
static int parse_elf(struct elfsym *e, Elf *elf, bool nested)
{
	struct secrange *secs = NULL;
	size_t shnum, shstrndx;
	Elf_Scn *scn = NULL, *debugdata = NULL;
	GElf_Shdr debugdata_sh = { 0 };
	GElf_Ehdr eh;
	bool have_symtab = false;
	int err = 0;

	if (!gelf_getehdr(elf, &eh))
		return -ENOEXEC;
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)
		return -ENOEXEC;
	if (!nested) {
		err = read_phdrs(e, elf);
		if (err)
			return err;
	}
	if (elf_getshdrnum(elf, &shnum) || shnum > MAX_SECTIONS)
		return -EINVAL;
	if (elf_getshdrstrndx(elf, &shstrndx))
		shstrndx = SHN_UNDEF;
	secs = calloc(shnum ? shnum : 1, sizeof(*secs));
	if (!secs)
		return -ENOMEM;
	for (size_t i = 0; i < shnum; i++) {
		GElf_Shdr sh;

		scn = elf_getscn(elf, i);
		if (scn && gelf_getshdr(scn, &sh) && sh.sh_addr + sh.sh_size >= sh.sh_addr)
			secs[i] = (struct secrange){ sh.sh_addr, sh.sh_addr + sh.sh_size };
	}
	scn = NULL;
	/* .symtab before .dynsym: of two names for one address the full table's comes first. */
	for (int pass = 0; pass < 2; pass++) {
		while ((scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			const char *name;

			if (!gelf_getshdr(scn, &sh))
				continue;
			if (pass == 0 && sh.sh_type == SHT_SYMTAB) {
				err = collect_symbols(e, elf, shnum, secs, scn, &sh);
				if (err == -ENOMEM || err == -EFBIG)
					goto out;
				err = 0;
				have_symtab = true;
			} else if (pass == 1 && sh.sh_type == SHT_DYNSYM) {
				err = collect_symbols(e, elf, shnum, secs, scn, &sh);
				if (err == -ENOMEM || err == -EFBIG)
					goto out;
				err = 0;
			}
			if (pass != 0 || nested || shstrndx == SHN_UNDEF)
				continue;
			name = elf_strptr(elf, shstrndx, sh.sh_name);
			if (!name)
				continue;
			if (sh.sh_type == SHT_NOTE && !e->build_id_len && sh.sh_size <= MAX_NOTE_BYTES) {
				Elf_Data *d = elf_getdata(scn, NULL);

				if (d && d->d_buf)
					note_build_id(e, d);
			} else if (!strcmp(name, ".gnu_debuglink") && !e->debuglink) {
				err = read_debuglink(e, elf, scn);
				if (err)
					goto out;
			} else if (!strcmp(name, ".gnu_debugdata")) {
				debugdata = scn;
				debugdata_sh = sh;
			}
		}
	}
	if (!nested && shstrndx != SHN_UNDEF) {
		err = add_plt(e, elf, shnum, shstrndx, eh.e_machine);
		if (err == -ENOMEM || err == -EFBIG)
			goto out;
		err = 0;
	}
	if (have_symtab)
		e->full_symtab = true;
	if (!have_symtab && debugdata) {
		/* A corrupt MiniDebugInfo leaves the .dynsym names; allocation failure and the budget are fatal. */
		err = read_debugdata(e, debugdata, &debugdata_sh);
		if (err == -ENOMEM || err == -EFBIG)
			goto out;
		if (!err)
			e->full_symtab = true;
		err = 0;
	}
out:
	free(secs);
	return err;
}

static int open_elf(Elf *elf, size_t max_bytes, struct elfsym **out)
{
	struct elfsym *e;
	int err;

	if (!elf)
		return -EINVAL;
	if (elf_kind(elf) != ELF_K_ELF)
		return -ENOEXEC;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->max_bytes = max_bytes ? max_bytes : DEFAULT_MAX_BYTES;
	err = strtab__new(FIRST_STR_BYTES, MAX_STR_BYTES, &e->str);
	if (!err)
		err = parse_elf(e, elf, false);
	if (!err)
		err = finalize(e);
	if (err)
		goto out;
	*out = e;
	e = NULL;
out:
	elfsym__free(e);
	return err;
}

int elfsym__open_fd(int fd, struct elfsym **out)
{
	return elfsym__open_fd_max(fd, 0, out);
}

int elfsym__open_fd_max(int fd, size_t max_bytes, struct elfsym **out)
{
	struct stat st;
	Elf *elf;
	int err;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if ((uint64_t)st.st_size > MAX_FILE_BYTES)
		return -EFBIG;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf)
		return -EINVAL;
	err = open_elf(elf, max_bytes, out);
	elf_end(elf);
	return err;
}

int elfsym__open_mem(const void *buf, size_t len, struct elfsym **out)
{
	char *copy;
	Elf *elf;
	int err;

	if (len > MAX_FILE_BYTES)
		return -EFBIG;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	/* libelf may convert byte order in place; the caller's buffer stays untouched. */
	copy = malloc(len ? len : 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, buf, len);
	elf = elf_memory(copy, len);
	err = open_elf(elf, 0, out);
	if (elf)
		elf_end(elf);
	free(copy);
	return err;
}

void elfsym__free(struct elfsym *e)
{
	if (!e)
		return;
	free(e->syms);
	strtab__free(e->str);
	free(e->debuglink);
	free(e);
}

int elfsym__lookup(const struct elfsym *e, uint64_t vaddr, const char **name, uint64_t *start)
{
	size_t lo = 0, hi = e->nsyms, stop;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (sym_addr(&e->syms[mid]) <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Look a little further back for a sized symbol that encloses a smaller one. */
	stop = lo > 16 ? lo - 16 : 0;
	for (size_t k = lo; k > stop; k--) {
		const struct esym *s = &e->syms[k - 1];
		uint64_t end = sym_end(s);

		if (sym_unsized(s) && k < e->nsyms && sym_addr(&e->syms[k]) < end)
			end = sym_addr(&e->syms[k]);
		if (vaddr < end) {
			*name = strtab__str(e->str, s->name);
			if (start)
				*start = sym_addr(s);
			return 0;
		}
	}
	return -ENOENT;
}

int elfsym__file_to_vaddr(const struct elfsym *e, uint64_t off, uint64_t *vaddr)
{
	for (size_t i = 0; i < e->nloads; i++) {
		const struct eload *l = &e->loads[i];

		if (off >= l->off && off - l->off < l->filesz) {
			*vaddr = off - l->off + l->vaddr;
			return 0;
		}
	}
	return -ENOENT;
}

size_t elfsym__build_id(const struct elfsym *e, const uint8_t **id)
{
	*id = e->build_id;
	return e->build_id_len;
}

const char *elfsym__debuglink(const struct elfsym *e, uint32_t *crc)
{
	if (crc)
		*crc = e->debuglink_crc;
	return e->debuglink;
}

int elfsym__has_full_symtab(const struct elfsym *e)
{
	return e->full_symtab;
}

size_t elfsym__nsyms(const struct elfsym *e)
{
	return e->nsyms;
}

size_t elfsym__mem_bytes(const struct elfsym *e)
{
	return sizeof(*e) + e->cap * sizeof(*e->syms) + strtab__mem_bytes(e->str);
}

int elfsym__merge(struct elfsym *e, const struct elfsym *src)
{
	for (size_t i = 0; i < src->nsyms; i++) {
		const struct esym *s = &src->syms[i];
		const char *name = strtab__str(src->str, s->name);
		int err = add_sym(e, sym_addr(s), sym_end(s), sym_unsized(s), sym_prio(s), name, strlen(name), NULL, 0);

		if (err) {
			int ferr = finalize(e);

			return ferr ? ferr : err;
		}
	}
	if (src->full_symtab)
		e->full_symtab = true;
	return finalize(e);
}

int elfsym__crc32_fd(int fd, uint64_t max, uint32_t *crc)
{
	unsigned char buf[65536];
	struct stat st;
	uLong c = crc32(0L, Z_NULL, 0);
	uint64_t off = 0;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if ((uint64_t)st.st_size > max)
		return -EFBIG;
	for (;;) {
		ssize_t r = pread(fd, buf, sizeof(buf), (off_t)off);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			break;
		c = crc32(c, buf, (uInt)r);
		off += (uint64_t)r;
		if (off > max)
			return -EFBIG; /* grew while we read */
	}
	*crc = (uint32_t)c;
	return 0;
}
