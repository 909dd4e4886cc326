/* elfsym: symbols and file-offset translation of ELF files built at test time, and hostile input. */
#include "elfsym.h"
#include "t.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[] = "/tmp/test_elfsym.XXXXXX";

/*
 * The program prints, for each function, the file offset the kernel mapped
 * it from (address - mapping start + mapping offset, from /proc/self/maps),
 * an independent route to the answer elfsym must give.
 */
static const char prog[] =
	"#include <stdio.h>\n"
	"#include <stdint.h>\n"
	"#include <string.h>\n"
	"__attribute__((noinline)) int alpha(int x) { return x * 3 + 1; }\n"
	"__attribute__((noinline)) int beta(int x) { return alpha(x) ^ 7; }\n"
	"__attribute__((noinline)) static int gamma_local(int x) { return beta(x) + 11; }\n"
	"__asm__(\".text\\n.globl asm_nosize\\n.type asm_nosize,@function\\nasm_nosize:\\n nop\\n nop\\n nop\\n nop\\n ret\\n\");\n"
	"void asm_nosize(void);\n"
	"static void show(const char *name, void *fn) {\n"
	"  uintptr_t a = (uintptr_t)fn; char line[512]; FILE *f = fopen(\"/proc/self/maps\", \"r\");\n"
	"  while (fgets(line, sizeof line, f)) { unsigned long s, e, off; char perm[5];\n"
	"    if (sscanf(line, \"%lx-%lx %4s %lx\", &s, &e, perm, &off) == 4 && a >= s && a < e) {\n"
	"      printf(\"%s %lx\\n\", name, a - s + off); break; } }\n"
	"  fclose(f); }\n"
	"int main(int argc, char **argv) { (void)argv;\n"
	"  show(\"alpha\", (void *)alpha); show(\"beta\", (void *)beta);\n"
	"  show(\"gamma_local\", (void *)gamma_local); show(\"asm_nosize\", (void *)asm_nosize);\n"
	"  show(\"main\", (void *)main); return gamma_local(argc) == 0; }\n";

struct fn {
	char name[64];
	unsigned long off;
};

static int run(const char *cmd)
{
	int r = system(cmd);

	if (r != 0)
		fprintf(stderr, "command failed (%d): %s\n", r, cmd);
	return r;
}

static int read_offsets(const char *bin, struct fn *fns, int max)
{
	char cmd[512];
	FILE *f;
	int n = 0;

	snprintf(cmd, sizeof(cmd), "%s", bin);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (n < max && fscanf(f, "%63s %lx", fns[n].name, &fns[n].off) == 2)
		n++;
	pclose(f);
	return n;
}

static struct elfsym *open_path(const char *path, int *err)
{
	struct elfsym *e = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0) {
		*err = -errno;
		return NULL;
	}
	*err = elfsym__open_fd(fd, &e);
	close(fd);
	return e;
}

/* Every function resolves at its first byte and a few bytes in. */
static void check_binary(const char *bin, int expect_local)
{
	struct fn fns[8];
	struct elfsym *e;
	int n, err;

	n = read_offsets(bin, fns, 8);
	CHECK_EQ_INT(n, 5);
	e = open_path(bin, &err);
	CHECK_EQ_INT(err, 0);
	if (!e)
		return;
	CHECK(elfsym__nsyms(e) > 0);
	for (int i = 0; i < n; i++) {
		for (int delta = 0; delta < 3; delta++) {
			uint64_t vaddr = 0;
			const char *name = NULL;
			int r;

			CHECK_EQ_INT(elfsym__file_to_vaddr(e, fns[i].off + delta, &vaddr), 0);
			r = elfsym__lookup(e, vaddr, &name, NULL);
			if (!expect_local && !strcmp(fns[i].name, "gamma_local"))
				continue;
			CHECK_EQ_INT(r, 0);
			if (r == 0)
				CHECK_EQ_STR(name, fns[i].name);
		}
	}
	elfsym__free(e);
}

