/* symbolizer: this process's own frames, dlopen'ed code, caches, kernel fixture, a deleted binary. */
#include "demangle.h"
#include "filecache.h"
#include "procmaps.h"
#include "procreg.h"
#include "symbolizer.h"
#include "t.h"

#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[] = "/tmp/test_symbolizer.XXXXXX";
/*
 * Files read in the calling thread: the checks are of what is named,
 * cached and evicted; test_later has them read on the worker.
 */
static const struct symbolizer_opts inline_reads = { .async_bytes = SIZE_MAX };

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
	struct symbolizer_opts o = { .proc_root = "/proc", .async_bytes = SIZE_MAX };
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

	{
		/* Its place: the file's id and ip's file offset; ip + 1 one byte further. */
		uint64_t file = 0, off = 0, file2 = 0, off2 = 0;

		CHECK_EQ_INT(symbolizer__place(s, pid, ip, 0, &file, &off), 0);
		CHECK(file != 0);
		CHECK_EQ_INT(off, r.offset);
		CHECK_EQ_INT(symbolizer__place(s, pid, ip + 1, 1, &file2, &off2), 0);
		CHECK(file2 == file && off2 == off + 1);
		/* Nothing mapped there, or a pid never named: no place. */
		CHECK_EQ_INT(symbolizer__place(s, pid, 0x10, 0, &file2, &off2), 0);
		CHECK_EQ_INT(file2, 0);
		CHECK_EQ_INT(symbolizer__place(s, 0x7ffffff0, ip, 0, &file2, &off2), 0);
		CHECK_EQ_INT(file2, 0);
	}

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

	for (int i = 1; i <= 2; i++) {
		snprintf(path, sizeof(path), "%s/plug%d.c", dir, i);
		snprintf(cmd, sizeof(cmd), "int plug%d_fn(int x) { return x + 42; }\n", i);
		CHECK_EQ_INT(write_file(path, cmd), 0);
		snprintf(cmd, sizeof(cmd), "cc -O1 -shared -fPIC -o %s/libplug%d.so %s/plug%d.c", dir, i, dir, i);
		if (run(cmd)) {
			CHECK(!"building libplugN.so");
			return;
		}
	}
	CHECK_EQ_INT(symbolizer__new(&inline_reads, &s), 0);
	if (!s)
		return;
	/* Read our maps before the libraries exist in them. */
	CHECK_EQ_INT(symbolizer__user(s, pid, (uint64_t)(uintptr_t)test_target_fn, 0, &r), 0);
	snprintf(path, sizeof(path), "%s/libplug1.so", dir);
	h = dlopen(path, RTLD_NOW);
	CHECK(h != NULL);
	fn = h ? dlsym(h, "plug1_fn") : NULL;
	CHECK(fn != NULL);
	if (fn) {
		/* A miss is checked with the kernel at once: the new mapping is found. */
		CHECK_EQ_INT(symbolizer__user(s, pid, (uint64_t)(uintptr_t)fn, 0, &r), 0);
		CHECK_EQ_STR(r.name, "plug1_fn");
		CHECK(r.module && strstr(r.module, "libplug1.so"));
	}
	snprintf(path, sizeof(path), "%s/libplug2.so", dir);
	h = dlopen(path, RTLD_NOW);
	CHECK(h != NULL);
	fn = h ? dlsym(h, "plug2_fn") : NULL;
	CHECK(fn != NULL);
	if (fn) {
		/* Garbage first (our stack: no executable mapping), then within the same second... */
		CHECK_EQ_INT(symbolizer__user(s, pid, (uint64_t)(uintptr_t)&r, 0, &r), 0);
		CHECK(r.module == NULL);
		/* ...a new mapping is still checked and found (4 checks a second)... */
		CHECK_EQ_INT(symbolizer__user(s, pid, (uint64_t)(uintptr_t)fn, 0, &r), 0);
		CHECK_EQ_STR(r.name, "plug2_fn");
		CHECK(r.module && strstr(r.module, "libplug2.so"));
		/* ...and past 4 in a second, garbage is not checked again. */
		CHECK_EQ_INT(symbolizer__user(s, pid, (uint64_t)(uintptr_t)&r + 64, 0, &r), 0);
		CHECK_EQ_INT(symbolizer__user(s, pid, (uint64_t)(uintptr_t)&r + 128, 0, &r), 0);
		symbolizer__stats(s, &st);
		CHECK_EQ_INT(st.miss_checks, 4);
	}
	/* Garbage (our stack) is not in an executable mapping: checked once, maps not re-read. */
	usleep(1100 * 1000);
	symbolizer__stats(s, &st);
	CHECK_EQ_INT(symbolizer__user(s, pid, (uint64_t)(uintptr_t)&st, 0, &r), 0);
	CHECK(r.module == NULL && r.name == NULL);
	{
		struct symbolizer_stats st2;

		symbolizer__stats(s, &st2);
		CHECK_EQ_INT(st2.miss_checks, st.miss_checks + 1);
		/* Where the kernel answers PROCMAP_QUERY, garbage reads no maps. */
		CHECK(st2.maps_reads == st.maps_reads || st2.maps_reads == st.maps_reads + 1);
	}
	symbolizer__stats(s, &st);
	CHECK_EQ_INT(st.pids_cached, 1);
	CHECK(st.pid_hits >= 2);
	CHECK_EQ_INT(st.pid_misses, 1);
	CHECK_EQ_INT(st.miss_checks, 5);
	/* Told the process exited, a miss is not asked of the kernel any more; what was mapped still names. */
	usleep(1100 * 1000);
	symbolizer__exited(s, pid);
	CHECK_EQ_INT(symbolizer__user(s, pid, (uint64_t)(uintptr_t)&st, 0, &r), 0);
	CHECK(r.module == NULL && r.name == NULL);
	CHECK_EQ_INT(symbolizer__user(s, pid, (uint64_t)(uintptr_t)test_target_fn, 0, &r), 0);
	CHECK_EQ_STR(r.name, "test_target_fn");
	symbolizer__stats(s, &st);
	CHECK_EQ_INT(st.miss_checks, 5);
	symbolizer__free(s);
	if (h)
		dlclose(h);
}

