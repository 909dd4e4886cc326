/*
 * window: stacks into a window through a fake symbolizer that names each
 * address after itself and counts its calls: frame order, the frame cache,
 * off-CPU glue frames, frames given as ids, errors, frames shared by place,
 * frames named once their file's symbols are in.
 */
#include "profile.h"
#include "symbolizer.h"
#include "window.h"
#include "profd.h"
#include "t.h"

#include <errno.h>
#include <stdio.h>

/* The fake: user frames are "u<pid>_<ip>" (+ "r" when not the leaf) in "/bin/p<pid>". */
struct fake {
	unsigned user_calls, kernel_calls;
	uint64_t fail_ip;       /* naming this address fails with -ENOMEM */
	uint64_t unnamed_ip;    /* the kernel has no name for this address */
	char name[64], module[64];
	const char *glue[8];    /* kernel names by address 0xf0 + i */
};

static int fake_user(void *arg, uint32_t pid, uint64_t ip, int is_ret, struct sym *out)
{
	struct fake *f = arg;

	f->user_calls++;
	if (ip == f->fail_ip)
		return -ENOMEM;
	snprintf(f->name, sizeof(f->name), "u%u_%llx%s", pid, (unsigned long long)ip,
		 is_ret ? "r" : "");
	snprintf(f->module, sizeof(f->module), "/bin/p%u", pid);
	*out = (struct sym){ .name = f->name, .module = f->module, .offset = ip - 0x1000,
			     .kind = ip >= 0x9000 ? SYM_JIT : SYM_USER };
	return 0;
}

static int fake_kernel(void *arg, uint64_t ip, struct sym *out)
{
	struct fake *f = arg;

	f->kernel_calls++;
	if (ip == f->fail_ip)
		return -ENOMEM;
	if (ip >= 0xf0 && ip < 0xf8 && f->glue[ip - 0xf0])
		snprintf(f->name, sizeof(f->name), "%s", f->glue[ip - 0xf0]);
	else
		snprintf(f->name, sizeof(f->name), "k_%llx", (unsigned long long)ip);
	*out = (struct sym){ .name = f->name, .module = "", .offset = ip, .kind = SYM_KERNEL };
	if (ip == f->unnamed_ip)
		out->name = NULL;
	return 0;
}

/* The names of sample i's stack, root first, joined by ';'. */
static const char *stack_of(const struct profile *p, size_t i)
{
	static char buf[1024];
	const struct pf_sample *s = profile__sample(p, i);
	const uint32_t *fr;
	uint32_t n = 0;
	size_t len = 0;

	buf[0] = 0;
	if (!s)
		return "(none)";
	fr = profile__stack(p, s->stack, &n);
	for (uint32_t k = 0; k < n && len < sizeof(buf) - 1; k++)
		len += snprintf(buf + len, sizeof(buf) - len, "%s%s", k ? ";" : "",
				profile__str(p, profile__frame(p, fr[k])->name));
	return buf;
}

static struct window *setup(struct profile **p, struct fake *f)
{
	struct window_syms syms = { .user = fake_user, .kernel = fake_kernel, .arg = f };
	struct window *w = NULL;

	*p = NULL;
	if (profile__new(p))
		return NULL;
	CHECK_EQ_INT(window__new(*p, &syms, &w), 0);
	return w;
}

