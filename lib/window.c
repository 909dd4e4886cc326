#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <linux/types.h>

#include "profd.h"
#include "profile.h"
#include "symbolizer.h"
#include "window.h"

#define FCACHE_SLOTS 16384
/*
 * Two ways per set: every new process of a known program names its frames
 * here (its (pid, address) slots are new), and with one way a quarter of
 * the lookups under an exec loop found their slot taken by another frame
 * of the same window and named the frame again.
 */
#define PCACHE_SETS 4096
#define PCACHE_WAYS 2
#define KERNEL_PID UINT32_MAX /* above any pid_max */
/* A named kernel frame's place: its address in a file id no loaded file gets (they count up). */
#define KERNEL_FILE UINT64_MAX

#define SLOT_ID 1        /* id is the frame's id in the window */
#define SLOT_GLUE_KNOWN 2 /* whether the frame is tracing glue is known: SLOT_GLUE */
#define SLOT_GLUE 4
#define SLOT_KEEP 8      /* a named kernel frame: valid for the whole window, not one drain */
/*
 * Frames waiting for their file's symbols, at most: 32 bytes each. A
 * burst of new processes of a big program waits a second or two.
 */
#define PEND_MAX 65536

/* A slot written before the current drain (or window, SLOT_KEEP) began is empty. */
struct fcache_slot {
	uint64_t ip;
	uint32_t pid; /* KERNEL_PID: a kernel frame */
	uint32_t gen;
	uint32_t id;
	uint8_t is_ret;
	uint8_t flags; /* SLOT_* */
};

/* A user frame by its place in a loaded file: valid for the window (file ids are never reused). */
struct pcache_slot {
	uint64_t file, offset;
	uint32_t gen;
	uint32_t id;
	uint32_t is_ret;
};

/* A frame of the window interned unnamed while its file's symbols are read. */
struct pend {
	uint64_t file, offset;
	uint32_t id;
	uint32_t is_ret;
};

struct window {
	struct profile *p;
	struct pend *pend;
	size_t npend;
	uint8_t *pbits;     /* a bit per frame id: waiting in pend */
	size_t pbits_len;
	struct window_syms syms;
	struct fcache_slot *fcache;
	struct pcache_slot *pcache;
	uint32_t gen;       /* stamps slots; grows at every drain and window */
	uint32_t drain_gen; /* gen when the current drain began */
	uint32_t win_gen;   /* gen when the current window began */
	uint32_t frames[2 * PROFD_MAX_DEPTH];
	struct window_stats st;
};

int window__new(struct profile *p, const struct window_syms *syms, struct window **out)
{
	struct window *w;

	if (!p || !syms->user || !syms->kernel)
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->fcache = calloc(FCACHE_SLOTS, sizeof(*w->fcache));
	w->pcache = calloc(PCACHE_SETS * PCACHE_WAYS, sizeof(*w->pcache));
	if (!w->fcache || !w->pcache) {
		free(w->fcache);
		free(w->pcache);
		free(w);
		return -ENOMEM;
	}
	w->p = p;
	w->syms = *syms;
	w->gen = w->drain_gen = w->win_gen = 1;
	*out = w;
	return 0;
}

void window__free(struct window *w)
{
	if (!w)
		return;
	free(w->fcache);
	free(w->pcache);
	free(w->pend);
	free(w->pbits);
	free(w);
}

static void next_gen(struct window *w)
{
	if (++w->gen == 0) {
		memset(w->fcache, 0, FCACHE_SLOTS * sizeof(*w->fcache));
		memset(w->pcache, 0, PCACHE_SETS * PCACHE_WAYS * sizeof(*w->pcache));
		w->gen = w->win_gen = 1;
	}
	w->drain_gen = w->gen;
}

void window__clear(struct window *w)
{
	next_gen(w);
	w->win_gen = w->gen;
	/* Written without their names: the frame ids mean nothing in the next window. */
	w->st.later_dropped += w->npend;
	w->npend = 0;
	w->st.later_waiting = 0;
	if (w->pbits)
		memset(w->pbits, 0, w->pbits_len);
}

void window__drain(struct window *w)
{
	next_gen(w);
}

static int add_frame(struct window *w, const struct sym *y, uint32_t *id)
{
	struct pf_frame f = { .offset = y->offset };
	int err;

	f.kind = y->kind == SYM_KERNEL ? PF_FRAME_KERNEL :
		 y->kind == SYM_JIT    ? PF_FRAME_JIT :
					 PF_FRAME_USER;
	err = profile__intern_str(w->p, y->name, &f.name);
	if (!err)
		err = profile__intern_str(w->p, y->module, &f.module);
	if (!err)
		err = profile__frame_add(w->p, &f, id);
	return err;
}