static void test_lru(void)
{
	struct symbolizer_opts o = { .max_files = 1, .max_pids = 1, .async_bytes = SIZE_MAX };
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

	/* The byte bound: libc alone is over 1 byte, so the two files take turns, as with max_files 1. */
	o = (struct symbolizer_opts){ .max_file_bytes = 1, .async_bytes = SIZE_MAX };
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
	CHECK_EQ_INT(st.file_evictions, 5);
	CHECK(st.file_bytes > 1000 && st.pid_bytes > 0);
	symbolizer__free(s);
	/* A large bound keeps both, and counts their bytes. */
	o = (struct symbolizer_opts){ .max_file_bytes = 1 << 30, .async_bytes = SIZE_MAX };
	CHECK_EQ_INT(symbolizer__new(&o, &s), 0);
	if (!s)
		return;
	CHECK_EQ_INT(symbolizer__user(s, pid, a, 0, &r), 0);
	symbolizer__stats(s, &st);
	{
		uint64_t one = st.file_bytes;

		CHECK_EQ_INT(symbolizer__user(s, pid, b, 0, &r), 0);
		symbolizer__stats(s, &st);
		CHECK_EQ_INT(st.files_cached, 2);
		CHECK_EQ_INT(st.file_evictions, 0);
		CHECK(st.file_bytes > one);
	}
	symbolizer__free(s);
}

