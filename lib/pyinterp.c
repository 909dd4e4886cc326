/*
 * CPython processes are recognised by their ELF symbols: _PyRuntime (the
 * interpreter's global state, whose thread list the BPF walker reads) and
 * PyCode_Type (every code object points to it, which the walker checks).
 * The version comes from Py_Version (3.11+) or, for 3.10, from the file's
 * name; 3.13+ also describe their layout in _Py_DebugOffsets, which must
 * agree with the table. Results hang off the file's entry in the shared
 * file cache (dev, inode): a host starts many processes of the same few
 * interpreters, and the files that hold them are the ones the symbols and
 * unwind tables read too.
 */
#include <elf.h>
#include <errno.h>
#include <sys/sysmacros.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "filecache.h"
#include "procmaps.h"
#include "pyinterp.h"
#include "pyoffsets.h"

#define MAX_SECTIONS 4096
#define MAX_SYMTAB (64u << 20) /* bytes of one symbol or string table read */
#define MAX_LOADS 16
#define DEBUG_IMAGE 584        /* sizeof(_Py_DebugOffsets) in 3.13 */

struct load {
	uint64_t offset, vaddr, filesz;
	uint32_t flags; /* PF_* */
};

struct file_ent {
	uint64_t dev, inode;
	int result;           /* 0, -ENOENT, -EPROTONOSUPPORT, other -errno */
	struct pyinterp_file f;
	struct load loads[MAX_LOADS];
	uint32_t nloads;
	uint32_t used;        /* clock of the last use, for eviction */
};

struct pyinterp {
	struct filecache *fc; /* ours hang off its entries in slot */
	int slot;
	struct file_ent **files; /* what we hold, for eviction: the least recently used goes */
	uint32_t nfiles, cap, clock;
	struct pyinterp_stats st;
	/* The last pyinterp__find's file and answer, before its bias. */
	const struct file_ent *last;
	uint64_t last_bias;
	struct profd_pyproc last_pp;
	char last_path[4096]; /* the name the last file found was mapped as ("": too long) */
};

int pyinterp__new(struct filecache *fc, uint32_t files, struct pyinterp **out)
{
	struct pyinterp *p = calloc(1, sizeof(*p));
	int err = -ENOMEM;

	if (!p)
		return -ENOMEM;
	p->fc = fc;
	p->cap = files ? files : 64;
	p->files = calloc(p->cap, sizeof(*p->files));
	if (!p->files)
		goto fail;
	/* No drop: pyinterp__free takes ours out before the cache goes. */
	p->slot = filecache__slot(fc, NULL, NULL);
	if (p->slot < 0) {
		err = p->slot;
		goto fail;
	}
	*out = p;
	return 0;
fail:
	free(p->files);
	free(p);
	return err;
}

void pyinterp__free(struct pyinterp *p)
{
	if (!p)
		return;
	for (uint32_t i = 0; i < p->nfiles; i++) {
		filecache__set(p->fc, p->files[i]->dev, p->files[i]->inode, p->slot, NULL);
		free(p->files[i]);
	}
	free(p->files);
	free(p);
}

static int read_at(int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t n = pread(fd, buf, len, (off_t)off);

	return n == (ssize_t)len ? 0 : -ENOEXEC;
}

struct elf {
	int fd;
	uint64_t size;
	Elf64_Ehdr eh;
	struct load loads[MAX_LOADS];
	uint32_t nloads;
};