static struct fcache_slot *fcache_slot(const struct window *w, uint32_t pid, uint64_t ip, uint32_t is_ret)
{
	uint64_t h = (ip ^ ((uint64_t)pid << 32 | is_ret)) * 0x9e3779b97f4a7c15ULL;

	return &w->fcache[(h >> 40) & (FCACHE_SLOTS - 1)];
}

/*
 * The slot of this frame when it holds it, else NULL. A process may exec
 * between two drains, so its frames are named again at each; the kernel's
 * stay for the window. An unnamed kernel address (a BPF program loaded
 * since kallsyms was read) is asked again at the next drain.
 */
static struct fcache_slot *fcache_find(struct window *w, uint32_t pid, uint64_t ip, uint32_t is_ret)
{
	struct fcache_slot *c = fcache_slot(w, pid, ip, is_ret);

	if (c->ip != ip || c->pid != pid || c->is_ret != is_ret)
		return NULL;
	if (c->gen < ((c->flags & SLOT_KEEP) ? w->win_gen : w->drain_gen) || c->gen > w->gen)
		return NULL;
	return c;
}

static void fcache_put(struct window *w, uint32_t pid, uint64_t ip, uint32_t is_ret, uint8_t flags,
		       uint32_t id)
{
	struct fcache_slot *c = fcache_slot(w, pid, ip, is_ret);

	*c = (struct fcache_slot){ .ip = ip, .pid = pid, .gen = w->gen, .id = id, .is_ret = (uint8_t)is_ret,
				   .flags = flags };
}

static uint8_t keep_flag(uint32_t pid, const struct sym *y)
{
	return pid == KERNEL_PID && y->name ? SLOT_KEEP : 0;
}

static bool pcache_live(const struct window *w, const struct pcache_slot *c)
{
	return c->gen >= w->win_gen && c->gen <= w->gen;
}

/*
 * The slot holding this place in the window, else NULL with *put set to
 * the way to fill: an empty or stale one, else the one written first.
 */
static struct pcache_slot *pcache_set(const struct window *w, uint64_t file, uint64_t offset, uint32_t is_ret)
{
	uint64_t h = (file * 0xff51afd7ed558ccdULL ^ offset ^ is_ret) * 0x9e3779b97f4a7c15ULL;

	return &w->pcache[((h >> 40) & (PCACHE_SETS - 1)) * PCACHE_WAYS];
}

static struct pcache_slot *pcache_find(struct window *w, uint64_t file, uint64_t offset,
				       uint32_t is_ret, struct pcache_slot **put)
{
	struct pcache_slot *set = pcache_set(w, file, offset, is_ret);

	*put = NULL;
	for (int k = 0; k < PCACHE_WAYS; k++) {
		struct pcache_slot *c = &set[k];

		if (!pcache_live(w, c)) {
			if (!*put || pcache_live(w, *put))
				*put = c;
			continue;
		}
		if (c->file == file && c->offset == offset && c->is_ret == is_ret)
			return c;
		if (!*put || (pcache_live(w, *put) && c->gen < (*put)->gen))
			*put = c;
	}
	return NULL;
}

/* The frame id was interned unnamed: it waits for its file's symbols (once). */
static void pend_add(struct window *w, uint32_t id, const struct sym *y, uint32_t is_ret)
{
	size_t byte = id / 8;

	if (byte >= w->pbits_len) {
		size_t len = (byte + 1) * 2;
		uint8_t *nb = realloc(w->pbits, len);

		if (!nb) {
			w->st.later_dropped++;
			return;
		}
		memset(nb + w->pbits_len, 0, len - w->pbits_len);
		w->pbits = nb;
		w->pbits_len = len;
	}
	if (w->pbits[byte] & (1u << (id % 8)))
		return;
	if (!w->pend && !(w->pend = malloc(PEND_MAX * sizeof(*w->pend)))) {
		w->st.later_dropped++;
		return;
	}
	if (w->npend >= PEND_MAX) {
		w->st.later_dropped++;
		return;
	}
	w->pbits[byte] |= (uint8_t)(1u << (id % 8));
	w->pend[w->npend++] = (struct pend){ y->later, y->offset, id, is_ret };
	w->st.later_waiting = w->npend;
}

