#include "lunwind.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libunwind.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

/* Exported by libunwind-x86_64 but not declared in its public headers. */
#define dwarf_search_unwind_table UNW_OBJ(dwarf_search_unwind_table)
extern int dwarf_search_unwind_table(unw_addr_space_t as, unw_word_t ip, unw_dyn_info_t *di,
				     unw_proc_info_t *pi, int need_unwind_info, void *arg);

#define MAX_FILE (512ULL << 20)
#define MAX_FILES 256

struct image {
	uint64_t dev, ino;
	bool vdso;
	uint8_t *data; /* NULL: unreadable (remembered, not retried) */
	size_t len;
	uint64_t hdr_vaddr;  /* .eh_frame_hdr (PT_GNU_EH_FRAME); 0: none */
};

/* One executable mapping of the snapshot's process, resolved to its image. */
struct lmap {
	uint64_t start, end, bias;
	struct image *img;
};

struct lunwind {
	unw_addr_space_t as;
	struct image *imgs[MAX_FILES];
	size_t nimgs;
	uint32_t last_pid;
	/* The snapshot being unwound. */
	const uint64_t *regs;
	const uint8_t *stack;
	size_t stack_len;
	struct lmap *maps;
	size_t nmaps;
};

static const Elf64_Phdr *phdrs(const struct image *im, size_t *n)
{
	const Elf64_Ehdr *eh = (const void *)im->data;

	if (im->len < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phoff > im->len ||
	    (im->len - eh->e_phoff) / sizeof(Elf64_Phdr) < eh->e_phnum)
		return NULL;
	*n = eh->e_phnum;
	return (const void *)(im->data + eh->e_phoff);
}

/* Reads len bytes at ELF virtual address va from the file image, through its PT_LOAD segments. */
static bool image_read(const struct image *im, uint64_t va, void *out, size_t len)
{
	const Elf64_Phdr *ph;
	size_t n;

	if (!im->data || !(ph = phdrs(im, &n)))
		return false;
	for (size_t i = 0; i < n; i++) {
		uint64_t off;

		if (ph[i].p_type != PT_LOAD || va < ph[i].p_vaddr || va - ph[i].p_vaddr >= ph[i].p_filesz ||
		    ph[i].p_filesz - (va - ph[i].p_vaddr) < len)
			continue;
		off = ph[i].p_offset + (va - ph[i].p_vaddr);
		if (off > im->len || im->len - off < len)
			return false;
		memcpy(out, im->data + off, len);
		return true;
	}
	return false;
}

static int file_to_vaddr(const struct image *im, uint64_t off, uint64_t *va)
{
	const Elf64_Phdr *ph;
	size_t n;

	if (!im->data || !(ph = phdrs(im, &n)))
		return -ENOEXEC;
	for (size_t i = 0; i < n; i++)
		if (ph[i].p_type == PT_LOAD && off >= (ph[i].p_offset & ~0xfffULL) &&
		    off < ph[i].p_offset + ph[i].p_filesz) {
			*va = off - ph[i].p_offset + ph[i].p_vaddr;
			return 0;
		}
	return -ENOENT;
}

static void image_index(struct image *im)
{
	const Elf64_Phdr *ph;
	size_t n;

	if (!im->data || !(ph = phdrs(im, &n)))
		return;
	for (size_t i = 0; i < n; i++)
		if (ph[i].p_type == PT_GNU_EH_FRAME)
			im->hdr_vaddr = ph[i].p_vaddr;
}

static struct image *image_get(struct lunwind *l, uint32_t pid, const struct procmap *m)
{
	bool vdso = m->flags & PROCMAP_VDSO;
	struct image *im;
	char path[64];
	struct stat st;
	int fd;

	for (size_t i = 0; i < l->nimgs; i++)
		if (vdso ? l->imgs[i]->vdso : (l->imgs[i]->dev == m->dev && l->imgs[i]->ino == m->inode))
			return l->imgs[i];
	if (l->nimgs == MAX_FILES || !(im = calloc(1, sizeof(*im))))
		return NULL;
	im->dev = m->dev;
	im->ino = m->inode;
	im->vdso = vdso;
	l->imgs[l->nimgs++] = im;
	if (vdso) {
		/* Ours: the kernel maps the same image into every process. */
		uint64_t base = getauxval(AT_SYSINFO_EHDR);

		if (base && (im->data = malloc(m->end - m->start))) {
			memcpy(im->data, (void *)base, m->end - m->start);
			im->len = m->end - m->start;
		}
	} else {
		snprintf(path, sizeof(path), "/proc/%u/map_files/%" PRIx64 "-%" PRIx64, pid, m->start, m->end);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (fd >= 0 && !fstat(fd, &st) && S_ISREG(st.st_mode) && (uint64_t)st.st_size <= MAX_FILE &&
		    (im->data = malloc(st.st_size ? st.st_size : 1))) {
			if (pread(fd, im->data, st.st_size, 0) == st.st_size) {
				im->len = st.st_size;
			} else {
				free(im->data);
				im->data = NULL;
			}
		}
		if (fd >= 0)
			close(fd);
	}
	image_index(im);
	return im;
}

static struct lmap *map_find(struct lunwind *l, uint64_t ip)
{
	for (size_t i = 0; i < l->nmaps; i++)
		if (ip >= l->maps[i].start && ip < l->maps[i].end)
			return l->maps[i].img ? &l->maps[i] : NULL;
	return NULL;
}