static void test_kernel(void)
{
	char path[256];
	struct symbolizer_opts o = { .async_bytes = SIZE_MAX };
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

/* Starts bin, which prints one hex address and waits; returns its pid. */
static pid_t spawn(const char *bin, unsigned long *addr)
{
	char line[64];
	int pfd[2];
	pid_t child;
	FILE *f;

	*addr = 0;
	if (pipe(pfd))
		return -1;
	child = fork();
	if (child == 0) {
		dup2(pfd[1], 1);
		execl(bin, bin, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	f = fdopen(pfd[0], "r");
	if (f && fgets(line, sizeof(line), f))
		*addr = strtoul(line, NULL, 16);
	if (f)
		fclose(f);
	return child;
}

static void reap(pid_t child)
{
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
}

static const char dbg_prog[] =
	"#include <stdio.h>\n#include <unistd.h>\n"
	"__attribute__((noinline)) static void dbg_local_fn(void) { pause(); }\n"
	"int main(void) { printf(\"%lx\\n\", (unsigned long)dbg_local_fn); fflush(stdout);"
	" dbg_local_fn(); return 0; }\n";

static const char cxx_prog[] =
	"#include <cstdio>\n#include <cstring>\n#include <unistd.h>\n"
	"namespace wlspace { template <typename T> struct Matrix { T v;\n"
	"  __attribute__((noinline)) T multiply(int n) { pause(); return v * n; } }; }\n"
	"int main() { wlspace::Matrix<double> m{2.0}; auto p = &wlspace::Matrix<double>::multiply;\n"
	"  void *a; std::memcpy(&a, &p, sizeof a); std::printf(\"%lx\\n\", (unsigned long)a);\n"
	"  std::fflush(stdout); return (int)m.multiply(3); }\n";

/* Resolves the address a program printed; returns the name or NULL (static buffer). */
static const char *resolve_child(const char *bin, const char *debug_root)
{
	static char name[512];
	struct symbolizer_opts o = { .debug_root = debug_root, .async_bytes = SIZE_MAX };
	struct symbolizer *s = NULL;
	unsigned long addr;
	pid_t child = spawn(bin, &addr);
	struct sym r;

	name[0] = 0;
	CHECK(addr != 0);
	if (addr && symbolizer__new(&o, &s) == 0 && symbolizer__user(s, (uint32_t)child, addr, 0, &r) == 0 &&
	    r.name) {
		snprintf(name, sizeof(name), "%s", r.name);
		/* Again, warm (demangle cache): the same answer. */
		CHECK_EQ_INT(symbolizer__user(s, (uint32_t)child, addr, 0, &r), 0);
		CHECK_EQ_STR(r.name, name);
	}
	symbolizer__free(s);
	reap(child);
	return name[0] ? name : NULL;
}

static void test_debug_files(void)
{
	char path[256], cmd[2048], dbg[300];
	const char *name;

	snprintf(path, sizeof(path), "%s/dbg.c", dir);
	CHECK_EQ_INT(write_file(path, dbg_prog), 0);
	snprintf(dbg, sizeof(dbg), "%s/debugroot", dir);

	/* Stripped, nothing to find: the static function is unnamed. */
	snprintf(cmd, sizeof(cmd), "cd %s && cc -O1 -g -o plain dbg.c && strip -s plain", dir);
	if (run(cmd))
		return;
	snprintf(path, sizeof(path), "%s/plain", dir);
	CHECK(resolve_child(path, dbg) == NULL);

	/* By build-id under the debug root. */
	snprintf(cmd, sizeof(cmd),
		 "cd %s && cc -O1 -g -Wl,--build-id=sha1 -o bid dbg.c && objcopy --only-keep-debug bid bid.debug &&"
		 " strip -s bid && id=$(readelf -n bid | sed -n 's/.*Build ID: *//p') &&"
		 " mkdir -p debugroot/.build-id/${id%%${id#??}} && mv bid.debug debugroot/.build-id/${id%%${id#??}}/${id#??}.debug",
		 dir);
	if (!run(cmd)) {
		snprintf(path, sizeof(path), "%s/bid", dir);
		name = resolve_child(path, dbg);
		CHECK_EQ_STR(name, "dbg_local_fn");
	}

	/* By .gnu_debuglink next to the binary, CRC checked. */
	snprintf(cmd, sizeof(cmd),
		 "cd %s && cc -O1 -g -Wl,--build-id=none -o dl dbg.c && objcopy --only-keep-debug dl dl.debug &&"
		 " strip -s dl && objcopy --add-gnu-debuglink=dl.debug dl && mkdir -p sub/.debug &&"
		 " cc -O1 -g -Wl,--build-id=none -o sub/dl2 dbg.c && objcopy --only-keep-debug sub/dl2 sub/.debug/dl2.debug &&"
		 " strip -s sub/dl2 && (cd sub && objcopy --add-gnu-debuglink=.debug/dl2.debug dl2) &&"
		 " cc -O1 -g -Wl,--build-id=none -o bad dbg.c && objcopy --only-keep-debug bad bad.debug &&"
		 " strip -s bad && objcopy --add-gnu-debuglink=bad.debug bad && echo '/* other */' >> dbg.c &&"
		 " cc -O2 -g -Wl,--build-id=none -o other dbg.c && objcopy --only-keep-debug other bad.debug",
		 dir);
	if (!run(cmd)) {
		snprintf(path, sizeof(path), "%s/dl", dir);
		CHECK_EQ_STR(resolve_child(path, dbg), "dbg_local_fn");
		snprintf(path, sizeof(path), "%s/sub/dl2", dir);
		CHECK_EQ_STR(resolve_child(path, dbg), "dbg_local_fn");
		/* The debug file was replaced: its CRC no longer matches, it is not used. */
		snprintf(path, sizeof(path), "%s/bad", dir);
		CHECK(resolve_child(path, dbg) == NULL);
	}
}

static int bad_calls;
static char bad_path[256];

static void on_bad(void *arg, uint32_t pid, const char *path, int err)
{
	bad_calls++;
	snprintf(bad_path, sizeof(bad_path), "%s", path);
}

/* A mapped file that is not a valid ELF: unnamed [module+0xOFF], counted, reported once. */
static void test_bad_file(void)
{
	struct symbolizer_opts o = { .bad_file = on_bad, .async_bytes = SIZE_MAX };
	struct symbolizer *s = NULL;
	struct symbolizer_stats st;
	char path[256];
	void *map;
	struct sym r;
	int fd;

	snprintf(path, sizeof(path), "%s/notelf.bin", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0700);
	CHECK(fd >= 0);
	CHECK(write(fd, "\177ELF garbage garbage garbage garbage garbage garbage garbage garbage", 60) == 60);
	CHECK_EQ_INT(ftruncate(fd, 8192), 0);
	map = mmap(NULL, 8192, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	close(fd);
	CHECK(map != MAP_FAILED);
	if (map == MAP_FAILED)
		return;
	CHECK_EQ_INT(symbolizer__new(&o, &s), 0);
	for (int i = 0; s && i < 3; i++) {
		CHECK_EQ_INT(symbolizer__user(s, (uint32_t)getpid(), (uint64_t)(uintptr_t)map + 0x1234, 0, &r), 0);
		CHECK(r.name == NULL);
		CHECK_EQ_STR(r.module, path);
		CHECK_EQ_INT(r.offset, 0x1234);
	}
	if (s) {
		symbolizer__stats(s, &st);
		CHECK_EQ_INT(st.bad_files, 1);
		CHECK_EQ_INT(bad_calls, 1);
		CHECK_EQ_STR(bad_path, path);
	}
	symbolizer__free(s);
	munmap(map, 8192);
}

/* A process captured at first sight is named after it exited and /proc forgot it. */
static void test_capture(void)
{
	struct procmaps *maps;
	const struct procmap *m;
	struct symbolizer *s = NULL;
	char path[256], cmd[512];
	unsigned long addr;
	pid_t child;
	struct sym r;

	snprintf(cmd, sizeof(cmd), "cd %s && cc -O1 -g -o short dbg.c", dir);
	if (run(cmd))
		return;
	snprintf(path, sizeof(path), "%s/short", dir);
	CHECK_EQ_INT(symbolizer__new(&inline_reads, &s), 0);
	if (!s)
		return;
	child = spawn(path, &addr);
	CHECK(addr != 0);
	CHECK_EQ_INT(symbolizer__capture(s, (uint32_t)child, NULL), 0);
	/* The capture's read is lent out (DWARF tables take it), and outlives the symbolizer's own copy. */
	maps = NULL;
	CHECK_EQ_INT(symbolizer__maps(s, (uint32_t)child, &maps), 0);
	m = maps ? procmaps__find(maps, addr) : NULL;
	CHECK(m && m->path && strstr(m->path, "/short"));
	reap(child);
	CHECK_EQ_INT(symbolizer__user(s, (uint32_t)child, addr, 0, &r), 0);
	CHECK_EQ_STR(r.name, "dbg_local_fn");
	CHECK(r.module && strstr(r.module, "/short"));
	CHECK(symbolizer__capture(s, (uint32_t)child, NULL) == 0); /* the old table stays when /proc has none */
	symbolizer__forget_pid(s, (uint32_t)child);
	CHECK(maps && procmaps__find(maps, addr) == m);
	procmaps__free(maps);
	CHECK_EQ_INT(symbolizer__maps(s, (uint32_t)child, &maps), -ENOENT);
	CHECK_EQ_INT(symbolizer__capture(s, (uint32_t)child, NULL), -ENOENT);
	symbolizer__free(s);
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n;
}

/*
 * A JIT child: once told, maps anonymous code (after its capture, like a JIT
 * compiling as it runs), writes a perf map naming it when the order is 'o',
 * sends the address, and exits at the next byte.
 */
static pid_t jit_child(int *go, int *res)
{
	int g[2], r[2];
	pid_t child;

	if (pipe(g) || pipe(r))
		return -1;
	child = fork();
	if (child == 0) {
		char order = 0, path[64];
		void *mem;
		FILE *f;

		if (read(g[0], &order, 1) != 1)
			_exit(1);
		mem = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (order == 'o') {
			snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
			f = fopen(path, "w");
			if (!f)
				_exit(1);
			fprintf(f, "%lx 40 jit_after_exit_fn\n", (unsigned long)(uintptr_t)mem);
			fclose(f);
		}
		if (write(r[1], &mem, sizeof(mem)) != sizeof(mem) || read(g[0], &order, 1) != 1)
			_exit(1);
		_exit(0);
	}
	close(g[0]);
	close(r[1]);
	*go = g[1];
	*res = r[0];
	return child;
}

/*
 * Samples of a short JIT process are drained after it exited: /proc has no
 * root or maps for it then, as a zombie and once reaped, and the code it made
 * after its capture is in no mapping we hold. Its perf map is read through
 * the root pinned at capture, and believed only from its own user.
 */
static void test_jit_after_exit(void)
{
	static const char orders[] = { 'o', 'o', 'p' }; /* own map (zombie), own map (reaped), planted */
	struct symbolizer_stats st;
	struct symbolizer *s = NULL;
	uint64_t rejected = 0;
	char path[64], name[64];
	int fds = count_fds();

	CHECK_EQ_INT(symbolizer__new(&inline_reads, &s), 0);
	for (size_t i = 0; s && i < sizeof(orders); i++) {
		siginfo_t si;
		void *mem = NULL;
		int go, res, fd;
		pid_t child;
		struct sym r;

		if (orders[i] == 'p' && geteuid() != 0) {
			printf("skip: a planted perf map needs root (chown)\n");
			break;
		}
		child = jit_child(&go, &res);
		CHECK(child > 0);
		if (child <= 0)
			break;
		snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)child);
		CHECK_EQ_INT(symbolizer__capture(s, (uint32_t)child, NULL), 0);
		CHECK(write(go, &orders[i], 1) == 1);
		CHECK(read(res, &mem, sizeof(mem)) == sizeof(mem));
		if (orders[i] == 'p') {
			/* /tmp is world-writable: another user names the root process's code. */
			fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
			CHECK(fd >= 0);
			snprintf(name, sizeof(name), "%lx 40 planted_fn\n", (unsigned long)(uintptr_t)mem);
			CHECK(fd >= 0 && write(fd, name, strlen(name)) == (ssize_t)strlen(name));
			CHECK(fd >= 0 && fchown(fd, 65534, 65534) == 0);
			if (fd >= 0)
				close(fd);
		}
		CHECK(write(go, "x", 1) == 1);
		close(go);
		close(res);
		/* The first stays a zombie while it is symbolized. */
		CHECK_EQ_INT(waitid(P_PID, (id_t)child, &si, WEXITED | (i == 0 ? WNOWAIT : 0)), 0);
		CHECK_EQ_INT(symbolizer__user(s, (uint32_t)child, (uint64_t)(uintptr_t)mem + 8, 0, &r), 0);
		if (orders[i] == 'o') {
			CHECK_EQ_STR(r.name, "jit_after_exit_fn");
			CHECK_EQ_STR(r.module, path);
			CHECK_EQ_INT(r.kind, SYM_JIT);
		} else {
			CHECK(r.name == NULL);
			CHECK(r.kind != SYM_JIT);
			rejected++;
		}
		if (i == 0)
			waitpid(child, NULL, 0);
		unlink(path);
		symbolizer__forget_pid(s, (uint32_t)child);
	}
	if (s) {
		symbolizer__stats(s, &st);
		CHECK_EQ_INT(st.perfmaps_rejected, rejected);
	}
	symbolizer__free(s);
	CHECK_EQ_INT(count_fds(), fds); /* pinned roots are closed with the last process using them */
}

static void test_cxx(void)
{
	char path[256], cmd[512];

	snprintf(path, sizeof(path), "%s/m.cc", dir);
	CHECK_EQ_INT(write_file(path, cxx_prog), 0);
	snprintf(cmd, sizeof(cmd), "cd %s && c++ -O1 -o cxx m.cc", dir);
	if (run(cmd)) {
		printf("skip: no C++ compiler\n");
		return;
	}
	snprintf(path, sizeof(path), "%s/cxx", dir);
	CHECK_EQ_STR(resolve_child(path, NULL), "wlspace::Matrix<double>::multiply(int)");
}

static void test_demangle(void)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "_ZN7wlspace6MatrixIdE8multiplyEi", "wlspace::Matrix<double>::multiply(int)" },
		{ "_Z3foov.cold", "foo() [clone .cold]" },
		{ "_ZN3std2rt10lang_start17h0123456789abcdefE", "std::rt::lang_start" },
		{ "_ZN4core3ptr85drop_in_place$LT$std..rt..lang_start$LT$$LP$$RP$$GT$..$u7b$$u7b$closure$u7d$$u7d$$GT$17h0123456789abcdefE",
		  "core::ptr::drop_in_place<std::rt::lang_start<()>::{{closure}}>" },
		{ "_RNvNtCs1234_7mycrate3foo3bar", "mycrate::foo::bar" },
		{ "_RINvNtC3std3mem8align_ofjEC3foo", "std::mem::align_of::<usize>" },
		{ "_RNvMNtCs1234_7mycrate3fooNtB2_3Bar3new", "<mycrate::foo::Bar>::new" },
		{ "_RNvXs_Cs1234_7mycrateNtB4_3FooNtNtCs5678_4core3fmt7Display3fmt",
		  "<mycrate::Foo as core::fmt::Display>::fmt" },
		{ "_RNCNvCsgStHSCytQ6I_7mycrate4main0B3_", "mycrate::main::{closure#0}" },
		{ "_RINvCs1234_7mycrate3fooRShEB2_", "mycrate::foo::<&[u8]>" },
	};
	static const char *const bad[] = { "main", "_Z", "_ZZZ", "_RB0_", "_RNvNvB0_1a1b", "_RC999999999x", "" };
	char out[256], big[8192];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CHECK_EQ_INT(demangle(cases[i].in, out, sizeof(out)), 0);
		CHECK_EQ_STR(out, cases[i].out);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(demangle(bad[i], out, sizeof(out)) < 0);
	/* Output is truncated, never overrun. */
	CHECK_EQ_INT(demangle("_ZN7wlspace6MatrixIdE8multiplyEi", out, 8), 0);
	CHECK_EQ_STR(out, "wlspace");
	/* Deep nesting through backrefs stays bounded. */
	memcpy(big, "_R", 2);
	for (size_t i = 2; i < sizeof(big) - 1; i++)
		big[i] = "IN"[i & 1];
	big[sizeof(big) - 1] = 0;
	CHECK(demangle(big, out, sizeof(out)) < 0);
	snprintf(big, sizeof(big), "_RNvB%s", "0_");
	CHECK(demangle(big, out, sizeof(out)) < 0);
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
	CHECK_EQ_INT(symbolizer__new(&inline_reads, &s), 0);
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

