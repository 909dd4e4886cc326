/* libFuzzer target: the ELF symbol reader (and, for inputs starting with '_', the demangler). */
#include "demangle.h"
#include "elfsym.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elfsym *e = NULL;

	if (size > 0 && data[0] == '_') {
		char *sym = malloc(size + 1), out[512];

		if (!sym)
			return 0;
		memcpy(sym, data, size);
		sym[size] = 0;
		demangle(sym, out, sizeof(out));
		free(sym);
		return 0;
	}
	if (elfsym__open_mem(data, size, &e) == 0) {
		const uint8_t *id;
		const char *name;
		uint32_t crc;
		uint64_t v, start;

		elfsym__build_id(e, &id);
		elfsym__debuglink(e, &crc);
		for (uint64_t off = 0; off < 0x10000; off += 0x333) {
			if (elfsym__file_to_vaddr(e, off, &v) == 0 && elfsym__lookup(e, v, &name, &start) == 0)
				(void)strlen(name);
			if (elfsym__lookup(e, off, &name, &start) == 0)
				(void)strlen(name);
		}
		elfsym__free(e);
	}
	return 0;
}