static int elf_open(struct elf *e, int fd)
{
	struct stat st;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		return -EINVAL;
	e->fd = fd;
	e->size = st.st_size;
	e->nloads = 0;
	if (read_at(fd, &e->eh, sizeof(e->eh), 0) || memcmp(e->eh.e_ident, ELFMAG, SELFMAG) ||
	    e->eh.e_ident[EI_CLASS] != ELFCLASS64 || e->eh.e_ident[EI_DATA] != ELFDATA2LSB ||
	    e->eh.e_shentsize != sizeof(Elf64_Shdr) || e->eh.e_phentsize != sizeof(Elf64_Phdr) ||
	    e->eh.e_shnum > MAX_SECTIONS || e->eh.e_phnum > 64)
		return -ENOEXEC;
	for (uint32_t i = 0; i < e->eh.e_phnum; i++) {
		Elf64_Phdr ph;

		if (read_at(fd, &ph, sizeof(ph), e->eh.e_phoff + (uint64_t)i * sizeof(ph)))
			return -ENOEXEC;
		if (ph.p_type != PT_LOAD || e->nloads == MAX_LOADS)
			continue;
		e->loads[e->nloads++] = (struct load){ .offset = ph.p_offset, .vaddr = ph.p_vaddr, .filesz = ph.p_filesz,
						       .flags = ph.p_flags };
	}
	return 0;
}

/* Bytes at an ELF virtual address, from the file's image of the segment holding them. */
static int elf_read_vaddr(const struct elf *e, uint64_t vaddr, void *buf, size_t len)
{
	for (uint32_t i = 0; i < e->nloads; i++) {
		const struct load *l = &e->loads[i];

		if (vaddr >= l->vaddr && vaddr - l->vaddr <= l->filesz && l->filesz - (vaddr - l->vaddr) >= len)
			return read_at(e->fd, buf, len, l->offset + (vaddr - l->vaddr));
	}
	return -ENOEXEC;
}

struct wanted {
	const char *name;
	int type;       /* STT_OBJECT or STT_FUNC */
	uint64_t value, size;
};

/* Fills the values of the wanted symbols found in the table of section idx. */
static int scan_symtab(const struct elf *e, const Elf64_Shdr *sh, const Elf64_Shdr *strh, struct wanted *w, int nw)
{
	char *strs = NULL;
	Elf64_Sym *syms = NULL;
	uint64_t n;
	int err = -ENOEXEC;

	if (sh->sh_entsize != sizeof(Elf64_Sym) || sh->sh_size > MAX_SYMTAB || strh->sh_size > MAX_SYMTAB ||
	    sh->sh_offset > e->size || sh->sh_size > e->size - sh->sh_offset ||
	    strh->sh_offset > e->size || strh->sh_size > e->size - strh->sh_offset || !strh->sh_size)
		return -ENOEXEC;
	n = sh->sh_size / sizeof(Elf64_Sym);
	syms = malloc(sh->sh_size ? sh->sh_size : 1);
	strs = malloc(strh->sh_size + 1);
	if (!syms || !strs) {
		err = -ENOMEM;
		goto out;
	}
	if (read_at(e->fd, syms, sh->sh_size, sh->sh_offset) || read_at(e->fd, strs, strh->sh_size, strh->sh_offset))
		goto out;
	strs[strh->sh_size] = 0;
	for (uint64_t i = 0; i < n; i++) {
		const char *name;

		if (syms[i].st_name >= strh->sh_size || syms[i].st_shndx == SHN_UNDEF)
			continue;
		name = strs + syms[i].st_name;
		for (int k = 0; k < nw; k++)
			if (!w[k].value && ELF64_ST_TYPE(syms[i].st_info) == w[k].type && !strcmp(name, w[k].name)) {
				w[k].value = syms[i].st_value;
				w[k].size = syms[i].st_size;
			}
	}
	err = 0;
out:
	free(syms);
	free(strs);
	return err;
}

/* "python3.10" or "libpython3.10.so.1.0" in the file's name: 0x030a. */
static uint32_t version_from_name(const char *path)
{
	const char *b = strrchr(path, '/'), *s;
	char *end;
	unsigned long minor;

	b = b ? b + 1 : path;
	s = strstr(b, "python3.");
	if (!s)
		return 0;
	minor = strtoul(s + 8, &end, 10);
	if (end == s + 8 || minor > 99)
		return 0;
	return 0x0300 | (uint32_t)minor;
}

