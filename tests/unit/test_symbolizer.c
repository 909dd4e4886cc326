/* symbolizer: this process's own frames, dlopen'ed code, caches, kernel fixture, a deleted binary. */
#include "procmaps.h"
#include "symbolizer.h"
#include "t.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[] = "/tmp/test_symbolizer.XXXXXX";

__attribute__((noinline)) int test_target_fn(int x)
{
	return x * 5 + 3;
}

static int run(const char *cmd)
{
	int r = system(cmd);

	if (r != 0)
		fprintf(stderr, "command failed (%d): %s\n", r, cmd);
	return r;
}

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

static void test_self(void)
{
	struct symbolizer_opts o = { .proc_root = "/proc" };
	struct symbolizer *s = NULL;
	struct procmaps *m = NULL;
	const struct procmap *pm;
	struct sym r;
	uint32_t pid = (uint32_t)getpid();
	uint64_t ip = (uint64_t)(uintptr_t)test_target_fn;
	void *pf = dlsym(RTLD_DEFAULT, "printf");

	CHECK_EQ_INT(symbolizer__new(&o, &s), 0);
	if (!s)
		return;
	CHECK_EQ_INT(symbolizer__user(s, pid, ip, 0, &r), 0);
	CHECK_EQ_STR(r.name, "test_target_fn");
	CHECK(r.module && strstr(r.module, "test_symbolizer"));
	CHECK_EQ_INT(r.kind, SYM_USER);
	CHECK_EQ_INT(procmaps__read("/proc", pid, &m), 0);
	pm = m ? procmaps__find(m, ip) : NULL;
	CHECK(pm != NULL);
	if (pm)
		CHECK_EQ_INT(r.offset, ip - pm->start + pm->offset);
	procmaps__free(m);

	/* A return address one past the function's last byte still names it; ip+1 too. */
	CHECK_EQ_INT(symbolizer__user(s, pid, ip + 1, 1, &r), 0);
	CHECK_EQ_STR(r.name, "test_target_fn");
	CHECK_EQ_INT(symbolizer__user(s, pid, ip + 4, 0, &r), 0);
	CHECK_EQ_STR(r.name, "test_target_fn");

	CHECK(pf != NULL);
	CHECK_EQ_INT(symbolizer__user(s, pid, (uint64_t)(uintptr_t)pf, 0, &r), 0);
	CHECK_EQ_STR(r.name, "printf");
	CHECK(r.module && strstr(r.module, "libc"));

	/* Nothing mapped there: no module, the address is the offset. */
	CHECK_EQ_INT(symbolizer__user(s, pid, 0x10, 0, &r), 0);
	CHECK(r.name == NULL && r.module == NULL);
	CHECK_EQ_INT(r.offset, 0x10);

	{
		/* Anonymous executable memory (a JIT without a perf map): unnamed, no module. */
		void *anon = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		symbolizer__forget_pid(s, pid);
		CHECK_EQ_INT(symbolizer__user(s, pid, (uint64_t)(uintptr_t)anon + 16, 0, &r), 0);
		CHECK(r.name == NULL && r.module == NULL);
		CHECK_EQ_INT(r.offset, (uint64_t)(uintptr_t)anon + 16);
		munmap(anon, 4096);
	}

	{
		/* The [vdso]: its dynsym, read back from our memory, names its functions. */
		const Elf64_Ehdr *eh = (const void *)getauxval(AT_SYSINFO_EHDR);
		uint64_t target = 0;

		if (eh) {
			const Elf64_Shdr *sh = (const void *)((const char *)eh + eh->e_shoff);

			for (int i = 0; i < eh->e_shnum && !target; i++) {
				if (sh[i].sh_type != SHT_DYNSYM)
					continue;
				const Elf64_Sym *sy = (const void *)((const char *)eh + sh[i].sh_offset);
				const char *str = (const char *)eh + sh[sh[i].sh_link].sh_offset;

				for (size_t j = 0; j < sh[i].sh_size / sizeof(*sy); j++)
					if (!strcmp(str + sy[j].st_name, "__vdso_clock_gettime"))
						target = (uint64_t)(uintptr_t)eh + sy[j].st_value;
			}
		}
		CHECK(target != 0);
		if (target) {
			CHECK_EQ_INT(symbolizer__user(s, pid, target + 2, 0, &r), 0);
			CHECK(r.name && strstr(r.name, "clock_gettime"));
			CHECK_EQ_STR(r.module, "[vdso]");
		}
	}
	symbolizer__free(s);
}

