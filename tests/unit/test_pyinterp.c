/* pyinterp: CPython found by its symbols, each file probed once, kept on the shared file cache. */
#include "filecache.h"
#include "procmaps.h"
#include "pyinterp.h"
#include "t.h"

#include <elf.h>
#include <gelf.h>
#include <libelf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define RUNTIME 0x2000
#define CODE_TYPE 0x2400
#define VERSION_AT 0x300
#define EVAL 0x1800
#define EVAL_SIZE 0x120
#define DATA 0x4800      /* the larger writable PT_LOAD's first byte */
#define DATA_FILESZ 0x300 /* ... and its bytes in the file (memsz is more: bss) */

static char dir[] = "/tmp/pyinterp-test.XXXXXX";

/* A little-endian x86-64 shared object's header: one PT_LOAD at 0x40, shnum sections at 0x100. */
static void elf_header(Elf64_Ehdr *eh, unsigned shnum)
{
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_DYN;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(*eh);
	eh->e_phentsize = sizeof(Elf64_Phdr);
	eh->e_phnum = 1;
	eh->e_shoff = 0x100;
	eh->e_shentsize = sizeof(Elf64_Shdr);
	eh->e_shnum = (Elf64_Half)shnum;
}

/*
 * Writes an ELF file with three PT_LOADs (code, then two writable ones of
 * which the second is larger: the static data) and a symbol table: _PyRuntime and
 * PyCode_Type (when runtime), Py_Version holding version << 16, and the
 * eval function.
 */
static int write_elf(const char *path, int runtime, uint32_t version)
{
	static const char strtab[] = "\0_PyRuntime\0PyCode_Type\0Py_Version\0_PyEval_EvalFrameDefault";
	unsigned char img[0x1000] = { 0 };
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
	Elf64_Phdr *ph = (Elf64_Phdr *)(img + sizeof(*eh));
	Elf64_Shdr *sh = (Elf64_Shdr *)(img + 0x100);
	Elf64_Sym *sym = (Elf64_Sym *)(img + 0x400);
	uint64_t hex = (uint64_t)version << 16;
	int fd, ok;

	elf_header(eh, 4);
	eh->e_phnum = 3;
	ph[0] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_offset = 0, .p_vaddr = 0,
			      .p_filesz = sizeof(img), .p_memsz = 0x3000, .p_align = 0x1000 };
	ph[1] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R | PF_W, .p_offset = 0x700, .p_vaddr = 0x3700,
			      .p_filesz = 0x100, .p_memsz = 0x100, .p_align = 0x1000 };
	ph[2] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R | PF_W, .p_offset = 0x800, .p_vaddr = DATA,
			      .p_filesz = DATA_FILESZ, .p_memsz = 0x1000, .p_align = 0x1000 };
	memcpy(img + VERSION_AT, &hex, sizeof(hex));
	sh[1] = (Elf64_Shdr){ .sh_type = SHT_PROGBITS, .sh_addr = 0, .sh_offset = 0,
			      .sh_size = sizeof(img) };
	sh[2] = (Elf64_Shdr){ .sh_type = SHT_SYMTAB, .sh_offset = 0x400, .sh_size = 5 * sizeof(*sym),
			      .sh_link = 3, .sh_entsize = sizeof(*sym) };
	sh[3] = (Elf64_Shdr){ .sh_type = SHT_STRTAB, .sh_offset = 0x600, .sh_size = sizeof(strtab) };
	memcpy(img + 0x600, strtab, sizeof(strtab));
	if (runtime) {
		sym[1] = (Elf64_Sym){ .st_name = 1, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT),
				      .st_shndx = 1, .st_value = RUNTIME, .st_size = 0x100 };
		sym[2] = (Elf64_Sym){ .st_name = 12, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT),
				      .st_shndx = 1, .st_value = CODE_TYPE, .st_size = 0x100 };
	}
	sym[3] = (Elf64_Sym){ .st_name = 24, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT),
			      .st_shndx = 1, .st_value = VERSION_AT, .st_size = 8 };
	sym[4] = (Elf64_Sym){ .st_name = 35, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC),
			      .st_shndx = 1, .st_value = EVAL, .st_size = EVAL_SIZE };
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	ok = write(fd, img, sizeof(img)) == (ssize_t)sizeof(img);
	close(fd);
	return ok ? 0 : -EIO;
}

/* A file in the test directory, written and mapped at start as a process would map it. */
struct file {
	char path[128];
	struct procmap m;
};

