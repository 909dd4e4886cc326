/*
 * libFuzzer target for everything that reads stored bytes: the payload
 * decoder, the segment reader (list and read) and the writer's start-up
 * recovery, and summary files (the input both as a segment and as its
 * summary). The first input byte picks the path, the rest is the input.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Ilib \
 *     tests/fuzz/fuzz_segment.c lib/store.c lib/codec.c lib/crc32c.c lib/profile.c \
 *     -lzstd -o build/fuzz_segment
 *   build/fuzz_segment -max_total_time=60 build/fuzz-corpus/segment
 *
 * A seed corpus comes from any state directory: prefix each segment file
 * with a byte 1 (sealed) or 2 (open).
 */
#include "codec.h"
#include "profile.h"
#include "store.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64];
static struct codec *codec;
static struct profile *prof;

static void quiet(void *arg, const char *msg)
{
}

static int on_info(const struct store_window_info *w, void *arg)
{
	return 0;
}

static int on_window(const struct store_window_info *w, const struct profile *p, void *arg)
{
	/* Touch everything the decoder produced. */
	size_t n = profile__nsamples(p);
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i++) {
		const struct pf_sample *s = profile__sample(p, i);
		uint32_t k;
		const uint32_t *f = profile__stack(p, s->stack, &k);
		for (uint32_t j = 0; j < k; j++)
			sum += strlen(profile__str(p, profile__frame(p, f[j])->name));
		sum += strlen(profile__str(p, s->comm));
	}
	*(uint64_t *)arg += sum;
	return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	snprintf(dir, sizeof(dir), "/tmp/profd-fuzz.XXXXXX");
	if (!mkdtemp(dir))
		abort();
	if (codec__new(&codec) || profile__new(&prof))
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[128];
	struct store *s;
	uint64_t sink = 0;
	int fd;

	if (size < 1)
		return 0;
	int mode = data[0] % 4;
	data++;
	size--;
	if (mode == 0) {
		codec__decode(codec, data, size, prof);
		return 0;
	}
	/* Sealed name: read only. Open name: the writer recovers (cuts, seals) first. */
	if (mode == 3) {
		snprintf(path, sizeof(path), "%s/sum-1764000000000000000-1764000100000000000.pfd", dir);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0 || write(fd, data, size) != (ssize_t)size)
			abort();
		close(fd);
	}
	if (mode == 1 || mode == 3)
		snprintf(path, sizeof(path), "%s/seg-1764000000000000000-1764000100000000000.pfd", dir);
	else
		snprintf(path, sizeof(path), "%s/seg-1764000000000000000.pfd", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size)
		abort();
	close(fd);

	struct store_opts o = { .dir = dir, .writer = mode == 2, .warn = quiet };
	if (!store__open(&o, &s)) {
		store__list(s, INT64_MIN, INT64_MAX, on_info, NULL);
		store__read(s, INT64_MIN, INT64_MAX, on_window, &sink);
		store__read(s, 1764000050000000000ll, 1764000060000000000ll, on_window, &sink);
		store__read_flags(s, INT64_MIN, INT64_MAX, STORE_READ_SUMMARIES, on_window, &sink);
		store__read_flags(s, 1764000050000000000ll, 1764000100000000000ll, STORE_READ_SUMMARIES, on_window,
				  &sink);
		store__close(s);
	}
	/* Leave no segment for the next input, whatever recovery renamed. */
	DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (!strncmp(de->d_name, "seg-", 4) || !strncmp(de->d_name, "sum-", 4))
			unlinkat(dirfd(d), de->d_name, 0);
	if (d)
		closedir(d);
	return 0;
}