static void test_stack(void)
{
	struct fake f = { 0 };
	struct profile *p;
	struct window *w = setup(&p, &f);
	const __u64 us[] = { 0x1010, 0x1020, 0x9030 }, ks[] = { 0xa1, 0xa2 };
	struct window_sample s = { .pid = 7, .tid = 8, .kind = PF_KIND_CPU, .value = 3,
				   .comm = "prog____", .comm_len = 4, .thread = "worker",
				   .thread_len = 6, .cgroup = "/a/b", .ustack = us, .nustack = 3,
				   .kstack = ks, .nkstack = 2 };
	const struct pf_sample *ps;
	const struct pf_frame *fr;
	const uint32_t *ids;
	uint32_t n = 0;

	if (!w)
		return;
	CHECK_EQ_INT(window__add(w, &s), 0);
	CHECK_EQ_INT(profile__nsamples(p), 1);
	/* Root first: the outermost user frame; the leaf alone is not a return address. */
	CHECK_EQ_STR(stack_of(p, 0), "u7_9030r;u7_1020r;u7_1010;k_a2;k_a1");
	ps = profile__sample(p, 0);
	CHECK_EQ_INT(ps->pid, 7);
	CHECK_EQ_INT(ps->tid, 8);
	CHECK_EQ_INT(ps->value, 3);
	CHECK_EQ_INT(ps->kind, PF_KIND_CPU);
	CHECK_EQ_STR(profile__str(p, ps->comm), "prog");
	CHECK_EQ_STR(profile__str(p, ps->thread), "worker");
	CHECK_EQ_STR(profile__str(p, ps->cgroup), "/a/b");
	ids = profile__stack(p, ps->stack, &n);
	CHECK_EQ_INT(n, 5);
	fr = profile__frame(p, ids[0]);
	CHECK_EQ_INT(fr->kind, PF_FRAME_JIT);
	CHECK_EQ_INT(fr->offset, 0x8030);
	CHECK_EQ_STR(profile__str(p, fr->module), "/bin/p7");
	CHECK_EQ_INT(profile__frame(p, ids[2])->kind, PF_FRAME_USER);
	CHECK_EQ_INT(profile__frame(p, ids[4])->kind, PF_FRAME_KERNEL);
	CHECK_EQ_INT(profile__frame(p, ids[4])->offset, 0xa1);

	/* No cgroup, no stacks. */
	s = (struct window_sample){ .pid = 9, .kind = PF_KIND_CPU, .value = 1, .comm = "x",
				    .comm_len = 1 };
	CHECK_EQ_INT(window__add(w, &s), 0);
	CHECK_EQ_STR(stack_of(p, 1), "");
	CHECK_EQ_STR(profile__str(p, profile__sample(p, 1)->cgroup), "");
	window__free(w);
	profile__free(p);
}

static void test_cache(void)
{
	struct fake f = { 0 };
	struct profile *p;
	struct window *w = setup(&p, &f);
	const __u64 a[] = { 0x1010, 0x1020 }, b[] = { 0x1011, 0x1020 }, k[] = { 0xa1 };
	struct window_sample s = { .pid = 7, .kind = PF_KIND_CPU, .value = 1, .comm = "c",
				   .comm_len = 1, .ustack = a, .nustack = 2, .kstack = k,
				   .nkstack = 1 };
	struct window_stats st;
	uint32_t id1 = 0, id2 = 0;

	if (!w)
		return;
	CHECK_EQ_INT(window__add(w, &s), 0);
	CHECK_EQ_INT(f.user_calls, 2);
	CHECK_EQ_INT(f.kernel_calls, 1);
	/* Same outer frame and kernel frame: only the new leaf is named. */
	s.ustack = b;
	CHECK_EQ_INT(window__add(w, &s), 0);
	CHECK_EQ_INT(f.user_calls, 3);
	CHECK_EQ_INT(f.kernel_calls, 1);
	/* Another process: its own frames; the kernel's are shared. */
	s.pid = 8;
	CHECK_EQ_INT(window__add(w, &s), 0);
	CHECK_EQ_INT(f.user_calls, 5);
	CHECK_EQ_INT(f.kernel_calls, 1);
	CHECK_EQ_STR(stack_of(p, 2), "u8_1020r;u8_1011;k_a1");
	/* The same address as leaf and as a return address are two frames. */
	CHECK_EQ_INT(window__frame(w, 8, 0x1011, 1, &id1), 0);
	CHECK_EQ_INT(f.user_calls, 6);
	CHECK_EQ_INT(window__frame(w, 8, 0x1011, 1, &id2), 0);
	CHECK_EQ_INT(f.user_calls, 6);
	CHECK_EQ_INT(id1, id2);
	CHECK_EQ_STR(profile__str(p, profile__frame(p, id1)->name), "u8_1011r");
	window__stats(w, &st);
	CHECK_EQ_INT(st.frame_misses, 7);
	CHECK_EQ_INT(st.frame_hits, 4);
	/* A new drain names the process's frames again (it may have exec'd), not the kernel's. */
	window__drain(w);
	CHECK_EQ_INT(window__add(w, &s), 0);
	CHECK_EQ_INT(f.user_calls, 8);
	CHECK_EQ_INT(f.kernel_calls, 1);
	/* An unnamed kernel address is asked again at the next drain, a named one at the next window. */
	f.unnamed_ip = 0xa2;
	s.kstack = (const __u64[]){ 0xa2 };
	CHECK_EQ_INT(window__add(w, &s), 0);
	CHECK_EQ_INT(window__add(w, &s), 0);
	CHECK_EQ_INT(f.kernel_calls, 2);
	window__drain(w);
	CHECK_EQ_INT(window__add(w, &s), 0);
	CHECK_EQ_INT(f.kernel_calls, 3);
	s.kstack = k;
	window__clear(w);
	CHECK_EQ_INT(window__add(w, &s), 0);
	CHECK_EQ_INT(f.kernel_calls, 4);
	/* A window reset renumbers frames: after clear, ids are those of the new window. */
	profile__reset(p);
	window__clear(w);
	CHECK_EQ_INT(window__add(w, &s), 0);
	CHECK_EQ_INT(profile__nsamples(p), 1);
	CHECK_EQ_STR(stack_of(p, 0), "u8_1020r;u8_1011;k_a1");
	window__free(w);
	profile__free(p);
}