static void make_file(struct file *f, const char *name, int runtime, uint32_t version)
{
	struct stat st = { 0 };

	snprintf(f->path, sizeof(f->path), "%s/%s", dir, name);
	CHECK_EQ_INT(write_elf(f->path, runtime, version), 0);
	CHECK_EQ_INT(stat(f->path, &st), 0);
	f->m = (struct procmap){ .end = 0x1000, .dev = st.st_dev, .inode = st.st_ino, .path = f->path };
}

/* A process mapping the files given, in order, each at start + 0x100000 * i. */
static struct procmaps *process(uint64_t start, const struct file *const *f, int n)
{
	struct procmap m[4];
	struct procmaps *pm = NULL;

	for (int i = 0; i < n; i++) {
		m[i] = f[i]->m;
		m[i].start = start + 0x100000ULL * i;
		m[i].end = m[i].start + 0x1000;
	}
	CHECK_EQ_INT(procmaps__from(m, (size_t)n, &pm), 0);
	return pm;
}

/* A file cache with a pyinterp on it, and processes that map test files. */
struct fix {
	struct filecache *fc;
	struct pyinterp *pi;
	struct procmaps *m[3];
	struct profd_pyproc pp;
};

/* files: the pyinterp's budget. 0 or -1. */
static int setup(struct fix *x, uint32_t files)
{
	memset(x, 0, sizeof(*x));
	CHECK_EQ_INT(filecache__new(&x->fc), 0);
	if (x->fc)
		CHECK_EQ_INT(pyinterp__new(x->fc, files, &x->pi), 0);
	return x->pi ? 0 : -1;
}

static void teardown(struct fix *x)
{
	pyinterp__free(x->pi);
	for (int i = 0; i < 3; i++)
		procmaps__free(x->m[i]);
	filecache__free(x->fc);
}

static uint64_t probes(const struct pyinterp *pi)
{
	struct pyinterp_stats st;

	pyinterp__stats(pi, &st);
	return st.probes;
}

static void test_found_once(int root)
{
	struct file py, lib, odd;
	struct fix x;
	struct pyinterp_stats st;
	struct profd_pyfile_key key;
	struct profd_pyfile tmpl;
	int other, mark = 1;

	make_file(&py, "python3.11", 1, 0x030b);
	make_file(&lib, "libpython-nothing.so", 0, 0x030b);
	make_file(&odd, "python3.99", 1, 0x0363);
	if (setup(&x, 0))
		return;
	other = filecache__slot(x.fc, NULL, NULL);
	/* A file another reader holds already: the probe joins its entry. */
	filecache__set(x.fc, py.m.dev, py.m.inode, other, &mark);
	x.m[0] = process(0x400000, (const struct file *[]){ &lib, &py }, 2);
	x.m[1] = process(0x7f0000000000, (const struct file *[]){ &py }, 1);
	CHECK_EQ_INT(pyinterp__find(x.pi, root, x.m[0], &x.pp), 0);
	CHECK_EQ_INT(x.pp.version, 0x030b);
	CHECK(x.pp.runtime == 0x500000 + RUNTIME && x.pp.code_type == 0x500000 + CODE_TYPE);
	CHECK(x.pp.eval_lo == 0x500000 + EVAL && x.pp.eval_hi == 0x500000 + EVAL + EVAL_SIZE);
	/* The static data: the larger writable load's file bytes, not its bss, and the file. */
	CHECK(x.pp.st_lo == 0x500000 + DATA && x.pp.st_hi == 0x500000 + DATA + DATA_FILESZ);
	CHECK(x.pp.st_ino == py.m.inode && x.pp.st_dev == ((uint64_t)major(py.m.dev) << 20 | minor(py.m.dev)));
	CHECK_EQ_INT(filecache__count(x.fc), 2);
	/* Another process of the same interpreter: its own bias, no second probe. */
	CHECK_EQ_INT(pyinterp__find(x.pi, root, x.m[1], &x.pp), 0);
	CHECK(x.pp.runtime == 0x7f0000000000 + RUNTIME);
	CHECK_EQ_INT(probes(x.pi), 2);
	/* The template is the file's answer before any bias. */
	CHECK_EQ_INT(pyinterp__template(x.pi, &key, &tmpl), 0);
	CHECK(key.ino == py.m.inode && tmpl.tmpl.runtime == RUNTIME && tmpl.nloads == 3);
	CHECK(tmpl.tmpl.st_lo == DATA && tmpl.tmpl.st_hi == DATA + DATA_FILESZ && tmpl.tmpl.st_dev == key.dev &&
	      tmpl.tmpl.st_ino == key.ino);
	/* A version without a layout: told apart from no CPython at all. */
	x.m[2] = process(0x400000, (const struct file *[]){ &odd }, 1);
	CHECK_EQ_INT(pyinterp__find(x.pi, root, x.m[2], &x.pp), -EPROTONOSUPPORT);
	CHECK_EQ_INT(pyinterp__template(x.pi, &key, &tmpl), -ENOENT);
	procmaps__free(x.m[2]);
	x.m[2] = process(0x400000, (const struct file *[]){ &lib }, 1);
	CHECK_EQ_INT(pyinterp__find(x.pi, root, x.m[2], &x.pp), -ENOENT);
	pyinterp__stats(x.pi, &st);
	CHECK_EQ_INT(st.probes, 3);
	CHECK_EQ_INT(st.found, 2);
	CHECK_EQ_INT(st.unsupported, 1);
	CHECK_EQ_INT(filecache__count(x.fc), 3);
	/* Gone: its entries leave the cache, the other reader's stays. */
	pyinterp__free(x.pi);
	x.pi = NULL;
	CHECK_EQ_INT(filecache__count(x.fc), 1);
	CHECK(filecache__get(x.fc, py.m.dev, py.m.inode, other) == &mark);
	teardown(&x);
}