static void test_builds(void)
{
	char cmd[1024];
	struct elfsym *e;
	const uint8_t *id;
	int err;

	FILE *f;

	snprintf(cmd, sizeof(cmd), "%s/prog.c", dir);
	f = fopen(cmd, "w");
	if (!f || fputs(prog, f) < 0 || fclose(f)) {
		CHECK(!"writing prog.c");
		return;
	}
	snprintf(cmd, sizeof(cmd), "cc -O1 -g -fPIE -pie -Wl,--build-id=sha1 -o %s/pie %s/prog.c", dir, dir);
	CHECK_EQ_INT(run(cmd), 0);
	snprintf(cmd, sizeof(cmd), "cc -O1 -fno-pie -no-pie -o %s/nopie %s/prog.c", dir, dir);
	CHECK_EQ_INT(run(cmd), 0);
	/* Stripped, with the functions exported: only .dynsym is left. */
	snprintf(cmd, sizeof(cmd), "cc -O1 -fPIE -pie -rdynamic -o %s/dyn %s/prog.c && strip -s %s/dyn", dir, dir,
		 dir);
	CHECK_EQ_INT(run(cmd), 0);

	snprintf(cmd, sizeof(cmd), "%s/pie", dir);
	check_binary(cmd, 1);
	e = open_path(cmd, &err);
	if (e) {
		CHECK_EQ_INT(elfsym__build_id(e, &id), 20);
		CHECK(elfsym__has_full_symtab(e));
		elfsym__free(e);
	}
	snprintf(cmd, sizeof(cmd), "%s/nopie", dir);
	check_binary(cmd, 1);
	snprintf(cmd, sizeof(cmd), "%s/dyn", dir);
	check_binary(cmd, 0);
	e = open_path(cmd, &err);
	if (e) {
		CHECK(!elfsym__has_full_symtab(e));
		elfsym__free(e);
	}
}

/*
 * PLT stubs are named "callee@plt" where objdump puts its own labels (bfd
 * works them out apart from elfsym), with and without IBT's .plt.sec
 * (-z ibtplt), and in a stripped binary where .dynsym is all there is.
 */
static void test_plt(void)
{
	static const char src[] = "#include <stdio.h>\n#include <stdlib.h>\n"
				  "int main(int c, char **v) { puts(v[0]); return getenv(v[0]) ? c : atoi(v[0]); }\n";
	static const char *const flags[] = { "-fcf-protection=none", "-fcf-protection=full -Wl,-z,ibtplt",
					     "-fcf-protection=none -s" };
	char cmd[1024], line[512], bin[300];
	FILE *f;

	snprintf(cmd, sizeof(cmd), "%s/plt.c", dir);
	f = fopen(cmd, "w");
	if (!f || fputs(src, f) < 0 || fclose(f)) {
		CHECK(!"writing plt.c");
		return;
	}
	for (size_t k = 0; k < sizeof(flags) / sizeof(flags[0]); k++) {
		struct elfsym *e;
		int err, seen = 0;

		snprintf(bin, sizeof(bin), "%s/plt%zu", dir, k);
		snprintf(cmd, sizeof(cmd), "cc -O1 -fPIE -pie -Wl,-z,lazy %s -o %s %s/plt.c", flags[k], bin, dir);
		CHECK_EQ_INT(run(cmd), 0);
		e = open_path(bin, &err);
		CHECK_EQ_INT(err, 0);
		if (!e)
			continue;
		/* .plt.got (functions whose address is taken, bound at load) is not named. */
		snprintf(cmd, sizeof(cmd), "objdump -d -j .plt -j .plt.sec %s", bin);
		f = popen(cmd, "r");
		CHECK(f != NULL);
		while (f && fgets(line, sizeof(line), f)) {
			unsigned long addr;
			char label[256], *at;

			if (sscanf(line, "%lx <%255[^>]>:", &addr, label) != 2 || !(at = strstr(label, "@plt")) ||
			    at[4])
				continue;
			for (int delta = 0; delta < 16; delta += 5) {
				const char *name = NULL;

				CHECK_EQ_INT(elfsym__lookup(e, addr + delta, &name, NULL), 0);
				if (name)
					CHECK_EQ_STR(name, label);
			}
			seen++;
		}
		if (f)
			pclose(f);
		/* puts, getenv, atoi (or strtol, which glibc's headers may call for it). */
		if (seen < 2)
			fprintf(stderr, "%s: %d PLT labels from objdump\n", bin, seen);
		CHECK(seen >= 3);
		elfsym__free(e);
	}
}