/*
 * A short process's vdso frames are drained after it exited: its memory
 * cannot be read then, so the vdso is named from profd's own image.
 */
static void test_vdso_after_exit(void)
{
	uint64_t base = getauxval(AT_SYSINFO_EHDR), addr = 0;
	struct symbolizer *s = NULL;
	char want[64] = "";
	int go[2];
	struct sym r;
	pid_t child;

	if (!base) {
		printf("skip: no vdso\n");
		return;
	}
	/* A named address in our own vdso, found by asking for ourselves. */
	CHECK_EQ_INT(symbolizer__new(&inline_reads, &s), 0);
	for (uint64_t off = 0x400; s && off < 0x2000 && !addr; off += 0x10) {
		if (symbolizer__user(s, (uint32_t)getpid(), base + off, 0, &r) == 0 && r.name) {
			addr = base + off;
			snprintf(want, sizeof(want), "%s", r.name);
		}
	}
	symbolizer__free(s);
	s = NULL;
	CHECK(addr != 0);
	if (!addr || pipe(go))
		return;
	child = fork();
	if (child == 0) {
		char c;

		close(go[1]);
		_exit(read(go[0], &c, 1) < 0);
	}
	close(go[0]);
	CHECK_EQ_INT(symbolizer__new(&inline_reads, &s), 0);
	/* Its mappings are read while it lives (a frame of this binary), its vdso not yet. */
	CHECK_EQ_INT(symbolizer__user(s, (uint32_t)child, (uint64_t)(uintptr_t)&test_vdso_after_exit, 0, &r), 0);
	CHECK_EQ_STR(r.name ? r.name : "(none)", "test_vdso_after_exit");
	close(go[1]);
	waitpid(child, NULL, 0);
	/* Reaped: /proc/PID/mem is gone; fork left the vdso where ours is. */
	CHECK_EQ_INT(symbolizer__user(s, (uint32_t)child, addr, 0, &r), 0);
	CHECK_EQ_STR(r.name ? r.name : "(none)", want);
	symbolizer__free(s);
}

