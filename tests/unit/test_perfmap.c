/* perfmap: parsing, growth, overlaps; through the symbolizer: JIT frames and the owner check. */
#include "perfmap.h"
#include "symbolizer.h"
#include "t.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static void test_parse(void)
{
	static const char text[] = "1000 100 first\n"
				   "0x2000 0x10 LazyCompile:*foo /app/x.js:10:3\n"
				   "zz 10 bad\n"
				   "3000 0 zero_size\n"
				   "3000\n"
				   "1010 20 newer_inside_first\r\n"
				   "4000 10 partial";
	struct perfmap *pm = NULL;
	const char *name;
	uint64_t start;
	size_t used;

	CHECK_EQ_INT(perfmap__new(&pm), 0);
	CHECK_EQ_INT(perfmap__parse(pm, text, sizeof(text) - 1, &used), 0);
	CHECK_EQ_INT(used, sizeof(text) - 1 - strlen("4000 10 partial"));
	CHECK_EQ_INT(perfmap__count(pm), 3);
	CHECK_EQ_INT(perfmap__bad_lines(pm), 3);
	CHECK_EQ_INT(perfmap__lookup(pm, 0x1005, &name, &start), 0);
	CHECK_EQ_STR(name, "first");
	CHECK_EQ_INT(perfmap__lookup(pm, 0x1015, &name, &start), 0);
	CHECK_EQ_STR(name, "newer_inside_first");
	CHECK_EQ_INT(start, 0x1010);
	CHECK_EQ_INT(perfmap__lookup(pm, 0x1040, &name, NULL), 0);
	CHECK_EQ_STR(name, "first");
	CHECK_EQ_INT(perfmap__lookup(pm, 0x200f, &name, NULL), 0);
	CHECK_EQ_STR(name, "LazyCompile:*foo /app/x.js:10:3");
	CHECK_EQ_INT(perfmap__lookup(pm, 0x2010, &name, NULL), -ENOENT);
	CHECK_EQ_INT(perfmap__lookup(pm, 0xfff, &name, NULL), -ENOENT);
	perfmap__free(pm);
}

static void test_growth(void)
{
	char path[] = "/tmp/test_perfmap.XXXXXX";
	struct perfmap *pm = NULL;
	const char *name;
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	CHECK_EQ_INT(perfmap__new(&pm), 0);
	CHECK(write(fd, "1000 10 a\n2000 1", 16) == 16);
	CHECK_EQ_INT(perfmap__update_fd(pm, fd), 0);
	CHECK_EQ_INT(perfmap__count(pm), 1);
	CHECK(write(fd, "0 b\n3000 10 c\n", 14) == 14);
	CHECK_EQ_INT(perfmap__update_fd(pm, fd), 0);
	CHECK_EQ_INT(perfmap__count(pm), 3);
	CHECK_EQ_INT(perfmap__lookup(pm, 0x2008, &name, NULL), 0);
	CHECK_EQ_STR(name, "b");
	/* Truncated and rewritten: starts over. */
	CHECK_EQ_INT(ftruncate(fd, 0), 0);
	CHECK(pwrite(fd, "5000 10 d\n", 10, 0) == 10);
	CHECK_EQ_INT(perfmap__update_fd(pm, fd), 0);
	CHECK_EQ_INT(perfmap__count(pm), 1);
	CHECK_EQ_INT(perfmap__lookup(pm, 0x1000, &name, NULL), -ENOENT);
	close(fd);
	unlink(path);
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	CHECK_EQ_INT(perfmap__update_fd(pm, fd), -EINVAL);
	close(fd);
	perfmap__free(pm);
}