#define TP_DEALLOC 48         /* offsetof(PyTypeObject, tp_dealloc) on 64-bit builds */
#define RELA_CHUNK 512        /* relocations read at a time */

/*
 * The value a load gives the word at ELF virtual address at: the addend of
 * an R_X86_64_RELATIVE relocation of it (a PIE or shared object), the
 * symbol's value plus the addend for R_X86_64_64, else the word in the
 * file. 0, -ENOENT (no such word), -ENOEXEC.
 */
static int load_word(const struct elf *e, uint64_t at, uint64_t *out)
{
	Elf64_Rela *r = NULL;
	uint64_t word;
	int err = -ENOENT, found = 0;

	if (elf_read_vaddr(e, at, &word, sizeof(word)))
		return -ENOENT;
	r = malloc(RELA_CHUNK * sizeof(*r));
	if (!r)
		return -ENOMEM;
	for (uint32_t i = 0; i < e->eh.e_shnum && !found; i++) {
		Elf64_Shdr sh;

		if (read_at(e->fd, &sh, sizeof(sh), e->eh.e_shoff + (uint64_t)i * sizeof(sh))) {
			err = -ENOEXEC;
			goto out;
		}
		if (sh.sh_type != SHT_RELA)
			continue;
		if (sh.sh_entsize != sizeof(*r) || sh.sh_size > MAX_SYMTAB || sh.sh_offset > e->size ||
		    sh.sh_size > e->size - sh.sh_offset) {
			err = -ENOEXEC;
			goto out;
		}
		for (uint64_t done = 0; done < sh.sh_size / sizeof(*r) && !found;) {
			uint64_t n = sh.sh_size / sizeof(*r) - done;

			if (n > RELA_CHUNK)
				n = RELA_CHUNK;
			if (read_at(e->fd, r, n * sizeof(*r), sh.sh_offset + done * sizeof(*r))) {
				err = -ENOEXEC;
				goto out;
			}
			for (uint64_t k = 0; k < n && !found; k++) {
				Elf64_Shdr symh;
				Elf64_Sym sym;

				if (r[k].r_offset != at)
					continue;
				found = 1;
				if (ELF64_R_TYPE(r[k].r_info) == R_X86_64_RELATIVE) {
					word = (uint64_t)r[k].r_addend;
				} else if (ELF64_R_TYPE(r[k].r_info) == R_X86_64_64 && sh.sh_link < e->eh.e_shnum &&
					   !read_at(e->fd, &symh, sizeof(symh),
						    e->eh.e_shoff + (uint64_t)sh.sh_link * sizeof(symh)) &&
					   symh.sh_entsize == sizeof(sym) &&
					   ELF64_R_SYM(r[k].r_info) < symh.sh_size / sizeof(sym) &&
					   !read_at(e->fd, &sym, sizeof(sym),
						    symh.sh_offset + ELF64_R_SYM(r[k].r_info) * sizeof(sym)) &&
					   sym.st_shndx != SHN_UNDEF) {
					word = sym.st_value + (uint64_t)r[k].r_addend;
				} else {
					err = -ENOEXEC; /* filled in by another library, or unknown: not ours to guess */
					goto out;
				}
			}
			done += n;
		}
	}
	*out = word;
	err = 0;
out:
	free(r);
	return err;
}

/*
 * Where PyCode_Type's tp_dealloc (code_dealloc) starts, as an ELF virtual
 * address and as an offset in the file (what a uprobe is placed by). It
 * must lie in an executable PT_LOAD; a .symtab code_dealloc, when there
 * is one, must agree. 0 or -errno.
 */