static void test_dlopen_refresh(void)
{
	struct symbolizer *s = NULL;
	struct symbolizer_stats st;
	char path[256], cmd[512];
	uint32_t pid = (uint32_t)getpid();
	void *h, *fn;
	struct sym r;

	snprintf(path, sizeof(path), "%s/plug.c", dir);
	CHECK_EQ_INT(write_file(path, "int plug_fn(int x) { return x + 42; }\n"), 0);
	snprintf(cmd, sizeof(cmd), "cc -O1 -shared -fPIC -o %s/libplug.so %s/plug.c", dir, dir);
	if (run(cmd)) {
		CHECK(!"building libplug.so");
		return;
	}
	CHECK_EQ_INT(symbolizer__new(NULL, &s), 0);
	if (!s)
		return;
	/* Read our maps before the library exists in them. */
	CHECK_EQ_INT(symbolizer__user(s, pid, (uint64_t)(uintptr_t)test_target_fn, 0, &r), 0);
	snprintf(path, sizeof(path), "%s/libplug.so", dir);
	h = dlopen(path, RTLD_NOW);
	CHECK(h != NULL);
	fn = h ? dlsym(h, "plug_fn") : NULL;
	CHECK(fn != NULL);
	if (fn) {
		/* Within a second of the last read the miss is not re-read... */
		CHECK_EQ_INT(symbolizer__user(s, pid, (uint64_t)(uintptr_t)fn, 0, &r), 0);
		CHECK(r.module == NULL);
		usleep(1100 * 1000);
		/* ...after it, the new mapping is found. */
		CHECK_EQ_INT(symbolizer__user(s, pid, (uint64_t)(uintptr_t)fn, 0, &r), 0);
		CHECK_EQ_STR(r.name, "plug_fn");
		CHECK(r.module && strstr(r.module, "libplug.so"));
	}
	symbolizer__stats(s, &st);
	CHECK_EQ_INT(st.pids_cached, 1);
	CHECK(st.pid_hits >= 2);
	CHECK_EQ_INT(st.pid_misses, 1);
	symbolizer__free(s);
	if (h)
		dlclose(h);
}

static void test_lru(void)
{
	struct symbolizer_opts o = { .max_files = 1, .max_pids = 1 };
	struct symbolizer *s = NULL;
	struct symbolizer_stats st;
	uint32_t pid = (uint32_t)getpid();
	uint64_t a = (uint64_t)(uintptr_t)test_target_fn, b = (uint64_t)(uintptr_t)dlsym(RTLD_DEFAULT, "printf");
	struct sym r;
	pid_t child;

	CHECK_EQ_INT(symbolizer__new(&o, &s), 0);
	if (!s)
		return;
	for (int i = 0; i < 3; i++) {
		CHECK_EQ_INT(symbolizer__user(s, pid, a, 0, &r), 0);
		CHECK_EQ_STR(r.name, "test_target_fn");
		CHECK_EQ_INT(symbolizer__user(s, pid, b, 0, &r), 0);
		CHECK_EQ_STR(r.name, "printf");
	}
	symbolizer__stats(s, &st);
	CHECK_EQ_INT(st.files_cached, 1);
	CHECK_EQ_INT(st.file_misses, 6);
	CHECK_EQ_INT(st.file_evictions, 5);

	child = fork();
	if (child == 0) {
		pause();
		_exit(0);
	}
	/* The child maps the same files: a second pid evicts the first table, not the files. */
	CHECK_EQ_INT(symbolizer__user(s, (uint32_t)child, b, 0, &r), 0);
	CHECK_EQ_STR(r.name, "printf");
	CHECK_EQ_INT(symbolizer__user(s, pid, b, 0, &r), 0);
	CHECK_EQ_STR(r.name, "printf");
	symbolizer__stats(s, &st);
	CHECK_EQ_INT(st.pids_cached, 1);
	CHECK_EQ_INT(st.pid_evictions, 2);
	CHECK_EQ_INT(st.file_misses, 6);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	symbolizer__free(s);
}