static void test_glue(void)
{
	struct fake f = { .glue = { "bpf_prog_abc_offcpu", "__bpf_trace_sched_switch",
				    "__traceiter_sched_switch", "schedule" } };
	struct profile *p;
	struct window *w = setup(&p, &f);
	/* Leaf first: three glue frames, then schedule and a caller. */
	const __u64 k[] = { 0xf0, 0xf1, 0xf2, 0xf3, 0xa5 }, kg[] = { 0xf0, 0xf1 };
	struct window_sample s = { .pid = 7, .kind = PF_KIND_OFFCPU, .value = 1000, .comm = "c",
				   .comm_len = 1, .kstack = k, .nkstack = 5 };
	struct window_stats st;

	if (!w)
		return;
	CHECK_EQ_INT(window__add(w, &s), 0);
	CHECK_EQ_STR(stack_of(p, 0), "k_a5;schedule");
	CHECK_EQ_INT(f.kernel_calls, 5);
	/* The glue is known by address from then on, across drains. */
	s.kind = PF_KIND_RUNQ;
	window__drain(w);
	CHECK_EQ_INT(window__add(w, &s), 0);
	CHECK_EQ_STR(stack_of(p, 1), "k_a5;schedule");
	CHECK_EQ_INT(f.kernel_calls, 5);
	/* On-CPU stacks keep every frame: a BPF program on the CPU is real work. */
	s.kind = PF_KIND_CPU;
	CHECK_EQ_INT(window__add(w, &s), 0);
	CHECK_EQ_STR(stack_of(p, 2), "k_a5;schedule;__traceiter_sched_switch;"
				     "__bpf_trace_sched_switch;bpf_prog_abc_offcpu");
	/* Those three glue frames are now frames too: named once more each, to be interned. */
	CHECK_EQ_INT(f.kernel_calls, 8);
	/* All glue: the stack is left empty, not an error. */
	s.kind = PF_KIND_OFFCPU;
	s.kstack = kg;
	s.nkstack = 2;
	CHECK_EQ_INT(window__add(w, &s), 0);
	CHECK_EQ_STR(stack_of(p, 3), "");
	window__stats(w, &st);
	CHECK_EQ_INT(st.glue_frames, 8);
	/* A glue frame that cannot be named ends the glue there. */
	f.fail_ip = 0xf1;
	s.kstack = k;
	s.nkstack = 5;
	window__clear(w);
	CHECK_EQ_INT(window__add(w, &s), -ENOMEM);
	window__free(w);
	profile__free(p);
}