/* Beyond the budget the least recently used file goes; a replaced file is not the mapped one. */
static void test_budget_and_stale(int root)
{
	struct file py, py2, gone;
	struct fix x;

	make_file(&py, "python3.11", 1, 0x030b);
	make_file(&py2, "libpython3.11.so", 1, 0x030b);
	make_file(&gone, "python3.11-old", 1, 0x030b);
	gone.m.inode += 1000; /* the path names another file by now */
	if (setup(&x, 1))
		return;
	x.m[0] = process(0x400000, (const struct file *[]){ &py }, 1);
	x.m[1] = process(0x400000, (const struct file *[]){ &py2 }, 1);
	x.m[2] = process(0x400000, (const struct file *[]){ &gone }, 1);
	CHECK_EQ_INT(pyinterp__find(x.pi, root, x.m[0], &x.pp), 0);
	CHECK_EQ_INT(pyinterp__find(x.pi, root, x.m[1], &x.pp), 0);
	CHECK_EQ_INT(filecache__count(x.fc), 1);
	CHECK_EQ_INT(pyinterp__find(x.pi, root, x.m[0], &x.pp), 0);
	CHECK_EQ_INT(probes(x.pi), 3);
	CHECK_EQ_INT(pyinterp__find(x.pi, root, x.m[2], &x.pp), -ENOENT);
	CHECK_EQ_INT(filecache__count(x.fc), 1);
	pyinterp__free(x.pi);
	x.pi = NULL;
	CHECK_EQ_INT(filecache__count(x.fc), 0);
	/* Every slot taken: refused, not sharing another reader's. */
	while (filecache__slot(x.fc, NULL, NULL) >= 0)
		;
	CHECK_EQ_INT(pyinterp__new(x.fc, 0, &x.pi), -ENOSPC);
	teardown(&x);
}


/*
 * code_dealloc's finder on a crafted file: PyCode_Type at 0x800 (its
 * tp_dealloc word at 0x830 holds word), one executable PT_LOAD over
 * [0, 0x1000) at vaddr 0x10000, a relocation of 0x830 of type rtype's low
 * 32 bits against symbol rtype >> 32 (none when 0) with addend, the RELA section's size rela_size (0: one
 * entry), and a .symtab code_dealloc at symtab (0: none).
 */
