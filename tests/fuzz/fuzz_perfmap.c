/* libFuzzer target: the text parsers fed by other users' files and /proc (perf maps, maps, kallsyms). */
#include "kallsyms.h"
#include "perfmap.h"
#include "procmaps.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data, *name, *mod;
	struct perfmap *pm = NULL;
	struct procmaps *m = NULL;
	struct kallsyms *k = NULL;
	size_t used;
	uint64_t start;

	if (perfmap__new(&pm) == 0) {
		perfmap__parse(pm, buf, size, &used);
		for (uint64_t a = 0; a < 0x10000; a += 0x101)
			if (perfmap__lookup(pm, a, &name, &start) == 0)
				(void)strlen(name);
		perfmap__free(pm);
	}
	if (procmaps__parse(buf, size, &m) == 0) {
		for (size_t i = 0; i < procmaps__count(m); i++) {
			const struct procmap *p = procmaps__get(m, i);

			if (procmaps__find(m, p->start) != p && procmaps__find(m, p->start)->start != p->start)
				__builtin_trap();
		}
		procmaps__free(m);
	}
	if (kallsyms__parse(buf, size, &k) == 0) {
		for (uint64_t a = 0; a < 0x10000; a += 0x101)
			if (kallsyms__lookup(k, a, &name, &mod, &start) == 0)
				(void)strlen(name);
		kallsyms__free(k);
	}
	return 0;
}
