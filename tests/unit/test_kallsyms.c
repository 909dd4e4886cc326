/* kallsyms: text symbols from a fixture file, modules, aliases, restricted (zeroed) tables. */
#include "kallsyms.h"
#include "t.h"

#include <stdlib.h>
#include <unistd.h>

static const char fixture[] =
	"ffffffff81000000 T _stext\n"
	"ffffffff81000000 T startup_64\n"
	"ffffffff81001000 t do_one_initcall\n"
	"ffffffff81002000 D some_data\n"
	"ffffffff81003000 W weak_fn\n"
	"ffffffff81004000 T schedule\n"
	"ffffffff81005000 T _etext\n"
	"ffffffffc0a00000 t ext4_readpage\t[ext4]\n"
	"ffffffffc0a00800 t ext4_writepage\t[ext4]\n"
	"ffffffffc0b00000 t xfs_iomap\t[xfs]\n"
	"ffffffffc0b00100 b xfs_bss\t[xfs]\n"
	"zzzz T broken\n"
	"ffffffff81006000 T\n"
	"ffffffff81007000 t bad_module\t[unterminated\n";

static const char zeroed[] =
	"0000000000000000 T _stext\n"
	"0000000000000000 T schedule\n";

int main(void)
{
	struct kallsyms *k = NULL;
	const char *name, *mod;
	uint64_t start;
	char path[] = "/tmp/test_kallsyms.XXXXXX";
	int fd;

	CHECK_EQ_INT(kallsyms__parse(fixture, sizeof(fixture) - 1, &k), 0);
	if (!k)
		T_DONE();
	CHECK_EQ_INT(kallsyms__count(k), 9);
	CHECK_EQ_INT(kallsyms__lookup(k, 0xffffffff81004010, &name, &mod, &start), 0);
	CHECK_EQ_STR(name, "schedule");
	CHECK(mod == NULL);
	CHECK_EQ_INT(start, 0xffffffff81004000);
	CHECK_EQ_INT(kallsyms__lookup(k, 0xffffffff81002010, &name, &mod, NULL), 0);
	CHECK_EQ_STR(name, "do_one_initcall"); /* data symbols do not end text */
	CHECK_EQ_INT(kallsyms__lookup(k, 0xffffffff81000005, &name, &mod, NULL), 0);
	CHECK(!strcmp(name, "_stext") || !strcmp(name, "startup_64"));
	CHECK_EQ_INT(kallsyms__lookup(k, 0xffffffffc0a00900, &name, &mod, NULL), 0);
	CHECK_EQ_STR(name, "ext4_writepage");
	CHECK_EQ_STR(mod, "ext4");
	CHECK_EQ_INT(kallsyms__lookup(k, 0xffffffffc0b00200, &name, &mod, NULL), 0);
	CHECK_EQ_STR(name, "xfs_iomap");
	CHECK_EQ_STR(mod, "xfs");
	CHECK(kallsyms__lookup(k, 0xffffffff80000000, &name, &mod, NULL) < 0);
	/* Far past the last symbol: not named after it. */
	CHECK(kallsyms__lookup(k, 0xffffffffc0f00000, &name, &mod, NULL) < 0);
	kallsyms__free(k);

	k = NULL;
	CHECK_EQ_INT(kallsyms__parse(zeroed, sizeof(zeroed) - 1, &k), 0);
	if (k) {
		CHECK_EQ_INT(kallsyms__count(k), 0);
		CHECK(kallsyms__lookup(k, 0x10, &name, &mod, NULL) < 0);
		kallsyms__free(k);
	}

	fd = mkstemp(path);
	CHECK(fd >= 0);
	CHECK(write(fd, fixture, sizeof(fixture) - 1) == (ssize_t)(sizeof(fixture) - 1));
	close(fd);
	k = NULL;
	CHECK_EQ_INT(kallsyms__load(path, &k), 0);
	if (k) {
		CHECK_EQ_INT(kallsyms__count(k), 9);
		kallsyms__free(k);
	}
	unlink(path);
	CHECK(kallsyms__load("/dev/zero", &k) < 0);
	T_DONE();
}