static int find_dealloc(const struct elf *e, uint64_t code_type, uint64_t symtab_dealloc, uint64_t *vaddr,
			uint64_t *off)
{
	uint64_t fn;
	int err;

	if (e->eh.e_machine != EM_X86_64)
		return -EOPNOTSUPP;
	if (code_type > UINT64_MAX - TP_DEALLOC)
		return -ENOEXEC;
	err = load_word(e, code_type + TP_DEALLOC, &fn);
	if (err)
		return err;
	if (!fn || (symtab_dealloc && symtab_dealloc != fn))
		return -ENOEXEC;
	for (uint32_t i = 0; i < e->nloads; i++) {
		const struct load *l = &e->loads[i];

		if ((l->flags & PF_X) && fn >= l->vaddr && fn - l->vaddr < l->filesz) {
			*vaddr = fn;
			*off = fn - l->vaddr + l->offset;
			return 0;
		}
	}
	return -ENOEXEC;
}

static int probe(struct elf *e, const char *path, struct pyinterp_file *out)
{
	struct wanted w[] = { { "_PyRuntime", STT_OBJECT, 0, 0 }, { "PyCode_Type", STT_OBJECT, 0, 0 },
			      { "Py_Version", STT_OBJECT, 0, 0 }, { "_PyEval_EvalFrameDefault", STT_FUNC, 0, 0 },
			      { "code_dealloc", STT_FUNC, 0, 0 } };
	uint8_t image[DEBUG_IMAGE];
	int err;

	for (uint32_t i = 0; i < e->eh.e_shnum; i++) {
		Elf64_Shdr sh, strh;

		if (read_at(e->fd, &sh, sizeof(sh), e->eh.e_shoff + (uint64_t)i * sizeof(sh)))
			return -ENOEXEC;
		if ((sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB) || sh.sh_link >= e->eh.e_shnum)
			continue;
		if (read_at(e->fd, &strh, sizeof(strh), e->eh.e_shoff + (uint64_t)sh.sh_link * sizeof(strh)))
			return -ENOEXEC;
		err = scan_symtab(e, &sh, &strh, w, 5);
		if (err == -ENOMEM)
			return err;
	}
	if (!w[0].value || !w[1].value)
		return -ENOENT;
	out->runtime = w[0].value;
	out->code_type = w[1].value;
	out->eval = w[3].value;
	out->eval_size = w[3].size;
	out->dealloc = out->dealloc_off = 0;
	out->dealloc_err = find_dealloc(e, w[1].value, w[4].value, &out->dealloc, &out->dealloc_off);
	if (out->dealloc_err == -ENOMEM)
		return -ENOMEM;
	out->version = 0;
	if (w[2].value) {
		uint64_t hex;

		if (elf_read_vaddr(e, w[2].value, &hex, sizeof(hex)))
			return -EPROTONOSUPPORT;
		out->version = (uint32_t)(hex >> 16) & 0xffff;
	} else {
		/* Before 3.11 only the name tells; a build with an unexpected name stays unknown. */
		out->version = version_from_name(path);
		if (out->version != 0x030a)
			return -EPROTONOSUPPORT;
	}
	if (!pyoffsets__find(out->version))
		return -EPROTONOSUPPORT;
	if (out->version >= 0x030d &&
	    (elf_read_vaddr(e, out->runtime, image, sizeof(image)) ||
	     pyoffsets__check_debug(out->version, image, sizeof(image))))
		return -EPROTONOSUPPORT;
	return 0;
}

int pyinterp__probe_fd(int fd, const char *path, struct pyinterp_file *out)
{
	struct elf e;
	int err = elf_open(&e, fd);

	return err ? err : probe(&e, path, out);
}

/* The entry kept for m's file, made and probed when there is none; NULL: no memory. */
static struct file_ent *file_get(struct pyinterp *p, int root_fd, const struct procmap *m)
{
	struct file_ent *victim = filecache__get(p->fc, m->dev, m->inode, p->slot);
	uint32_t at = p->nfiles;
	struct elf e;
	struct stat st;
	int fd;