/* MiniDebugInfo as Fedora builds it: the symtab, xz-compressed into .gnu_debugdata of a stripped binary. */
static void test_minidebuginfo(void)
{
	char cmd[1024];
	struct elfsym *e;
	int err;

	snprintf(cmd, sizeof(cmd),
		 "cd %s && cc -O1 -fPIE -pie -o mini prog.c && objcopy --only-keep-debug mini mini.dbg &&"
		 " objcopy -R .debug_info -R .debug_abbrev -R .debug_line -R .debug_str -R .debug_aranges"
		 " -R .debug_line_str -R .debug_rnglists -R .debug_loclists mini.dbg &&"
		 " xz -f mini.dbg && strip -s mini && objcopy --add-section .gnu_debugdata=mini.dbg.xz mini",
		 dir);
	if (run(cmd))
		return;
	snprintf(cmd, sizeof(cmd), "%s/mini", dir);
	check_binary(cmd, 1);
	e = open_path(cmd, &err);
	CHECK_EQ_INT(err, 0);
	if (e) {
		CHECK(elfsym__has_full_symtab(e));
		elfsym__free(e);
	}
	/* A corrupt .gnu_debugdata leaves the binary readable, unnamed. */
	snprintf(cmd, sizeof(cmd),
		 "cd %s && cc -O1 -fPIE -pie -o mini2 prog.c && strip -s mini2 && head -c 3000 /dev/urandom > junk.xz &&"
		 " objcopy --add-section .gnu_debugdata=junk.xz mini2",
		 dir);
	if (run(cmd))
		return;
	snprintf(cmd, sizeof(cmd), "%s/mini2", dir);
	e = open_path(cmd, &err);
	CHECK_EQ_INT(err, 0);
	if (e) {
		CHECK(!elfsym__has_full_symtab(e));
		elfsym__free(e);
	}
}