static int find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi, int need, void *arg)
{
	struct lunwind *l = arg;
	struct lmap *m = map_find(l, ip);
	uint8_t hdr[12];
	int32_t fde_count;
	unw_dyn_info_t di;

	if (!m || !m->img->hdr_vaddr || !image_read(m->img, m->img->hdr_vaddr, hdr, sizeof(hdr)))
		return -UNW_ENOINFO;
	/* version 1; eh_frame_ptr pcrel|sdata4; fde_count udata4; table datarel|sdata4 */
	if (hdr[0] != 1 || hdr[1] != 0x1b || hdr[2] != 0x03 || hdr[3] != 0x3b)
		return -UNW_ENOINFO;
	memcpy(&fde_count, hdr + 8, 4);
	if (fde_count <= 0)
		return -UNW_ENOINFO;
	memset(&di, 0, sizeof(di));
	di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
	di.start_ip = m->start;
	di.end_ip = m->end;
	di.u.rti.segbase = m->img->hdr_vaddr + m->bias;
	di.u.rti.table_data = di.u.rti.segbase + 12;
	di.u.rti.table_len = (unw_word_t)fde_count * 8 / sizeof(unw_word_t);
	return dwarf_search_unwind_table(as, ip, &di, pi, need, arg);
}

static void put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
	(void)as; (void)arg;
	free(pi->unwind_info);
	pi->unwind_info = NULL;
}

static int get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *dilap, void *arg)
{
	return -UNW_ENOINFO;
}

static int access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *valp, int write, void *arg)
{
	struct lunwind *l = arg;
	uint64_t sp = l->regs[7];

	if (write)
		return -UNW_EINVAL;
	if (addr >= sp && addr - sp < l->stack_len && l->stack_len - (addr - sp) >= sizeof(*valp)) {
		memcpy(valp, l->stack + (addr - sp), sizeof(*valp));
		return 0;
	}
	/* Not the stack: the unwind tables and code of a mapped file. */
	for (size_t i = 0; i < l->nmaps; i++) {
		struct lmap *m = &l->maps[i];

		if (m->img && addr >= m->bias && image_read(m->img, addr - m->bias, valp, sizeof(*valp)))
			return 0;
	}
	return -UNW_EINVAL;
}

static int access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *valp, int write, void *arg)
{
	struct lunwind *l = arg;

	if (write || reg < 0 || reg >= LUNWIND_NREGS)
		return -UNW_EBADREG;
	*valp = l->regs[reg];
	return 0;
}

static int access_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val, int write, void *arg)
{
	return -UNW_EBADREG;
}

static int resume(unw_addr_space_t as, unw_cursor_t *c, void *arg)
{
	return -UNW_EINVAL;
}

static int get_proc_name(unw_addr_space_t as, unw_word_t addr, char *buf, size_t len, unw_word_t *off, void *arg)
{
	return -UNW_EINVAL;
}

static unw_accessors_t accessors = {
	.find_proc_info = find_proc_info,
	.put_unwind_info = put_unwind_info,
	.get_dyn_info_list_addr = get_dyn_info_list_addr,
	.access_mem = access_mem,
	.access_reg = access_reg,
	.access_fpreg = access_fpreg,
	.resume = resume,
	.get_proc_name = get_proc_name,
};

int lunwind__new(struct lunwind **out)
{
	struct lunwind *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	l->as = unw_create_addr_space(&accessors, 0);
	if (!l->as) {
		free(l);
		return -ENOMEM;
	}
	unw_set_caching_policy(l->as, UNW_CACHE_GLOBAL);
	*out = l;
	return 0;
}

void lunwind__free(struct lunwind *l)
{
	if (!l)
		return;
	unw_destroy_addr_space(l->as);
	for (size_t i = 0; i < l->nimgs; i++) {
		free(l->imgs[i]->data);
		free(l->imgs[i]);
	}
	free(l->maps);
	free(l);
}

int lunwind__unwind(struct lunwind *l, uint32_t pid, const struct procmaps *maps,
		    const uint64_t regs[LUNWIND_NREGS], const uint8_t *stack, size_t stack_len,
		    uint64_t *ips, size_t max, size_t *n)
{
	size_t count = procmaps__count(maps);
	unw_cursor_t c;
	int err = 0;

	*n = 0;
	free(l->maps);
	l->maps = calloc(count ? count : 1, sizeof(*l->maps));
	if (!l->maps)
		return -ENOMEM;
	l->nmaps = 0;
	for (size_t i = 0; i < count; i++) {
		const struct procmap *m = procmaps__get(maps, i);
		struct lmap *lm = &l->maps[l->nmaps++];
		uint64_t va;

		lm->start = m->start;
		lm->end = m->end;
		if (!(m->flags & PROCMAP_VDSO) && ((m->flags & (PROCMAP_ANON | PROCMAP_SPECIAL)) || !m->inode))
			continue;
		lm->img = image_get(l, pid, m);
		if (lm->img && !file_to_vaddr(lm->img, (m->flags & PROCMAP_VDSO) ? 0 : m->offset, &va))
			lm->bias = m->start - va;
		else
			lm->img = NULL;
	}
	/* The cache is keyed by address: another process's addresses mean other code. */
	if (pid != l->last_pid)
		unw_flush_cache(l->as, 0, 0);
	l->last_pid = pid;
	l->regs = regs;
	l->stack = stack;
	l->stack_len = stack_len;

	if (unw_init_remote(&c, l->as, l) < 0)
		return -EINVAL;
	do {
		unw_word_t ip;

		if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0 || ip == 0)
			break;
		ips[(*n)++] = ip;
	} while (*n < max && unw_step(&c) > 0);
	return err;
}