	if (victim) {
		victim->used = ++p->clock;
		return victim;
	}
	if (p->nfiles == p->cap) {
		at = 0;
		for (uint32_t i = 1; i < p->nfiles; i++)
			if (p->files[i]->used < p->files[at]->used)
				at = i;
		victim = p->files[at];
		filecache__set(p->fc, victim->dev, victim->inode, p->slot, NULL);
		if (p->last == victim)
			p->last = NULL;
	} else if (!(victim = malloc(sizeof(*victim)))) {
		return NULL;
	}
	memset(victim, 0, sizeof(*victim));
	victim->dev = m->dev;
	victim->inode = m->inode;
	victim->used = ++p->clock;
	if (filecache__set(p->fc, m->dev, m->inode, p->slot, victim)) {
		if (at < p->nfiles)
			p->files[at] = p->files[--p->nfiles];
		free(victim);
		return NULL;
	}
	p->files[at] = victim;
	if (at == p->nfiles)
		p->nfiles++;
	p->st.probes++;
	fd = openat(root_fd, m->path[0] == '/' ? m->path + 1 : m->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		victim->result = -errno;
		return victim;
	}
	/* The path may name another file by now (an upgrade): only the mapped one is probed. */
	if (fstat(fd, &st) || st.st_ino != m->inode || st.st_dev != m->dev) {
		victim->result = -ESTALE;
	} else {
		victim->result = elf_open(&e, fd);
		if (!victim->result)
			victim->result = probe(&e, m->path, &victim->f);
		if (!victim->result || victim->result == -EPROTONOSUPPORT) {
			memcpy(victim->loads, e.loads, sizeof(e.loads));
			victim->nloads = e.nloads;
		}
	}
	close(fd);
	return victim;
}

/* The mapping's load bias: its start minus the ELF virtual address its file offset has. */
static int bias_of(const struct file_ent *f, const struct procmap *m, uint64_t *bias)
{
	for (uint32_t i = 0; i < f->nloads; i++) {
		const struct load *l = &f->loads[i];

		if (m->offset >= l->offset && m->offset - l->offset < l->filesz) {
			*bias = m->start - (m->offset - l->offset + l->vaddr);
			return 0;
		}
	}
	return -ENOEXEC;
}

/*
 * The file's initialised writable data at the process's addresses (the
 * largest PF_W PT_LOAD's file bytes; bss and what follows it excluded),
 * where 3.11+ keep their deep-frozen code objects, and the file's
 * identity, as py_files' key has it. None (0, 0) when no load fits.
 */
static void static_data(const struct file_ent *f, uint64_t bias, struct profd_pyproc *out)
{
	const struct load *best = NULL;

	for (uint32_t i = 0; i < f->nloads; i++) {
		const struct load *l = &f->loads[i];

		if ((l->flags & PF_W) && l->filesz && l->vaddr <= UINT64_MAX - l->filesz &&
		    (!best || l->filesz > best->filesz))
			best = l;
	}
	if (!best)
		return;
	out->st_lo = best->vaddr + bias;
	out->st_hi = best->vaddr + best->filesz + bias;
	out->st_dev = (uint64_t)major(f->dev) << 20 | minor(f->dev);
	out->st_ino = f->inode;
}

/* Only interpreters and what links one are opened: not every library of every process. */
static bool candidate(const struct procmap *m)
{
	const char *base;

	if (!m->path ||
	    (m->flags & (PROCMAP_ANON | PROCMAP_VDSO | PROCMAP_SPECIAL | PROCMAP_DELETED)))
		return false;
	base = strrchr(m->path, '/');
	return strstr(base ? base + 1 : m->path, "python") != NULL;
}

bool pyinterp__may_find(const struct procmaps *maps)
{
	for (size_t i = 0; maps && i < procmaps__count(maps); i++)
		if (candidate(procmaps__get(maps, i)))
			return true;
	return false;
}