/*
 * A forked child, gone before anyone read its /proc, is named from its
 * parent's mappings: what the parent's capture read, and a library the
 * parent dlopen()ed after that capture (the parent's own miss finds it).
 */
static void test_fork(void)
{
	struct symbolizer_stats st0, st1;
	struct procmaps *pmaps = NULL;
	struct symbolizer *s = NULL;
	char path[256], cmd[512];
	uint32_t self = (uint32_t)getpid();
	void *h, *fn;
	pid_t child;
	struct sym r;

	snprintf(path, sizeof(path), "%s/forkplug.c", dir);
	CHECK_EQ_INT(write_file(path, "int forkplug_fn(int x) { return x * 7; }\n"), 0);
	snprintf(cmd, sizeof(cmd), "cc -O1 -shared -fPIC -o %s/libforkplug.so %s/forkplug.c", dir,
		 dir);
	if (run(cmd)) {
		CHECK(!"building libforkplug.so");
		return;
	}
	CHECK_EQ_INT(symbolizer__new(&inline_reads, &s), 0);
	if (!s)
		return;
	CHECK_EQ_INT(symbolizer__fork(s, self, 1, NULL, NULL), -EINVAL); /* nothing to share */
	CHECK_EQ_INT(symbolizer__capture(s, self, NULL), 0);
	CHECK_EQ_INT(symbolizer__maps(s, self, &pmaps), 0);
	snprintf(path, sizeof(path), "%s/libforkplug.so", dir);
	h = dlopen(path, RTLD_NOW);
	fn = h ? dlsym(h, "forkplug_fn") : NULL;
	CHECK(fn != NULL);
	child = fork();
	if (child == 0)
		_exit(0);
	CHECK(child > 0);
	waitpid(child, NULL, 0);
	symbolizer__stats(s, &st0);
	CHECK_EQ_INT(symbolizer__fork(s, self, (uint32_t)child, NULL, pmaps), 0);
	procmaps__free(pmaps); /* the child's entry holds its own reference */
	symbolizer__exited(s, (uint32_t)child);
	CHECK_EQ_INT(symbolizer__user(s, (uint32_t)child, (uintptr_t)test_target_fn, 0, &r), 0);
	CHECK_EQ_STR(r.name ? r.name : "(none)", "test_target_fn");
	symbolizer__stats(s, &st1);
	CHECK_EQ_INT(st1.maps_reads, st0.maps_reads); /* shared, not read */
	CHECK_EQ_INT(st1.pid_bytes - st0.pid_bytes < 1024, 1); /* and not counted twice */
	if (fn) {
		CHECK_EQ_INT(symbolizer__user(s, (uint32_t)child, (uintptr_t)fn, 0, &r), 0);
		CHECK_EQ_STR(r.name ? r.name : "(none)", "forkplug_fn");
		CHECK(r.module && strstr(r.module, "libforkplug.so"));
		symbolizer__stats(s, &st1);
		CHECK_EQ_INT(st1.maps_reads, st0.maps_reads + 1); /* the parent's, once */
	}
	/* An exec replaces what the child shared: forgotten, the parent keeps its own. */
	symbolizer__forget_pid(s, (uint32_t)child);
	CHECK_EQ_INT(symbolizer__user(s, self, (uint64_t)(uintptr_t)test_target_fn, 0, &r), 0);
	CHECK_EQ_STR(r.name ? r.name : "(none)", "test_target_fn");
	symbolizer__free(s);
	if (h)
		dlclose(h);
}