static void test_ids_and_errors(void)
{
	struct fake f = { 0 };
	struct profile *p;
	struct window *w = setup(&p, &f);
	const __u64 us[] = { 0x1010, 0x1bad }, ks[] = { 0xa1 }, deep[PROFD_MAX_DEPTH + 1] = { 0 };
	struct window_sample s = { .pid = 7, .kind = PF_KIND_CPU, .value = 1, .comm = "c",
				   .comm_len = 1, .kstack = ks, .nkstack = 1 };
	uint32_t ids[2];

	if (!w)
		return;
	/* User frames named elsewhere (Python) come as ids, root first; kernel frames follow. */
	CHECK_EQ_INT(window__frame(w, 7, 0x2000, 1, &ids[0]), 0);
	CHECK_EQ_INT(window__frame(w, 7, 0x2010, 0, &ids[1]), 0);
	s.user_ids = ids;
	s.nuser_ids = 2;
	s.ustack = us;
	s.nustack = 2;
	CHECK_EQ_INT(window__add(w, &s), 0);
	CHECK_EQ_STR(stack_of(p, 0), "u7_2000r;u7_2010;k_a1");
	CHECK_EQ_INT(f.user_calls, 2);
	/* A frame that cannot be named fails the sample, and nothing is added. */
	s.user_ids = NULL;
	f.fail_ip = 0x1bad;
	CHECK_EQ_INT(window__add(w, &s), -ENOMEM);
	CHECK_EQ_INT(profile__nsamples(p), 1);
	s.ustack = deep;
	s.nustack = PROFD_MAX_DEPTH + 1;
	CHECK_EQ_INT(window__add(w, &s), -E2BIG);
	CHECK_EQ_INT(profile__nsamples(p), 1);
	window__free(w);
	profile__free(p);
}

/* Below 0x5000 every pid maps one file at 0x1000; its frames are named by their place alone. */
static int fake_place(void *arg, uint32_t pid, uint64_t ip, int is_ret, uint64_t *file,
		      uint64_t *offset)
{
	*file = ip < 0x5000 ? 1 : 0;
	*offset = ip - 0x1000;
	return 0;
}

static int fake_shared(void *arg, uint32_t pid, uint64_t ip, int is_ret, struct sym *out)
{
	struct fake *f = arg;

	if (ip >= 0x5000)
		return fake_user(arg, pid, ip, is_ret, out);
	f->user_calls++;
	snprintf(f->name, sizeof(f->name), "f_%llx%s", (unsigned long long)(ip - 0x1000),
		 is_ret ? "r" : "");
	*out = (struct sym){ .name = f->name, .module = "/lib/f.so", .offset = ip - 0x1000,
			     .kind = SYM_USER };
	return 0;
}