int pyinterp__find(struct pyinterp *p, int root_fd, const struct procmaps *maps, struct profd_pyproc *out)
{
	int result = -ENOENT;

	for (size_t i = 0; maps && i < procmaps__count(maps); i++) {
		const struct procmap *m = procmaps__get(maps, i);
		struct file_ent *f;
		uint64_t bias;

		if (!candidate(m))
			continue;
		f = file_get(p, root_fd, m);
		if (!f)
			return -ENOMEM;
		if (f->result == -EPROTONOSUPPORT)
			result = -EPROTONOSUPPORT;
		if (f->result || bias_of(f, m, &bias))
			continue;
		memset(out, 0, sizeof(*out));
		out->runtime = f->f.runtime + bias;
		out->code_type = f->f.code_type + bias;
		if (f->f.eval) {
			out->eval_lo = f->f.eval + bias;
			out->eval_hi = out->eval_lo + f->f.eval_size;
		}
		out->version = f->f.version;
		out->o = *pyoffsets__find(f->f.version);
		static_data(f, bias, out);
		p->st.found++;
		p->last = f;
		if ((size_t)snprintf(p->last_path, sizeof(p->last_path), "%s", m->path) >= sizeof(p->last_path))
			p->last_path[0] = 0;
		p->last_bias = bias;
		p->last_pp = *out;
		return 0;
	}
	p->last = NULL;
	if (result == -EPROTONOSUPPORT)
		p->st.unsupported++;
	return result;
}

int pyinterp__template(const struct pyinterp *p, struct profd_pyfile_key *key, struct profd_pyfile *tmpl)
{
	const struct file_ent *f = p->last;

	if (!f)
		return -ENOENT;
	if (f->nloads > PROFD_PY_LOADS)
		return -ENOSPC;
	memset(key, 0, sizeof(*key));
	memset(tmpl, 0, sizeof(*tmpl));
	key->dev = (uint64_t)major(f->dev) << 20 | minor(f->dev);
	key->ino = f->inode;
	tmpl->tmpl = p->last_pp;
	tmpl->tmpl.runtime -= p->last_bias;
	tmpl->tmpl.code_type -= p->last_bias;
	if (tmpl->tmpl.eval_lo) {
		tmpl->tmpl.eval_lo -= p->last_bias;
		tmpl->tmpl.eval_hi -= p->last_bias;
	}
	if (tmpl->tmpl.st_hi) {
		tmpl->tmpl.st_lo -= p->last_bias;
		tmpl->tmpl.st_hi -= p->last_bias;
	}
	for (uint32_t i = 0; i < f->nloads; i++) {
		tmpl->loads[i].offset = f->loads[i].offset;
		tmpl->loads[i].vaddr = f->loads[i].vaddr;
		tmpl->loads[i].filesz = f->loads[i].filesz;
	}
	tmpl->nloads = f->nloads;
	return 0;
}

int pyinterp__open_found(const struct pyinterp *p, int root_fd, uint64_t *dev, uint64_t *inode,
			 uint64_t *dealloc_off, int *fd_out)
{
	const struct file_ent *f = p->last;
	struct stat st;
	int fd;

	if (!f || !p->last_path[0])
		return -ENOENT;
	if (f->f.dealloc_err)
		return f->f.dealloc_err;
	fd = openat(root_fd, p->last_path[0] == '/' ? p->last_path + 1 : p->last_path,
		    O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	/* The path may name another file by now (an upgrade): only the mapped one will do. */
	if (fstat(fd, &st) || st.st_ino != f->inode || st.st_dev != f->dev) {
		close(fd);
		return -ESTALE;
	}
	*dev = f->dev;
	*inode = f->inode;
	*dealloc_off = f->f.dealloc_off;
	*fd_out = fd;
	return 0;
}

void pyinterp__stats(const struct pyinterp *p, struct pyinterp_stats *out)
{
	*out = p->st;
}

size_t pyinterp__mem_bytes(const struct pyinterp *p)
{
	return sizeof(*p) + (size_t)p->cap * sizeof(*p->files) +
	       (size_t)p->nfiles * sizeof(struct file_ent);
}
