/* pyinterp: CPython found by its symbols, each file probed once, kept on the shared file cache. */
#include "filecache.h"
#include "procmaps.h"
#include "pyinterp.h"
#include "t.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define RUNTIME 0x2000
#define CODE_TYPE 0x2400
#define VERSION_AT 0x300
#define EVAL 0x1800
#define EVAL_SIZE 0x120

static char dir[] = "/tmp/pyinterp-test.XXXXXX";

/*
 * Writes an ELF file with one PT_LOAD and a symbol table: _PyRuntime and
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

	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_DYN;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(*eh);
	eh->e_phentsize = sizeof(*ph);
	eh->e_phnum = 1;
	eh->e_shoff = 0x100;
	eh->e_shentsize = sizeof(*sh);
	eh->e_shnum = 4;
	*ph = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_offset = 0, .p_vaddr = 0,
			    .p_filesz = sizeof(img), .p_memsz = 0x3000, .p_align = 0x1000 };
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
	CHECK_EQ_INT(filecache__count(x.fc), 2);
	/* Another process of the same interpreter: its own bias, no second probe. */
	CHECK_EQ_INT(pyinterp__find(x.pi, root, x.m[1], &x.pp), 0);
	CHECK(x.pp.runtime == 0x7f0000000000 + RUNTIME);
	CHECK_EQ_INT(probes(x.pi), 2);
	/* The template is the file's answer before any bias. */
	CHECK_EQ_INT(pyinterp__template(x.pi, &key, &tmpl), 0);
	CHECK(key.ino == py.m.inode && tmpl.tmpl.runtime == RUNTIME && tmpl.nloads == 1);
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

int main(void)
{
	int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	char cmd[64];

	CHECK(mkdtemp(dir) != NULL);
	test_found_once(root);
	test_budget_and_stale(root);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK_EQ_INT(system(cmd), 0);
	close(root);
	T_DONE();
}