/*
 * An exec replaces the image: the samples taken before it, drained after,
 * are named by the image before (its files loaded already), not left
 * unnamed against the new one.
 */
static void test_exec_prev(void)
{
	struct procmap anon = { .start = 0x10000, .end = 0x11000, .flags = PROCMAP_ANON };
	struct procmaps *old = NULL, *img = NULL;
	struct symbolizer_stats st;
	struct symbolizer *s = NULL;
	uint32_t self = (uint32_t)getpid();
	uint64_t ip = (uint64_t)(uintptr_t)test_target_fn, file = 0, off = 0, file2 = 0, off2 = 0;
	struct sym r;

	CHECK_EQ_INT(symbolizer__new(&inline_reads, &s), 0);
	if (!s)
		return;
	CHECK_EQ_INT(symbolizer__capture(s, self, NULL), 0);
	CHECK_EQ_INT(symbolizer__place(s, self, ip, 0, &file, &off), 0);
	CHECK(file != 0);
	CHECK_EQ_INT(symbolizer__maps(s, self, &old), 0);
	CHECK_EQ_INT(procmaps__from(&anon, 1, &img), 0);
	/* The new image maps nothing of ours; exited, so /proc is not asked. */
	CHECK_EQ_INT(symbolizer__capture_maps(s, self, NULL, img), 0);
	symbolizer__exited(s, self);
	CHECK_EQ_INT(symbolizer__place(s, self, ip, 0, &file2, &off2), 0);
	CHECK_EQ_INT(file2, 0);
	CHECK_EQ_INT(symbolizer__user(s, self, ip, 0, &r), 0);
	CHECK(r.name == NULL);
	symbolizer__exec_prev(s, self, old, NULL, 0);
	procmaps__free(old); /* the entry holds its own reference */
	CHECK_EQ_INT(symbolizer__place(s, self, ip, 0, &file2, &off2), 0);
	CHECK(file2 == file && off2 == off);
	CHECK_EQ_INT(symbolizer__user(s, self, ip, 0, &r), 0);
	CHECK_EQ_STR(r.name ? r.name : "(none)", "test_target_fn");
	/* An address in neither image stays unnamed. */
	CHECK_EQ_INT(symbolizer__user(s, self, 0x20000, 0, &r), 0);
	CHECK(r.name == NULL);
	symbolizer__stats(s, &st);
	CHECK_EQ_INT(st.prev_image_hits, 2);
	procmaps__free(img);
	symbolizer__free(s);
}