size_t window__settle(struct window *w)
{
	size_t k = 0;

	for (size_t i = 0; i < w->npend; i++) {
		struct pend *pe = &w->pend[i];
		const char *name;
		uint32_t sid;
		int r = w->syms.later(w->syms.arg, pe->file, pe->offset, (int)pe->is_ret, &name);

		if (r == -EAGAIN) {
			w->pend[k++] = *pe;
			continue;
		}
		if (!r && !profile__intern_str(w->p, name, &sid) && !profile__frame_rename(w->p, pe->id, sid))
			w->st.later_named++;
		else
			w->st.later_unnamed++;
		w->pbits[pe->id / 8] &= (uint8_t)~(1u << (pe->id % 8));
	}
	w->npend = k;
	w->st.later_waiting = k;
	return k;
}

/* A frame the frame cache did not hold: its place, and the glue flags its slot had. */
struct placed {
	uint64_t file, offset; /* file 0: in no loaded file */
	uint8_t flags;
};

/* 1 and *id when the frame cache holds the frame, else 0 and *pl to go on with. */
static int frame_cached(struct window *w, uint32_t pid, uint64_t ip, uint32_t is_ret, uint32_t *id,
			struct placed *pl)
{
	struct fcache_slot *c = fcache_find(w, pid, ip, is_ret);

	if (c && (c->flags & SLOT_ID)) {
		w->st.frame_hits++;
		*id = c->id;
		return 1;
	}
	*pl = (struct placed){ .flags = c ? c->flags & (SLOT_GLUE_KNOWN | SLOT_GLUE) : 0 };
	/*
	 * Kernel frames too: their (pid, address) slots are taken over by the
	 * frames of new processes, and they are named for the window.
	 */
	if (pid == KERNEL_PID) {
		pl->file = KERNEL_FILE;
		pl->offset = ip;
	} else if (!w->syms.place ||
		   w->syms.place(w->syms.arg, pid, ip, (int)is_ret, &pl->file, &pl->offset)) {
		pl->file = 0;
	}
	return 0;
}

static int frame_placed(struct window *w, uint32_t pid, uint64_t ip, uint32_t is_ret, const struct placed *pl,
			uint32_t *id)
{
	struct pcache_slot *pc, *put = NULL;
	uint64_t file = pl->file, offset = pl->offset;
	uint8_t flags = pl->flags;
	struct sym y;
	int err;

	if (file && (pc = pcache_find(w, file, offset, is_ret, &put))) {
		w->st.frame_hits++;
		w->st.place_hits++;
		*id = pc->id;
		fcache_put(w, pid, ip, is_ret, flags | SLOT_ID | (pid == KERNEL_PID ? SLOT_KEEP : 0),
			   *id);
		return 0;
	}
	w->st.frame_misses++;
	w->st.unplaced += pid != KERNEL_PID && !file;
	err = pid == KERNEL_PID ? w->syms.kernel(w->syms.arg, ip, &y) :
				  w->syms.user(w->syms.arg, pid, ip, (int)is_ret, &y);
	if (!err)
		err = add_frame(w, &y, id);
	if (!err && y.later && w->syms.later)
		pend_add(w, *id, &y, is_ret);
	if (!err)
		fcache_put(w, pid, ip, is_ret, flags | SLOT_ID | keep_flag(pid, &y), *id);
	/* An unnamed kernel address is asked again at the next drain (fcache_find). */
	if (!err && put && (pid != KERNEL_PID || y.name))
		*put = (struct pcache_slot){ file, offset, w->gen, *id, is_ret };
	return err;
}

static int frame_id(struct window *w, uint32_t pid, uint64_t ip, uint32_t is_ret, uint32_t *id)
{
	struct placed pl;

	if (frame_cached(w, pid, ip, is_ret, id, &pl))
		return 0;
	return frame_placed(w, pid, ip, is_ret, &pl, id);
}

/*
 * A user stack's frames into w->frames from *n on, root first. The place
 * cache's sets, misses to memory like the frame cache's slots, are all
 * asked for before the first is read.
 */
static int user_frames(struct window *w, uint32_t pid, const __u64 *ips, uint32_t nips, uint32_t *n)
{
	struct placed pl[PROFD_MAX_DEPTH];
	uint32_t at[PROFD_MAX_DEPTH], np = 0;
	int err;

	for (uint32_t i = nips; i-- > 0;) {
		uint32_t k = (*n)++;

		if (frame_cached(w, pid, ips[i], i > 0, &w->frames[k], &pl[np]))
			continue;
		if (pl[np].file)
			__builtin_prefetch(pcache_set(w, pl[np].file, pl[np].offset, i > 0));
		at[np++] = i;
	}
	for (uint32_t j = 0; j < np; j++) {
		uint32_t i = at[j];
		/* Named since by an earlier frame of this stack (a recursion), as one pass would find it. */
		struct fcache_slot *c = fcache_find(w, pid, ips[i], i > 0);

		if (c && (c->flags & SLOT_ID)) {
			w->st.frame_hits++;
			w->frames[*n - 1 - i] = c->id;
			continue;
		}
		err = frame_placed(w, pid, ips[i], i > 0, &pl[j], &w->frames[*n - 1 - i]);
		if (err)
			return err;
	}
	return 0;
}