/* A perf map within a budget: reading stops there and says so; a JIT's repeated names are kept once. */
static void test_budget(void)
{
	char line[64];
	struct perfmap *pm = NULL;
	const char *name;
	size_t bytes;

	CHECK_EQ_INT(perfmap__new_max(64 << 10, &pm), 0);
	if (!pm)
		return;
	for (int i = 0; i < 100000 && !perfmap__full(pm); i++) {
		size_t used;
		int n = snprintf(line, sizeof(line), "%x 10 LazyCompile:*hot\n", 0x1000 + i * 16);

		perfmap__parse(pm, line, (size_t)n, &used);
	}
	CHECK(perfmap__full(pm));
	bytes = perfmap__mem_bytes(pm);
	CHECK(bytes <= 64 << 10);
	CHECK(perfmap__count(pm) > 1000);
	CHECK_EQ_INT(perfmap__lookup(pm, 0x1005, &name, NULL), 0);
	CHECK_EQ_STR(name, "LazyCompile:*hot");
	perfmap__free(pm);
}

/* Our own process as a JIT: anonymous executable memory named in /tmp/perf-<pid>.map. */
static void test_symbolizer(void)
{
	struct symbolizer *s = NULL;
	struct symbolizer_stats st;
	char path[64], line[128];
	void *code = mmap(NULL, 8192, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t base = (uint64_t)(uintptr_t)code;
	struct sym r;
	int fd, n;

	CHECK(code != MAP_FAILED);
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	CHECK(fd >= 0);
	n = snprintf(line, sizeof(line), "%llx 100 js_hot_function\n", (unsigned long long)base);
	CHECK(write(fd, line, (size_t)n) == n);
	CHECK_EQ_INT(symbolizer__new(NULL, &s), 0);
	if (!s)
		goto out;
	CHECK_EQ_INT(symbolizer__user(s, (uint32_t)getpid(), base + 0x10, 0, &r), 0);
	CHECK_EQ_STR(r.name, "js_hot_function");
	CHECK_EQ_INT(r.kind, SYM_JIT);
	CHECK_EQ_STR(r.module, path);
	/* Appended later: found once the re-read interval has passed. */
	n = snprintf(line, sizeof(line), "%llx 100 js_later\n", (unsigned long long)base + 0x1000);
	CHECK(write(fd, line, (size_t)n) == n);
	usleep(1100 * 1000);
	CHECK_EQ_INT(symbolizer__user(s, (uint32_t)getpid(), base + 0x1010, 0, &r), 0);
	CHECK_EQ_STR(r.name, "js_later");
	symbolizer__stats(s, &st);
	CHECK_EQ_INT(st.jit_hits, 2);
	symbolizer__free(s);
	s = NULL;

	/* Owned by someone else (root can make it so): ignored. */
	if (geteuid() == 0) {
		CHECK_EQ_INT(fchown(fd, 65534, 65534), 0);
		CHECK_EQ_INT(symbolizer__new(NULL, &s), 0);
		if (s) {
			CHECK_EQ_INT(symbolizer__user(s, (uint32_t)getpid(), base + 0x10, 0, &r), 0);
			CHECK(r.name == NULL);
			CHECK(r.kind != SYM_JIT);
			symbolizer__stats(s, &st);
			CHECK_EQ_INT(st.perfmaps_rejected, 1);
			symbolizer__free(s);
			s = NULL;
		}
	}
	/* A symlink is never followed, even to a file the user owns. */
	{
		char target[64];

		snprintf(target, sizeof(target), "/tmp/perf-%d.target", getpid());
		CHECK_EQ_INT(rename(path, target), 0);
		CHECK_EQ_INT(symlink(target, path), 0);
		if (geteuid() == 0)
			CHECK_EQ_INT(fchown(fd, getuid(), getgid()), 0);
		CHECK_EQ_INT(symbolizer__new(NULL, &s), 0);
		if (s) {
			CHECK_EQ_INT(symbolizer__user(s, (uint32_t)getpid(), base + 0x10, 0, &r), 0);
			CHECK(r.name == NULL);
			symbolizer__free(s);
		}
		unlink(target);
	}
out:
	if (fd >= 0)
		close(fd);
	unlink(path);
	munmap(code, 8192);
}

int main(void)
{
	test_parse();
	test_growth();
	test_budget();
	test_symbolizer();
	T_DONE();
}