static void test_place(void)
{
	struct fake f = { 0 };
	struct window_syms syms = { .user = fake_shared, .kernel = fake_kernel, .arg = &f,
				    .place = fake_place };
	struct profile *p = NULL;
	struct window *w = NULL;
	const __u64 a[] = { 0x1010, 0x1020 }, b[] = { 0x1020, 0x6000 };
	struct window_sample s = { .pid = 7, .kind = PF_KIND_CPU, .value = 1, .comm = "c",
				   .comm_len = 1, .ustack = a, .nustack = 2 };
	struct window_stats st;

	if (profile__new(&p) || window__new(p, &syms, &w)) {
		CHECK(0);
		profile__free(p);
		return;
	}
	CHECK_EQ_INT(window__add(w, &s), 0);
	CHECK_EQ_INT(f.user_calls, 2);
	/* Another process mapping the file: its frames come from the first's, unnamed again. */
	s.pid = 8;
	CHECK_EQ_INT(window__add(w, &s), 0);
	CHECK_EQ_INT(f.user_calls, 2);
	CHECK_EQ_STR(stack_of(p, 1), "f_20r;f_10");
	/* Outside the file (no place): its own; the same offset as the leaf: another frame. */
	s.ustack = b;
	CHECK_EQ_INT(window__add(w, &s), 0);
	CHECK_EQ_INT(f.user_calls, 4);
	CHECK_EQ_STR(stack_of(p, 2), "u8_6000r;f_20");
	/* Places hold across drains, for the window. */
	window__drain(w);
	s.pid = 9;
	s.ustack = a;
	CHECK_EQ_INT(window__add(w, &s), 0);
	CHECK_EQ_INT(f.user_calls, 4);
	window__stats(w, &st);
	CHECK_EQ_INT(st.place_hits, 4);
	CHECK_EQ_INT(st.frame_misses, 4);
	/* A new window numbers frames anew: named again. */
	profile__reset(p);
	window__clear(w);
	CHECK_EQ_INT(window__add(w, &s), 0);
	CHECK_EQ_INT(f.user_calls, 6);
	CHECK_EQ_STR(stack_of(p, 0), "f_20r;f_10");
	window__free(w);
	profile__free(p);
}

/*
 * A window of 2000 places in one file, named for one process: a second
 * process of the same program finds them (a new process of a known program
 * names nothing again). And a kernel frame is named once in the window
 * however many new processes' frames came between.
 */
static void test_place_many(void)
{
	struct fake f = { 0 };
	struct window_syms syms = { .user = fake_shared, .kernel = fake_kernel, .arg = &f,
				    .place = fake_place };
	struct profile *p = NULL;
	struct window *w = NULL;
	__u64 ip[1], k[] = { 0xffffffff81000000ULL };
	struct window_sample s = { .pid = 7, .kind = PF_KIND_CPU, .value = 1, .comm = "c",
				   .comm_len = 1, .ustack = ip, .nustack = 1, .kstack = k, .nkstack = 1 };
	unsigned first;

	if (profile__new(&p) || window__new(p, &syms, &w)) {
		CHECK(0);
		profile__free(p);
		return;
	}
	for (unsigned i = 0; i < 2000; i++) {
		ip[0] = 0x1000 + 8 * i;
		CHECK_EQ_INT(window__add(w, &s), 0);
	}
	first = f.user_calls;
	CHECK_EQ_INT(first, 2000);
	CHECK_EQ_INT(f.kernel_calls, 1);
	s.pid = 8;
	for (unsigned i = 0; i < 2000; i++) {
		ip[0] = 0x1000 + 8 * i;
		CHECK_EQ_INT(window__add(w, &s), 0);
	}
	CHECK(f.user_calls - first <= 40);
	/* 100,000 frames of new processes outside the file, then the kernel frame again. */
	s.nkstack = 0;
	for (unsigned i = 0; i < 100000; i++) {
		s.pid = 100 + i;
		ip[0] = 0x6000 + i % 64;
		CHECK_EQ_INT(window__add(w, &s), 0);
	}
	s.nkstack = 1;
	CHECK_EQ_INT(window__add(w, &s), 0);
	CHECK_EQ_INT(f.kernel_calls, 1);
	window__free(w);
	profile__free(p);
}

/*
 * A fake whose file 0x5000-0x6000 is still being read: its frames come
 * back unnamed with later set, and are named when "the read is in".
 */
struct slow {
	struct fake f;
	int read_in;          /* 1: names come; 0: -EAGAIN */
	unsigned later_calls;
};

static int slow_user(void *arg, uint32_t pid, uint64_t ip, int is_ret, struct sym *out)
{
	struct slow *sl = arg;
	int err = fake_user(&sl->f, pid, ip, is_ret, out);

	if (!err && ip >= 0x5000 && ip < 0x6000 && !sl->read_in) {
		out->name = NULL;
		snprintf(sl->f.module, sizeof(sl->f.module), "/lib/big.so");
		out->later = 42;
	}
	return err;
}