static void test_kernel(void)
{
	char path[256];
	struct symbolizer_opts o = { 0 };
	struct symbolizer *s = NULL;
	struct sym r;

	snprintf(path, sizeof(path), "%s/kallsyms", dir);
	CHECK_EQ_INT(write_file(path, "ffffffff81000000 T _stext\n"
				      "ffffffff81001000 T schedule\n"
				      "ffffffff81002000 T _etext\n"
				      "ffffffffc0000000 t nf_hook\t[nf_tables]\n"),
		     0);
	o.kallsyms = path;
	CHECK_EQ_INT(symbolizer__new(&o, &s), 0);
	if (!s)
		return;
	CHECK_EQ_INT(symbolizer__kernel(s, 0xffffffff81001010, &r), 0);
	CHECK_EQ_STR(r.name, "schedule");
	CHECK_EQ_INT(r.kind, SYM_KERNEL);
	CHECK_EQ_INT(symbolizer__kernel(s, 0xffffffffc0000010, &r), 0);
	CHECK_EQ_STR(r.name, "nf_hook");
	CHECK_EQ_STR(r.module, "nf_tables");
	CHECK_EQ_INT(symbolizer__kernel(s, 0x1234, &r), 0);
	CHECK(r.name == NULL && r.module == NULL);
	CHECK_EQ_INT(r.offset, 0x1234);
	symbolizer__free(s);
}

/* As root: a binary deleted after it started is still named, through map_files. */
static void test_deleted(void)
{
	char path[256], cmd[768], line[64];
	struct symbolizer *s = NULL;
	unsigned long addr = 0;
	struct sym r;
	int pfd[2];
	pid_t child;
	FILE *f;

	if (geteuid() != 0) {
		printf("skip: deleted binary test needs root (map_files)\n");
		return;
	}
	snprintf(path, sizeof(path), "%s/del.c", dir);
	CHECK_EQ_INT(write_file(path, "#include <stdio.h>\n#include <unistd.h>\n"
				      "__attribute__((noinline)) void deleted_fn(void) { pause(); }\n"
				      "int main(void) { printf(\"%lx\\n\", (unsigned long)deleted_fn); fflush(stdout);"
				      " deleted_fn(); return 0; }\n"),
		     0);
	snprintf(cmd, sizeof(cmd), "cc -O1 -o %s/del %s/del.c", dir, dir);
	if (run(cmd))
		return;
	if (pipe(pfd))
		return;
	child = fork();
	if (child == 0) {
		dup2(pfd[1], 1);
		snprintf(path, sizeof(path), "%s/del", dir);
		execl(path, path, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	f = fdopen(pfd[0], "r");
	if (f && fgets(line, sizeof(line), f))
		addr = strtoul(line, NULL, 16);
	CHECK(addr != 0);
	snprintf(path, sizeof(path), "%s/del", dir);
	unlink(path);
	CHECK_EQ_INT(symbolizer__new(NULL, &s), 0);
	if (s && addr) {
		CHECK_EQ_INT(symbolizer__user(s, (uint32_t)child, addr, 0, &r), 0);
		CHECK_EQ_STR(r.name, "deleted_fn");
		CHECK_EQ_STR(r.module, path);
	}
	symbolizer__free(s);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	if (f)
		fclose(f);
}

int main(void)
{
	char cmd[256];

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_self();
	test_dlopen_refresh();
	test_lru();
	test_kernel();
	test_deleted();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	run(cmd);
	T_DONE();
}
