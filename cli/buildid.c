/*
 * Build-ids for pprof mappings, read when exporting: the store keeps file
 * names only. A build-id is given only when the file on disk is, as far as
 * we can tell, the one that ran: a file whose inode changed after the
 * window started (ctime, which package managers cannot back-date) may be a
 * newer build, and a wrong build-id is worse than none. The running
 * kernel's notes count only when its release is the profile's.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "buildid.h"

#define NOTES_MAX 65536

/* The GNU build-id note in a buffer of ELF notes aligned to align bytes. */
static int find_note(const uint8_t *b, size_t len, size_t align, char *hex, size_t hexlen)
{
	size_t off = 0;

	while (len - off >= sizeof(Elf64_Nhdr)) {
		Elf64_Nhdr nh;
		size_t name_off, desc_off, next;

		memcpy(&nh, b + off, sizeof(nh));
		name_off = off + sizeof(nh);
		desc_off = name_off + ((nh.n_namesz + align - 1) & ~(align - 1));
		next = desc_off + ((nh.n_descsz + align - 1) & ~(align - 1));
		if (nh.n_namesz > len || nh.n_descsz > len || desc_off > len || next > len ||
		    desc_off + nh.n_descsz > len)
			return -EINVAL;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    !memcmp(b + name_off, "GNU", 4) && nh.n_descsz > 0) {
			if (nh.n_descsz * 2 + 1 > hexlen)
				return -ENOSPC;
			for (size_t i = 0; i < nh.n_descsz; i++) {
				static const char dig[] = "0123456789abcdef";

				hex[2 * i] = dig[b[desc_off + i] >> 4];
				hex[2 * i + 1] = dig[b[desc_off + i] & 15];
			}
			hex[2 * nh.n_descsz] = 0;
			return 0;
		}
		if (next <= off)
			return -EINVAL;
		off = next;
	}
	return -ENOENT;
}

static int read_notes_file(const char *path, char *hex, size_t hexlen)
{
	uint8_t *b = malloc(NOTES_MAX);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), err;
	ssize_t n;

	if (!b || fd < 0) {
		err = !b ? -ENOMEM : -errno;
		goto out;
	}
	n = read(fd, b, NOTES_MAX);
	err = n < 0 ? -errno : find_note(b, n, 4, hex, hexlen);
out:
	if (fd >= 0)
		close(fd);
	free(b);
	return err;
}

static int pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t n = pread(fd, buf, len, off);

	return n == (ssize_t)len ? 0 : n < 0 ? -errno : -EINVAL;
}

/* Walks the PT_NOTE segments of a 64- or 32-bit little-endian ELF file. */
static int read_elf_build_id(int fd, char *hex, size_t hexlen)
{
	unsigned char ident[EI_NIDENT];
	uint64_t phoff;
	unsigned phnum, phentsize;
	uint8_t *notes = NULL;
	int err, is64;

	err = pread_full(fd, ident, sizeof(ident), 0);
	if (err)
		return err;
	if (memcmp(ident, ELFMAG, SELFMAG) || ident[EI_DATA] != ELFDATA2LSB ||
	    (ident[EI_CLASS] != ELFCLASS64 && ident[EI_CLASS] != ELFCLASS32))
		return -ENOEXEC;
	is64 = ident[EI_CLASS] == ELFCLASS64;
	if (is64) {
		Elf64_Ehdr eh;

		err = pread_full(fd, &eh, sizeof(eh), 0);
		phoff = eh.e_phoff, phnum = eh.e_phnum, phentsize = eh.e_phentsize;
		if (!err && phentsize != sizeof(Elf64_Phdr))
			err = -ENOEXEC;
	} else {
		Elf32_Ehdr eh;

		err = pread_full(fd, &eh, sizeof(eh), 0);
		phoff = eh.e_phoff, phnum = eh.e_phnum, phentsize = eh.e_phentsize;
		if (!err && phentsize != sizeof(Elf32_Phdr))
			err = -ENOEXEC;
	}
	if (err)
		return err;
	err = -ENOENT;
	for (unsigned i = 0; i < phnum && i < 128; i++) {
		uint64_t off, size, align;
		uint32_t type;

		if (is64) {
			Elf64_Phdr ph;

			if (pread_full(fd, &ph, sizeof(ph), phoff + (uint64_t)i * phentsize))
				return -EINVAL;
			type = ph.p_type, off = ph.p_offset, size = ph.p_filesz, align = ph.p_align;
		} else {
			Elf32_Phdr ph;

			if (pread_full(fd, &ph, sizeof(ph), phoff + (uint64_t)i * phentsize))
				return -EINVAL;
			type = ph.p_type, off = ph.p_offset, size = ph.p_filesz, align = ph.p_align;
		}
		if (type != PT_NOTE || size == 0 || size > NOTES_MAX)
			continue;
		notes = realloc(notes, size);
		if (!notes)
			return -ENOMEM;
		if (pread_full(fd, notes, size, off))
			continue;
		err = find_note(notes, size, align == 8 ? 8 : 4, hex, hexlen);
		if (!err)
			break;
	}
	free(notes);
	return err;
}

int buildid__lookup(const char *file, int kernel, char *hex, size_t len, void *arg)
{
	const struct buildid_ctx *c = arg;
	struct stat st;
	int fd, err;

	if (kernel) {
		struct utsname u;
		size_t n = strlen(file);
		char path[256];

		if (uname(&u) || !c->kernel_release || strcmp(u.release, c->kernel_release))
			return -ESTALE;
		if (!strcmp(file, "[kernel.kallsyms]"))
			return read_notes_file("/sys/kernel/notes", hex, len);
		if (n < 3 || file[0] != '[' || file[n - 1] != ']' || memchr(file, '/', n) ||
		    file[1] == '.')
			return -EINVAL;
		snprintf(path, sizeof(path), "/sys/module/%.*s/notes/.note.gnu.build-id",
			 (int)(n - 2), file + 1);
		return read_notes_file(path, hex, len);
	}
	if (file[0] != '/')
		return -EINVAL; /* [vdso], anonymous and JIT regions */
	fd = open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		err = -EINVAL;
	else if ((int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec > c->not_after_ns)
		err = -ESTALE;
	else
		err = read_elf_build_id(fd, hex, len);
	close(fd);
	return err;
}