#define DVADDR 0x10000
static int write_dealloc_elf(const char *path, uint64_t word, uint64_t rtype, int64_t addend, uint64_t rela_size,
			     uint64_t symtab)
{
	static const char strtab[] = "\0_PyRuntime\0PyCode_Type\0Py_Version\0code_dealloc";
	unsigned char img[0x1000] = { 0 };
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
	Elf64_Phdr *ph = (Elf64_Phdr *)(img + sizeof(*eh));
	Elf64_Shdr *sh = (Elf64_Shdr *)(img + 0x100);
	Elf64_Sym *sym = (Elf64_Sym *)(img + 0x400);
	Elf64_Rela *r = (Elf64_Rela *)(img + 0x700);
	uint64_t hex = (uint64_t)0x030b << 16;
	int fd, ok;

	elf_header(eh, 5);
	*ph = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_offset = 0, .p_vaddr = DVADDR,
			    .p_filesz = sizeof(img), .p_memsz = sizeof(img), .p_align = 0x1000 };
	memcpy(img + 0x300, &hex, sizeof(hex));
	memcpy(img + 0x830, &word, sizeof(word));
	sh[1] = (Elf64_Shdr){ .sh_type = SHT_PROGBITS, .sh_addr = DVADDR, .sh_offset = 0, .sh_size = sizeof(img) };
	sh[2] = (Elf64_Shdr){ .sh_type = SHT_SYMTAB, .sh_offset = 0x400, .sh_size = 5 * sizeof(*sym),
			      .sh_link = 3, .sh_entsize = sizeof(*sym) };
	sh[3] = (Elf64_Shdr){ .sh_type = SHT_STRTAB, .sh_offset = 0x600, .sh_size = sizeof(strtab) };
	sh[4] = (Elf64_Shdr){ .sh_type = rtype ? SHT_RELA : SHT_NULL, .sh_offset = 0x700,
			      .sh_size = rela_size ? rela_size : sizeof(*r), .sh_link = 2, .sh_entsize = sizeof(*r) };
	/* A relocation of another word first: the finder must pick the one of tp_dealloc. */
	r[0] = (Elf64_Rela){ .r_offset = DVADDR + 0x828, .r_info = ELF64_R_INFO(0, R_X86_64_RELATIVE), .r_addend = 1 };
	r[1] = (Elf64_Rela){ .r_offset = DVADDR + 0x830, .r_info = ELF64_R_INFO(rtype >> 32, (uint32_t)rtype),
			     .r_addend = addend };
	if (!rela_size)
		sh[4].sh_size = 2 * sizeof(*r);
	memcpy(img + 0x600, strtab, sizeof(strtab));
	sym[1] = (Elf64_Sym){ .st_name = 1, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT), .st_shndx = 1,
			      .st_value = DVADDR + 0x900, .st_size = 0x10 };
	sym[2] = (Elf64_Sym){ .st_name = 12, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT), .st_shndx = 1,
			      .st_value = DVADDR + 0x800, .st_size = 0x100 };
	sym[3] = (Elf64_Sym){ .st_name = 24, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT), .st_shndx = 1,
			      .st_value = DVADDR + 0x300, .st_size = 8 };
	if (symtab)
		sym[4] = (Elf64_Sym){ .st_name = 35, .st_info = ELF64_ST_INFO(STB_LOCAL, STT_FUNC), .st_shndx = 1,
				      .st_value = symtab, .st_size = 0x40 };
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	ok = write(fd, img, sizeof(img)) == (ssize_t)sizeof(img);
	close(fd);
	return ok ? 0 : -EIO;
}

/* The finder's answer for a crafted file: its dealloc_err, *off its file offset. */
static int dealloc_of(uint64_t word, uint64_t rtype, int64_t addend, uint64_t rela_size, uint64_t symtab,
		      uint64_t *off)
{
	char path[160];
	struct pyinterp_file f;
	int fd, err;

	snprintf(path, sizeof(path), "%s/libpython3.11-dealloc.so", dir);
	CHECK_EQ_INT(write_dealloc_elf(path, word, rtype, addend, rela_size, symtab), 0);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	memset(&f, 0, sizeof(f));
	err = pyinterp__probe_fd(fd, path, &f);
	close(fd);
	/* The finder's failures never fail the probe: the walker works without the hook. */
	CHECK_EQ_INT(err, 0);
	*off = f.dealloc_off;
	CHECK(f.dealloc_err ? !f.dealloc && !f.dealloc_off : f.dealloc == *off + DVADDR);
	return f.dealloc_err;
}