static int slow_later(void *arg, uint64_t file, uint64_t offset, int is_ret, const char **name)
{
	struct slow *sl = arg;
	static char buf[64];

	sl->later_calls++;
	if (file != 42)
		return -EINVAL;
	if (!sl->read_in)
		return -EAGAIN;
	/* No symbol covers 0x5ff0 (offset 0x4ff0). */
	if (offset == 0x4ff0)
		return -ENOENT;
	snprintf(buf, sizeof(buf), "big_%llx%s", (unsigned long long)offset, is_ret ? "r" : "");
	*name = buf;
	return 0;
}

static void test_later(void)
{
	struct slow sl = { 0 };
	struct window_syms syms = { .user = slow_user, .kernel = fake_kernel, .arg = &sl,
				    .later = slow_later };
	const __u64 us[] = { 0x5010, 0x5020, 0x1030 }, us2[] = { 0x5ff0, 0x5020, 0x1030 };
	struct window_sample s = { .pid = 7, .kind = PF_KIND_CPU, .value = 1, .comm = "p",
				   .comm_len = 1, .ustack = us, .nustack = 3 };
	struct window_stats st;
	struct profile *p = NULL;
	struct window *w = NULL;

	CHECK_EQ_INT(profile__new(&p), 0);
	CHECK_EQ_INT(window__new(p, &syms, &w), 0);
	if (!w)
		goto out;
	CHECK_EQ_INT(window__add(w, &s), 0);
	CHECK_EQ_STR(stack_of(p, 0), "u7_1030r;;");
	/* The same frames in the next drain wait once, not twice. */
	window__drain(w);
	CHECK_EQ_INT(window__add(w, &s), 0);
	s.ustack = us2;
	CHECK_EQ_INT(window__add(w, &s), 0);
	window__stats(w, &st);
	CHECK_EQ_INT(st.later_waiting, 3);
	/* Still being read: nothing changes. */
	CHECK_EQ_INT(window__settle(w), 3);
	CHECK_EQ_STR(stack_of(p, 0), "u7_1030r;;");
	sl.read_in = 1;
	CHECK_EQ_INT(window__settle(w), 0);
	/* Named in place: the samples taken before the read was in, offsets as the file's. */
	CHECK_EQ_STR(stack_of(p, 0), "u7_1030r;big_4020r;big_4010");
	CHECK_EQ_STR(stack_of(p, 1), "u7_1030r;big_4020r;");
	window__stats(w, &st);
	CHECK_EQ_INT(st.later_named, 2);
	CHECK_EQ_INT(st.later_unnamed, 1);
	CHECK_EQ_INT(st.later_waiting, 0);
	/* Named frames are named now by user() itself: nothing waits. */
	window__drain(w);
	s.ustack = us;
	CHECK_EQ_INT(window__add(w, &s), 0);
	CHECK_EQ_STR(stack_of(p, 0), "u7_1030r;big_4020r;big_4010");
	CHECK_EQ_INT(window__settle(w), 0);

	/* A window closed while frames wait: they are dropped (counted), not named in the next. */
	sl.read_in = 0;
	profile__reset(p);
	window__clear(w);
	CHECK_EQ_INT(window__add(w, &s), 0);
	CHECK_EQ_INT(window__settle(w), 2);
	profile__reset(p);
	window__clear(w);
	window__stats(w, &st);
	CHECK_EQ_INT(st.later_dropped, 2);
	CHECK_EQ_INT(window__settle(w), 0);
out:
	window__free(w);
	profile__free(p);
}

int main(void)
{
	struct window_syms none = { 0 };
	struct profile *p = NULL;
	struct window *w = NULL;

	CHECK_EQ_INT(profile__new(&p), 0);
	CHECK_EQ_INT(window__new(p, &none, &w), -EINVAL);
	profile__free(p);
	test_stack();
	test_cache();
	test_glue();
	test_ids_and_errors();
	test_place();
	test_place_many();
	test_later();
	T_DONE();
}