/* A symbolizer over its own registry and file cache, as the daemon has: 0, or -1 with all freed. */
static int shared_new(struct procreg **reg, struct filecache **fc, struct symbolizer **s)
{
	struct symbolizer_opts o = { .async_bytes = SIZE_MAX };

	CHECK_EQ_INT(procreg__new(0, 0, reg), 0);
	CHECK_EQ_INT(filecache__new(fc), 0);
	o.registry = *reg;
	o.files = *fc;
	if (*reg && *fc)
		CHECK_EQ_INT(symbolizer__new(&o, s), 0);
	if (*s)
		return 0;
	filecache__free(*fc);
	procreg__free(*reg);
	return -1;
}

/*
 * What is kept per process hangs off the registry's record and each file's
 * symbols off the shared file cache: a new image under the pid drops the
 * process's entry, and a record only the symbolizer knew goes with it.
 */
static void test_shared_registry(void)
{
	struct procreg *reg = NULL;
	struct filecache *fc = NULL;
	struct symbolizer *s = NULL;
	struct symbolizer_stats st;
	struct procreg_stats rs;
	uint32_t pid = (uint32_t)getpid();
	uint64_t ip = (uint64_t)(uintptr_t)test_target_fn;
	struct sym r;

	if (shared_new(&reg, &fc, &s))
		return;
	CHECK_EQ_INT(symbolizer__user(s, pid, ip, 0, &r), 0);
	CHECK_EQ_STR(r.name, "test_target_fn");
	procreg__stats(reg, &rs);
	CHECK_EQ_INT(rs.records, 1); /* a reader met it first: the registry knows it */
	CHECK(filecache__count(fc) >= 1);
	symbolizer__stats(s, &st);
	CHECK_EQ_INT(st.pids_cached, 1);
	/* An exec under the pid: the old image's entry goes, the next frame reads the new one. */
	CHECK_EQ_INT(procreg__exec(reg, pid, 1, 1, NULL), 0);
	symbolizer__stats(s, &st);
	CHECK_EQ_INT(st.pids_cached, 0);
	CHECK_EQ_INT(symbolizer__user(s, pid, ip, 0, &r), 0);
	CHECK_EQ_STR(r.name, "test_target_fn");
	symbolizer__stats(s, &st);
	CHECK_EQ_INT(st.maps_reads, 2);
	/* Forgotten by the registry (after its exit): the entry goes with the record. */
	procreg__forget(reg, pid);
	symbolizer__stats(s, &st);
	CHECK_EQ_INT(st.pids_cached, 0);
	/* Known to the symbolizer only: evicting it forgets the record too. */
	CHECK_EQ_INT(symbolizer__user(s, pid, ip, 0, &r), 0);
	symbolizer__forget_pid(s, pid);
	procreg__stats(reg, &rs);
	CHECK_EQ_INT(rs.records, 0);
	symbolizer__free(s);
	CHECK_EQ_INT(filecache__count(fc), 0); /* its files leave the shared cache */
	filecache__free(fc);
	procreg__free(reg);
}

/*
 * A shim's chain: three execs under one pid, each image at its own
 * addresses, all drained after the last. Each exec starts the pid's
 * record afresh (and the symbolizer's entry with it), as daemon/events.c
 * does: the images from before the last exec are taken before it and
 * handed back, so the first image still names its samples.
 */