int window__frame(struct window *w, uint32_t pid, uint64_t ip, int is_ret, uint32_t *id)
{
	return frame_id(w, pid, ip, is_ret != 0, id);
}

/*
 * The frame cache is far bigger than the CPU's caches and a drain comes
 * after a second of other programs: nearly every slot a stack looks at is
 * a miss to memory. Asked for all at once, they overlap.
 */
void window__prefetch(const struct window *w, uint32_t pid, const __u64 *ips, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		__builtin_prefetch(fcache_slot(w, pid, ips[i], i > 0));
}

/*
 * A sched_switch stack starts in the tracing glue that ran the BPF program
 * (bpf_prog_*, bpf_trace_run*, __traceiter_*), not where the thread waited:
 * how many leaf frames to leave out. Which glue frames appear depends on
 * the kernel, so they are matched by name.
 */
static bool is_glue(struct window *w, uint64_t ip)
{
	struct fcache_slot *c = fcache_find(w, KERNEL_PID, ip, 0);
	uint32_t id;
	bool glue;
	struct sym y;

	if (c && (c->flags & SLOT_GLUE_KNOWN))
		return c->flags & SLOT_GLUE;
	if (w->syms.kernel(w->syms.arg, ip, &y))
		return false;
	glue = y.name && (!strncmp(y.name, "bpf_", 4) || !strncmp(y.name, "__bpf_", 6) ||
			  !strncmp(y.name, "__traceiter_", 12));
	/*
	 * Named once per window: every off-CPU stack starts with the same few.
	 * The first frame past the glue is the stack's leaf: interned now.
	 */
	if (glue)
		fcache_put(w, KERNEL_PID, ip, 0, SLOT_GLUE_KNOWN | SLOT_GLUE | keep_flag(KERNEL_PID, &y), 0);
	else if (!add_frame(w, &y, &id))
		fcache_put(w, KERNEL_PID, ip, 0, SLOT_GLUE_KNOWN | SLOT_ID | keep_flag(KERNEL_PID, &y), id);
	return glue;
}

static uint32_t glue_frames(struct window *w, const __u64 *kstack, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (!is_glue(w, kstack[i]))
			break;
	return i;
}

int window__add(struct window *w, const struct window_sample *s)
{
	struct pf_sample ps = { .pid = s->pid, .tid = s->tid, .kind = s->kind, .value = s->value };
	uint32_t nuser = s->user_ids ? s->nuser_ids : s->nustack, n = 0, kskip = 0;
	int err;

	if (nuser > PROFD_MAX_DEPTH || s->nkstack > PROFD_MAX_DEPTH)
		return -E2BIG;
	if (!s->user_ids)
		window__prefetch(w, s->pid, s->ustack, s->nustack);
	window__prefetch(w, KERNEL_PID, s->kstack, s->nkstack);
	if (s->kind != PF_KIND_CPU) {
		kskip = glue_frames(w, s->kstack, s->nkstack);
		w->st.glue_frames += kskip;
	}
	if (s->user_ids) {
		memcpy(w->frames, s->user_ids, nuser * sizeof(*w->frames));
		n = nuser;
	} else {
		err = user_frames(w, s->pid, s->ustack, s->nustack, &n);
		if (err)
			return err;
	}
	for (uint32_t i = s->nkstack; i-- > kskip;) {
		err = frame_id(w, KERNEL_PID, s->kstack[i], 0, &w->frames[n++]);
		if (err)
			return err;
	}
	err = profile__stack_add(w->p, w->frames, n, &ps.stack);
	if (!err)
		err = profile__intern(w->p, s->comm, s->comm_len, &ps.comm);
	if (!err)
		err = profile__intern(w->p, s->thread, s->thread_len, &ps.thread);
	if (!err)
		err = profile__intern_str(w->p, s->cgroup ? s->cgroup : "", &ps.cgroup);
	if (!err)
		err = profile__add(w->p, &ps);
	return err;
}

void window__stats(const struct window *w, struct window_stats *st)
{
	*st = w->st;
}
