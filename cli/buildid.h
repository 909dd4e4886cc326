/* Build-ids of the files a profile names, for pprof mappings (see buildid.c). */
#ifndef PROFCTL_BUILDID_H
#define PROFCTL_BUILDID_H

#include <stddef.h>
#include <stdint.h>

struct buildid_ctx {
	int64_t not_after_ns;       /* files changed after this may not be what ran */
	const char *kernel_release; /* the profile's; the running kernel must match */
};

/* A struct pprof_opts build_id callback; arg is a struct buildid_ctx. */
int buildid__lookup(const char *file, int kernel, char *hex, size_t len, void *arg);

#endif