static void test_exec_chain_prev(void)
{
	struct procmap anon[3] = {
		{ .start = 0x10000, .end = 0x11000, .flags = PROCMAP_ANON },
		{ .start = 0x20000, .end = 0x21000, .flags = PROCMAP_ANON },
		{ .start = 0x30000, .end = 0x31000, .flags = PROCMAP_ANON },
	};
	struct procmaps *older[SYMBOLIZER_PREV_IMAGES], *prev = NULL, *img = NULL;
	struct procreg *reg = NULL;
	struct filecache *fc = NULL;
	struct symbolizer *s = NULL;
	uint32_t pid = (uint32_t)getpid();
	uint64_t ip = (uint64_t)(uintptr_t)test_target_fn;
	size_t n, kept[3];
	struct sym r;

	if (shared_new(&reg, &fc, &s))
		return;
	CHECK_EQ_INT(symbolizer__capture(s, pid, NULL), 0);
	for (int i = 0; i < 3; i++) {
		CHECK_EQ_INT(symbolizer__maps(s, pid, &prev), 0);
		n = symbolizer__prev_images(s, pid, older);
		kept[i] = n;
		CHECK_EQ_INT(procreg__exec(reg, pid, 1, 1, NULL), 0);
		CHECK_EQ_INT(procmaps__from(&anon[i], 1, &img), 0);
		CHECK_EQ_INT(symbolizer__capture_maps(s, pid, NULL, img), 0);
		symbolizer__exec_prev(s, pid, prev, older, n);
		procmaps__free(img);
		procmaps__free(prev);
		prev = img = NULL;
		for (size_t j = 0; j < n; j++)
			procmaps__free(older[j]);
	}
	CHECK_EQ_INT(kept[0], 0);
	CHECK_EQ_INT(kept[1], 1);
	CHECK_EQ_INT(kept[2], 2);
	symbolizer__exited(s, pid); /* /proc is not asked: only the images kept name it */
	CHECK_EQ_INT(symbolizer__user(s, pid, ip, 0, &r), 0);
	CHECK_EQ_STR(r.name ? r.name : "(none)", "test_target_fn");
	symbolizer__free(s);
	filecache__free(fc);
	procreg__free(reg);
}

/* Polls name_later until the worker's read is in (10 s at most). */
static int name_later_wait(struct symbolizer *s, uint64_t file, uint64_t off, int is_ret, const char **name)
{
	int r = -EAGAIN;

	for (int i = 0; i < 1000 && r == -EAGAIN; i++) {
		r = symbolizer__name_later(s, file, off, is_ret, name);
		if (r == -EAGAIN)
			usleep(10000);
	}
	return r;
}

/* Every file read on the worker: frames come back unnamed with later set, then are named. */
static void test_later(void)
{
	struct symbolizer_opts o = { .proc_root = "/proc", .async_bytes = 1 };
	struct symbolizer_stats st;
	struct symbolizer *s = NULL;
	uint32_t pid = (uint32_t)getpid();
	uint64_t ip = (uint64_t)(uintptr_t)test_target_fn, file = 0, off = 0;
	void *pf = dlsym(RTLD_DEFAULT, "printf");
	const char *name = NULL;
	struct sym r;

	CHECK_EQ_INT(symbolizer__new(&o, &s), 0);
	if (!s)
		return;
	/* The first sight of the file starts its read: nothing names it yet. */
	CHECK_EQ_INT(symbolizer__user(s, pid, ip, 0, &r), 0);
	CHECK(r.name == NULL);
	CHECK(r.later != 0);
	CHECK(r.module && strstr(r.module, "test_symbolizer"));
	/* Not placed while read: place() keys only loaded files. */
	CHECK_EQ_INT(symbolizer__place(s, pid, ip, 0, &file, &off), 0);
	CHECK_EQ_INT(file, 0);
	CHECK_EQ_INT(name_later_wait(s, r.later, r.offset, 0, &name), 0);
	CHECK_EQ_STR(name, "test_target_fn");
	/* A return address one past the function's end, as the frame's offset says. */
	CHECK_EQ_INT(symbolizer__name_later(s, r.later, r.offset + 1, 1, &name), 0);
	CHECK_EQ_STR(name, "test_target_fn");
	/* An id that never was: no name. */
	CHECK_EQ_INT(symbolizer__name_later(s, r.later + 1000, r.offset, 0, &name), -ENOENT);
	/* Landed: named at once now. */
	CHECK_EQ_INT(symbolizer__user(s, pid, ip + 2, 0, &r), 0);
	CHECK_EQ_STR(r.name, "test_target_fn");
	CHECK_EQ_INT(r.later, 0);

	CHECK(pf != NULL);
	CHECK_EQ_INT(symbolizer__user(s, pid, (uint64_t)(uintptr_t)pf, 0, &r), 0);
	if (!r.name) {
		CHECK(r.later != 0);
		CHECK_EQ_INT(name_later_wait(s, r.later, r.offset, 0, &name), 0);
		CHECK_EQ_STR(name, "printf");
	}
	symbolizer__stats(s, &st);
	CHECK(st.loads_async >= 2);
	CHECK_EQ_INT(st.loads_waiting, 0);

	/* Freed with reads under way: they are dropped. */
	symbolizer__forget_pid(s, pid);
	symbolizer__free(s);
	s = NULL;
	CHECK_EQ_INT(symbolizer__new(&o, &s), 0);
	if (s) {
		CHECK_EQ_INT(symbolizer__capture(s, pid, NULL), 0);
		symbolizer__stats(s, &st);
		CHECK(st.loads_waiting > 0);
		symbolizer__free(s);
	}
}

int main(void)
{
	char cmd[256];

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_demangle();
	test_self();
	test_later();
	test_dlopen_refresh();
	test_lru();
	test_kernel();
	test_deleted();
	test_debug_files();
	test_capture();
	test_fork();
	test_exec_prev();
	test_exec_chain_prev();
	test_shared_registry();
	test_jit_after_exit();
	test_vdso_after_exit();
	test_bad_file();
	test_cxx();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	run(cmd);
	T_DONE();
}
