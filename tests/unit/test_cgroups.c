/* cgroups: an id (the inode BPF reports) names its path, found by handle or by a scan of the tree. */
#include "cgroups.h"
#include "t.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

int main(void)
{
	char line[4096], full[8192], *mnt = cgroups__mount();
	struct cgroups *c = NULL;
	FILE *f = fopen("/proc/self/cgroup", "re");
	struct stat st;
	const char *p;

	int v2 = 0;

	/* The v2 line, "0::/path" (after the v1 ones on a hybrid host). Without it there is nothing to name. */
	while (f && !v2 && fgets(line, sizeof(line), f))
		v2 = !strncmp(line, "0::/", 4);
	if (!mnt || !f || !v2) {
		printf("test_cgroups: no cgroup v2 membership, nothing to check\n");
		free(mnt);
		if (f)
			fclose(f);
		return 77;
	}
	fclose(f);
	line[strcspn(line, "\n")] = 0;
	snprintf(full, sizeof(full), "%s%s", mnt, strcmp(line + 3, "/") ? line + 3 : "");
	CHECK_EQ_INT(stat(full, &st), 0);
	CHECK_EQ_INT(cgroups__new(NULL, &c), 0);
	if (c) {
		p = cgroups__path(c, (uint64_t)st.st_ino, 1);
		CHECK_EQ_STR(p, line + 3);
		/* Found again from the table, and the root is "/". */
		p = cgroups__path(c, (uint64_t)st.st_ino, 2);
		CHECK_EQ_STR(p, line + 3);
		CHECK_EQ_INT(stat(mnt, &st), 0);
		CHECK_EQ_STR(cgroups__path(c, (uint64_t)st.st_ino, 3), "/");
		/* An id no cgroup has: unknown, not a crash, and no scan at every ask. */
		CHECK(cgroups__path(c, 0x7fffffffffffULL, 4) == NULL);
		CHECK(cgroups__path(c, 0, 5) == NULL);
		CHECK(cgroups__mem_bytes(c) > strlen(line + 3) && cgroups__mem_bytes(c) < (4u << 20) + (8u << 20));
		cgroups__free(c);
	}
	free(mnt);
	T_DONE();
}