static void test_hostile(void)
{
	char path[256], cmd[512];
	struct elfsym *e = NULL;
	unsigned char junk[4096];
	int fd, err;

	/* Not regular files: refused without reading. */
	e = open_path("/dev/zero", &err);
	CHECK(!e);
	CHECK_EQ_INT(err, -EINVAL);
	snprintf(path, sizeof(path), "%s/fifo", dir);
	CHECK_EQ_INT(mkfifo(path, 0600), 0);
	e = open_path(path, &err);
	CHECK(!e);
	CHECK_EQ_INT(err, -EINVAL);

	/* Random bytes, an empty file, and every truncation of a real binary. */
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (unsigned char)(i * 2654435761u >> 13);
	CHECK(elfsym__open_mem(junk, sizeof(junk), &e) < 0);
	CHECK(elfsym__open_mem(junk, 0, &e) < 0);
	memcpy(junk, "\177ELF\2\1\1", 7);
	CHECK(elfsym__open_mem(junk, sizeof(junk), &e) < 0 || (elfsym__free(e), 1));

	snprintf(path, sizeof(path), "%s/pie", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	if (fd >= 0) {
		struct stat st;
		unsigned char *img;

		fstat(fd, &st);
		img = malloc((size_t)st.st_size);
		CHECK(read(fd, img, (size_t)st.st_size) == st.st_size);
		close(fd);
		for (off_t cut = 0; cut < st.st_size; cut += 97) {
			e = NULL;
			if (elfsym__open_mem(img, (size_t)cut, &e) == 0)
				elfsym__free(e);
		}
		/* Flip bytes in the section headers and symbol table. */
		for (int i = 0; i < 2000; i++) {
			size_t at = (size_t)(i * 7919u) % (size_t)st.st_size;
			unsigned char old = img[at];

			img[at] ^= 0xff;
			e = NULL;
			if (elfsym__open_mem(img, (size_t)st.st_size, &e) == 0) {
				const char *name;

				elfsym__lookup(e, 0x1000, &name, NULL);
				elfsym__free(e);
			}
			img[at] = old;
		}
		free(img);
	}
	snprintf(cmd, sizeof(cmd), "head -c 100 %s/pie > %s/trunc", dir, dir);
	run(cmd);
	snprintf(path, sizeof(path), "%s/trunc", dir);
	e = open_path(path, &err);
	CHECK(!e);
	CHECK(err < 0);
}

/*
 * The budget, from files tests/gen_hostile_elf.py crafts: 60,000 symbols
 * sharing one 4,000-byte name keep it once, cut at 1 KiB; a section claiming
 * 400 MiB and MiniDebugInfo inflating to 100 MiB are refused before they are
 * read, and a file over the budget given is refused as a whole.
 */
static void test_budget(void)
{
	char cmd[512], path[256];
	struct elfsym *e = NULL;
	const char *name = NULL;
	int fd;

	snprintf(cmd, sizeof(cmd), "python3 tests/gen_hostile_elf.py names %s/names && "
		 "python3 tests/gen_hostile_elf.py bigsection %s/big && python3 tests/gen_hostile_elf.py xzbomb %s/xz",
		 dir, dir, dir);
	if (run(cmd)) {
		fprintf(stderr, "test_budget: cannot run tests/gen_hostile_elf.py (python3, from the source tree)\n");
		t_checks++;
		t_failed++;
		return;
	}
	snprintf(path, sizeof(path), "%s/names", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK_EQ_INT(elfsym__open_fd_max(fd, 16 << 20, &e), 0);
	if (e) {
		CHECK_EQ_INT(elfsym__nsyms(e), 60000);
		/* 16 bytes a symbol and one name: not 60,000 copies (240 MB). */
		CHECK(elfsym__mem_bytes(e) < 60000 * 16 + 64 * 1024);
		CHECK_EQ_INT(elfsym__lookup(e, 0x401000 + 777, &name, NULL), 0);
		CHECK(name && strlen(name) == 1024 && name[0] == 'N' && name[1023] == 'N');
		elfsym__free(e);
		e = NULL;
	}
	/* The same file within 1 MiB: its 1.4 MB symbol table alone is over. */
	CHECK_EQ_INT(elfsym__open_fd_max(fd, 1 << 20, &e), -EFBIG);
	close(fd);
	snprintf(path, sizeof(path), "%s/big", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK_EQ_INT(elfsym__open_fd_max(fd, 16 << 20, &e), -EFBIG);
	close(fd);
	snprintf(path, sizeof(path), "%s/xz", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK_EQ_INT(elfsym__open_fd_max(fd, 16 << 20, &e), -EFBIG);
	close(fd);
	CHECK(e == NULL);
}

static void test_crc(void)
{
	char path[256];
	uint32_t crc = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/crc", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(write(fd, "123456789", 9) == 9);
	CHECK_EQ_INT(elfsym__crc32_fd(fd, 1 << 20, &crc), 0);
	CHECK_EQ_INT(crc, 0xcbf43926u);
	CHECK_EQ_INT(elfsym__crc32_fd(fd, 4, &crc), -EFBIG);
	close(fd);
}

int main(void)
{
	char cmd[256];

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_builds();
	test_plt();
	test_minidebuginfo();
	test_hostile();
	test_budget();
	test_crc();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	run(cmd);
	T_DONE();
}