static void test_dealloc_crafted(void)
{
	uint64_t off = 0;

	/* The word in the file (no relocation: a non-PIE executable). */
	CHECK_EQ_INT(dealloc_of(DVADDR + 0xa00, 0, 0, 0, 0, &off), 0);
	CHECK(off == 0xa00);
	/* A PIE or shared object: the RELATIVE relocation's addend, not the file's word. */
	CHECK_EQ_INT(dealloc_of(0, R_X86_64_RELATIVE, DVADDR + 0xb00, 0, 0, &off), 0);
	CHECK(off == 0xb00);
	/* R_X86_64_64 against a symbol: its value plus the addend. */
	CHECK_EQ_INT(dealloc_of(0, R_X86_64_64 | 3ULL << 32, 0x10, 0, 0, &off), 0); /* Py_Version's + 0x10 */
	CHECK(off == 0x310);
	CHECK_EQ_INT(dealloc_of(0, R_X86_64_64, 0x10, 0, 0, &off), -ENOEXEC); /* symbol 0: undefined */
	/* A .symtab code_dealloc must agree. */
	CHECK_EQ_INT(dealloc_of(DVADDR + 0xa00, 0, 0, 0, DVADDR + 0xa00, &off), 0);
	CHECK_EQ_INT(dealloc_of(DVADDR + 0xa00, 0, 0, 0, DVADDR + 0xa40, &off), -ENOEXEC);
	/* Filled in by another library (GLOB_DAT, JUMP_SLOT): not ours to guess. */
	CHECK_EQ_INT(dealloc_of(DVADDR + 0xa00, R_X86_64_GLOB_DAT, 0, 0, 0, &off), -ENOEXEC);
	/* Outside every executable segment, or nothing. */
	CHECK_EQ_INT(dealloc_of(0x5000000, 0, 0, 0, 0, &off), -ENOEXEC);
	CHECK_EQ_INT(dealloc_of(0, 0, 0, 0, 0, &off), -ENOEXEC);
	CHECK_EQ_INT(dealloc_of(0, R_X86_64_RELATIVE, -1, 0, 0, &off), -ENOEXEC);
	/* A RELA section past the end of the file, or of a size no table has: refused, no read past it. */
	CHECK_EQ_INT(dealloc_of(DVADDR + 0xa00, R_X86_64_RELATIVE, DVADDR + 0xb00, 1ULL << 40, 0, &off), -ENOEXEC);
	CHECK_EQ_INT(dealloc_of(DVADDR + 0xa00, R_X86_64_RELATIVE, DVADDR + 0xb00, 0x1000, 0, &off), -ENOEXEC);
}

/*
 * A .symtab's code_dealloc, read apart from the finder (libelf): 0 when
 * the file has none (stripped, as Debian's python3.11).
 */
static uint64_t symtab_dealloc(int fd)
{
	Elf *e;
	Elf_Scn *scn = NULL;
	uint64_t v = 0;

	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e)
		return 0;
	while (!v && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *n;

			if (gelf_getsym(d, (int)i, &s) && (n = elf_strptr(e, sh.sh_link, s.st_name)) &&
			    !strcmp(n, "code_dealloc") && GELF_ST_TYPE(s.st_info) == STT_FUNC) {
				v = s.st_value;
				break;
			}
		}
	}
	elf_end(e);
	return v;
}

/*
 * Every CPython 3.10+ of this machine: its code_dealloc found, in an
 * executable segment, and where the file has a .symtab, where it says.
 */
static void test_dealloc_interpreters(void)
{
	static const char *const paths[] = {
		"/root/.pyenv/versions/3.10.13/lib/libpython3.10.so.1.0",
		"/root/.pyenv/versions/3.11.7/lib/libpython3.11.so.1.0",
		"/root/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0",
		"/root/.pyenv/versions/3.13.0/lib/libpython3.13.so.1.0",
		"/usr/bin/python3.11",
		"/usr/bin/python3.12",
		"/usr/bin/python3.13",
	};
	int found = 0, crossed = 0;

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		struct pyinterp_file f;
		int fd = open(paths[i], O_RDONLY | O_CLOEXEC);
		uint64_t sym;

		if (fd < 0)
			continue;
		memset(&f, 0, sizeof(f));
		CHECK_EQ_INT(pyinterp__probe_fd(fd, paths[i], &f), 0);
		CHECK_EQ_INT(f.dealloc_err, 0);
		CHECK(f.dealloc != 0 && f.dealloc_off != 0);
		sym = symtab_dealloc(fd);
		if (sym) {
			CHECK(sym == f.dealloc);
			crossed++;
		}
		found++;
		close(fd);
	}
	printf("code_dealloc found in %d interpreters, %d checked against their .symtab\n", found, crossed);
}

int main(void)
{
	int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	char cmd[64];

	CHECK(mkdtemp(dir) != NULL);
	test_found_once(root);
	test_budget_and_stale(root);
	test_dealloc_crafted();
	test_dealloc_interpreters();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK_EQ_INT(system(cmd), 0);
	close(root);
	T_DONE();
}
