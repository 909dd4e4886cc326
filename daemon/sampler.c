#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "log.h"
#include "options.h"
#include "profd.skel.h"
#include "pyprocs.h"
#include "sampler.h"

struct sampler {
	struct profd_bpf *skel;
	int *pfds;
	struct bpf_link **links;
	int ncpus;
	unsigned nopen;
	const char *event;
	struct sampler_opts o;
	struct bpf_link *offcpu_link;
	struct bpf_link *offcpu_exit_link; /* adds the waits a thread still holds when it exits */
	int offcpu; /* 1: attached, 0: off, -errno: unavailable */
	char offcpu_why[320]; /* why unavailable */
	struct perf_event_attr attr; /* as opened: for re-opening after CPU hotplug */
	uint64_t *enabled_ns;        /* per CPU: time_enabled at the last hotplug check */

	/* Drain buffers, sized for a full generation. */
	struct profd_key *keys;
	uint64_t *vals;
	uint64_t *skeys;
	struct profd_stack *svals;
	uint32_t nstacks, ncounts; /* entries the last drain read */
	uint64_t *sindex; /* open addressing: stack id -> position + 1 in svals */
	uint32_t sindex_cap;
	uint64_t drain_lost; /* entries read from the kernel and dropped by a failed drain */
	int online_fd; /* /sys/devices/system/cpu/online, kept: read at every hotplug check */
};

/*
 * Parses the kernel's list of online CPUs ("0-3,8,10-11") into flags for
 * CPUs below n. The file stays open: a read at offset 0 formats it anew,
 * one system call per check instead of four.
 */
static int online_cpus(struct sampler *s, bool *online, int n)
{
	char buf[4096], *p = buf, *end;
	ssize_t len;

	if (s->online_fd < 0)
		s->online_fd = open("/sys/devices/system/cpu/online", O_RDONLY | O_CLOEXEC);
	if (s->online_fd < 0)
		return -errno;
	len = pread(s->online_fd, buf, sizeof(buf) - 1, 0);
	if (len < 0)
		return -errno;
	buf[len] = 0;
	while (*p && *p != '\n') {
		unsigned long a = strtoul(p, &end, 10), b = a;

		if (end == p)
			return -EINVAL;
		p = end;
		if (*p == '-') {
			b = strtoul(++p, &end, 10);
			if (end == p || b < a)
				return -EINVAL;
			p = end;
		}
		for (unsigned long c = a; c <= b && c < (unsigned long)n; c++)
			online[c] = true;
		if (*p == ',')
			p++;
		else if (*p && *p != '\n')
			return -EINVAL;
	}
	return 0;
}

static int perf_open(struct perf_event_attr *attr, int cpu)
{
	return syscall(SYS_perf_event_open, attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/* Hardware cycles where a PMU exists; virtual machines often have none. */
static int open_events(struct sampler *s, char *err, size_t errlen)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.freq = 1,
		.sample_freq = s->o.frequency,
		/* An event detached by CPU hotplug stops its enabled clock: how refresh_cpus spots it. */
		.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED,
	};
	bool *online = calloc(s->ncpus, sizeof(*online));
	int n = s->ncpus, ret = 0;

	if (!online)
		return -ENOMEM;
	ret = online_cpus(s, online, n);
	if (ret) {
		free(online);
		snprintf(err, errlen, "cannot read /sys/devices/system/cpu/online: %s", strerror(-ret));
		return ret;
	}
	for (int type = 0; type < 2 && !s->event; type++) {
		attr.type = type == 0 ? PERF_TYPE_HARDWARE : PERF_TYPE_SOFTWARE;
		attr.config = type == 0 ? PERF_COUNT_HW_CPU_CYCLES : PERF_COUNT_SW_CPU_CLOCK;
		for (int cpu = 0; cpu < s->ncpus; cpu++)
			s->pfds[cpu] = -1;
		s->nopen = 0;
		for (int cpu = 0; cpu < s->ncpus && cpu < n; cpu++) {
			if (!online[cpu])
				continue;
			s->pfds[cpu] = perf_open(&attr, cpu);
			if (s->pfds[cpu] < 0) {
				ret = -errno;
				break;
			}
			s->nopen++;
		}
		if (s->nopen && ret == 0) {
			s->event = type == 0 ? "cycles" : "cpu-clock";
			s->attr = attr;
			break;
		}
		for (int cpu = 0; cpu < s->ncpus; cpu++)
			if (s->pfds[cpu] >= 0)
				close(s->pfds[cpu]);
		if (ret == -EACCES || ret == -EPERM)
			break;
		if (type == 0)
			ret = 0;
	}
	free(online);
	if (!s->event) {
		if (ret == -EACCES || ret == -EPERM)
			snprintf(err, errlen,
				 "perf_event_open not permitted (%s): run as root or with CAP_PERFMON, "
				 "and check kernel.perf_event_paranoid", strerror(-ret));
		else
			snprintf(err, errlen, "perf_event_open failed for cycles and cpu-clock: %s",
				 strerror(ret ? -ret : ENODEV));
		return ret ? ret : -ENODEV;
	}
	return 0;
}

static int alloc_buffers(struct sampler *s)
{
	uint32_t c = s->o.counts_entries, k = s->o.stacks_entries;

	s->keys = calloc(c, sizeof(*s->keys));
	s->vals = calloc(c, sizeof(*s->vals));
	s->skeys = calloc(k, sizeof(*s->skeys));
	s->svals = calloc(k, sizeof(*s->svals));
	s->sindex_cap = 1;
	while (s->sindex_cap < k * 2)
		s->sindex_cap <<= 1;
	s->sindex = calloc(s->sindex_cap, sizeof(*s->sindex));
	if (!s->keys || !s->vals || !s->skeys || !s->svals || !s->sindex)
		return -ENOMEM;
	return 0;
}

/*
 * The kernel's verifier refused a program: its name and the log line that
 * says why, kept from libbpf's message for the one-line error (a refusal
 * comes back as EACCES or EINVAL like a missing privilege does, but only a
 * program the verifier read has a log).
 */
static struct {
	char prog[64];
	char why[200];
} refused;

/* Lines of a verifier log shown at debug level: its end says why. */
#define VERIFIER_LOG_TAIL 40

/* Keeps the program's name and the last line of its log that is not the closing statistics. */
static void note_refusal(const char *msg)
{
	const char *p = strstr(msg, "prog '"), *log = strstr(msg, "-- BEGIN PROG LOAD LOG --");
	const char *end = strstr(msg, "-- END PROG LOAD LOG --"), *q, *ls, *le;
	size_t n;

	if (!p || !log || !end || end < log)
		return;
	p += strlen("prog '");
	q = strchr(p, '\'');
	n = q && q < log ? (size_t)(q - p) : 0;
	snprintf(refused.prog, sizeof(refused.prog), "%.*s", (int)n, p);
	refused.why[0] = 0;
	/* Backwards from the end, bounded by the log's start. */
	for (le = end; le > log && !refused.why[0]; le = ls) {
		for (ls = le; ls > log && ls[-1] != '\n'; ls--)
			;
		n = (size_t)(le - ls);
		while (n && (ls[n - 1] == '\n' || ls[n - 1] == ' '))
			n--;
		if (n && strncmp(ls, "processed ", 10) && strncmp(ls, "verification time", 17) &&
		    strncmp(ls, "stack depth", 11) && strncmp(ls, "-- BEGIN", 8))
			snprintf(refused.why, sizeof(refused.why), "%.*s", (int)n, ls);
		if (ls > log)
			ls--; /* past the newline */
	}
}

static void refusal_msg(char *buf, size_t len, int err)
{
	snprintf(buf, len, "the kernel's BPF verifier refused program '%s' (%s): %s; "
		 "--log-level debug shows its log", refused.prog, strerror(-err),
		 refused.why[0] ? refused.why : "no reason logged");
}

/* libbpf's own messages are details behind our one-line errors: debug level only. */
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char *msg = NULL, *line, *next;
	unsigned nl = 0, skip = 0;

	if (vasprintf(&msg, fmt, ap) < 0)
		return 0;
	if (level != LIBBPF_DEBUG && strstr(msg, "-- BEGIN PROG LOAD LOG --"))
		note_refusal(msg);
	if (level == LIBBPF_DEBUG) {
		free(msg);
		return 0;
	}
	/* One log line per line: a verifier log is thousands of them, its end matters. */
	for (line = msg; *line; line++)
		nl += *line == '\n';
	if (nl > VERIFIER_LOG_TAIL)
		skip = nl - VERIFIER_LOG_TAIL;
	for (line = msg; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		if (skip && line != msg) {
			if (!--skip)
				log_debug("libbpf: [%u earlier lines left out]", nl - VERIFIER_LOG_TAIL);
			continue;
		}
		log_debug("libbpf: %s", line);
	}
	free(msg);
	return 0;
}

/* The off-CPU selection, resolved once: cgroup paths to ids. */
struct offcpu_sel {
	uint32_t *pids;
	uint64_t *cgroups;
	uint32_t npids, ncgroups, levels; /* levels: bit L when a cgroup is L levels below the root */
};

static int add_pid(uint32_t pid, void *arg)
{
	struct offcpu_sel *f = arg;
	uint32_t *n = realloc(f->pids, (f->npids + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	f->pids = n;
	f->pids[f->npids++] = pid;
	return 0;
}

static int add_cgroup(uint64_t id, unsigned level, void *arg)
{
	struct offcpu_sel *f = arg;
	uint64_t *n = realloc(f->cgroups, (f->ncgroups + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	f->cgroups = n;
	f->cgroups[f->ncgroups++] = id;
	f->levels |= 1u << level;
	return 0;
}

static void offcpu_sel_free(struct offcpu_sel *f)
{
	free(f->pids);
	free(f->cgroups);
	*f = (struct offcpu_sel){ 0 };
}

static int offcpu_sel_read(const struct sampler_opts *o, struct offcpu_sel *f, char *err, size_t errlen)
{
	char why[256];
	int ret;

	ret = options_each_pid(o->offcpu_pids ? o->offcpu_pids : "", add_pid, f, why, sizeof(why));
	if (!ret)
		ret = options_each_cgroup(o->offcpu_cgroups ? o->offcpu_cgroups : "", add_cgroup, f, why,
					  sizeof(why));
	if (ret == -EINVAL)
		snprintf(err, errlen, "off-CPU selection: %s", why);
	else if (ret)
		snprintf(err, errlen, "off-CPU selection: %s", strerror(-ret));
	return ret;
}

static int offcpu_sel_fill(struct sampler *s, const struct offcpu_sel *f)
{
	uint8_t one = 1;

	for (uint32_t i = 0; i < f->npids; i++)
		if (bpf_map__update_elem(s->skel->maps.offcpu_pids, &f->pids[i], sizeof(f->pids[i]), &one,
					 sizeof(one), BPF_ANY))
			return -errno;
	for (uint32_t i = 0; i < f->ncgroups; i++)
		if (bpf_map__update_elem(s->skel->maps.offcpu_cgroups, &f->cgroups[i], sizeof(f->cgroups[i]),
					 &one, sizeof(one), BPF_ANY))
			return -errno;
	return 0;
}

/*
 * Opens, sizes and loads the BPF object; the off-CPU program and its task
 * storage only when asked, so --no-offcpu costs nothing in the kernel.
 */
static int load_object(struct sampler *s, bool offcpu, const struct offcpu_sel *f)
{
	int ret;

	profd_bpf__destroy(s->skel);
	s->skel = profd_bpf__open();
	if (!s->skel)
		return -errno;
	bpf_map__set_max_entries(s->skel->maps.counts_a, s->o.counts_entries);
	bpf_map__set_max_entries(s->skel->maps.counts_b, s->o.counts_entries);
	bpf_map__set_max_entries(s->skel->maps.stacks_a, s->o.stacks_entries);
	bpf_map__set_max_entries(s->skel->maps.stacks_b, s->o.stacks_entries);
	/*
	 * The outer maps' inner template keeps its compiled size: the kernel does
	 * not compare max_entries of hash inner maps (and libbpf 1.1 crashes on
	 * resizing a template).
	 */
	s->skel->rodata->offcpu_self_tgid = (uint32_t)getpid();
	s->skel->rodata->offcpu_min_ns = s->o.offcpu_min_ns;
	s->skel->rodata->offcpu_stack_interval_ns = s->o.offcpu_stack_interval_ns;
	s->skel->rodata->offcpu_sample = s->o.offcpu_sample > 1 ? s->o.offcpu_sample : 1;
	s->skel->rodata->offcpu_max_rate = s->o.offcpu_max_rate;
	s->skel->rodata->offcpu_runq_ustack = s->o.runq_user_stack ? 1 : 0;
	s->skel->rodata->offcpu_filter = (f->npids ? PROFD_OFFCPU_F_PIDS : 0) |
					 (f->ncgroups ? PROFD_OFFCPU_F_CGROUPS : 0);
	s->skel->rodata->offcpu_cgroup_levels = f->levels;
	bpf_map__set_max_entries(s->skel->maps.offcpu_pids, f->npids ? f->npids : 1);
	bpf_map__set_max_entries(s->skel->maps.offcpu_cgroups, f->ncgroups ? f->ncgroups : 1);
	bpf_program__set_autoload(s->skel->progs.off_cpu, offcpu);
	bpf_program__set_autoload(s->skel->progs.off_cpu_capture, offcpu);
	bpf_map__set_autocreate(s->skel->maps.offcpu_progs, offcpu);
	bpf_program__set_autoload(s->skel->progs.offcpu_exit, offcpu);
	bpf_map__set_autocreate(s->skel->maps.offcpu_tasks, offcpu);
	bpf_map__set_autocreate(s->skel->maps.offcpu_pids, offcpu);
	bpf_map__set_autocreate(s->skel->maps.offcpu_cgroups, offcpu);
	tables__configure(s->skel, &s->o.unwind);
	pyprocs__configure(s->skel);
	ret = profd_bpf__load(s->skel);
	if (!ret && offcpu)
		ret = offcpu_sel_fill(s, f);
	if (!ret && offcpu) {
		/* The stack capture, tail-called by the switch hook. */
		uint32_t zero = 0;
		int fd = bpf_program__fd(s->skel->progs.off_cpu_capture);

		ret = bpf_map__update_elem(s->skel->maps.offcpu_progs, &zero, sizeof(zero), &fd,
					   sizeof(fd), BPF_ANY);
	}
	if (ret) {
		ret = ret < 0 ? ret : -errno;
		profd_bpf__destroy(s->skel);
		s->skel = NULL;
		return ret;
	}
	return 0;
}

int sampler__open(const struct sampler_opts *o, struct sampler **out, char *err, size_t errlen)
{
	struct sampler *s = calloc(1, sizeof(*s));
	struct offcpu_sel sel = { 0 };
	int ret;

	if (!s)
		return -ENOMEM;
	s->o = *o;
	s->online_fd = -1;
	s->ncpus = libbpf_num_possible_cpus();
	if (s->ncpus <= 0) {
		ret = s->ncpus ? s->ncpus : -ENODEV;
		snprintf(err, errlen, "cannot count possible CPUs: %s", strerror(-ret));
		goto fail;
	}
	s->pfds = calloc(s->ncpus, sizeof(*s->pfds));
	s->links = calloc(s->ncpus, sizeof(*s->links));
	s->enabled_ns = calloc(s->ncpus, sizeof(*s->enabled_ns));
	if (!s->pfds || !s->links || !s->enabled_ns) {
		ret = -ENOMEM;
		goto fail;
	}
	ret = alloc_buffers(s);
	if (ret) {
		snprintf(err, errlen, "cannot allocate drain buffers for %u counts and %u stacks",
			 o->counts_entries, o->stacks_entries);
		goto fail;
	}

	if (o->offcpu) {
		ret = offcpu_sel_read(o, &sel, err, errlen);
		if (ret)
			goto fail;
	}
	libbpf_set_print(libbpf_print);
	refused.prog[0] = 0;
	ret = load_object(s, o->offcpu, &sel);
	s->offcpu = !ret && o->offcpu;
	if (ret && o->offcpu && (refused.prog[0] || (ret != -EPERM && ret != -EACCES))) {
		/* Without tp_btf or task storage (or an off-CPU program this kernel refuses), on-CPU profiles. */
		if (refused.prog[0])
			refusal_msg(s->offcpu_why, sizeof(s->offcpu_why), ret);
		else
			snprintf(s->offcpu_why, sizeof(s->offcpu_why), "%s: the kernel needs tp_btf and "
				 "task storage", strerror(-ret));
		s->offcpu = ret;
		refused.prog[0] = 0;
		ret = load_object(s, false, &sel);
	}
	offcpu_sel_free(&sel);
	if (ret) {
		if (refused.prog[0])
			refusal_msg(err, errlen, ret);
		else if (ret == -EPERM || ret == -EACCES)
			snprintf(err, errlen, "loading BPF programs not permitted (%s): run as root "
				 "or with CAP_BPF and CAP_PERFMON", strerror(-ret));
		else
			snprintf(err, errlen, "cannot load BPF programs (%s): the kernel needs BTF "
				 "and BPF perf_event support", strerror(-ret));
		goto fail;
	}

	ret = open_events(s, err, errlen);
	if (ret)
		goto fail;
	for (int cpu = 0; cpu < s->ncpus; cpu++) {
		if (s->pfds[cpu] < 0)
			continue;
		s->links[cpu] = bpf_program__attach_perf_event(s->skel->progs.on_cpu, s->pfds[cpu]);
		if (!s->links[cpu]) {
			ret = -errno;
			snprintf(err, errlen, "cannot attach the BPF program to CPU %d: %s", cpu,
				 strerror(-ret));
			goto fail;
		}
	}
	if (s->offcpu == 1) {
		/* Exit first: waits batched by the switch hook must never outlive their thread unseen. */
		s->offcpu_exit_link = bpf_program__attach(s->skel->progs.offcpu_exit);
		if (s->offcpu_exit_link)
			s->offcpu_link = bpf_program__attach(s->skel->progs.off_cpu);
		if (!s->offcpu_exit_link || !s->offcpu_link) {
			s->offcpu = -errno;
			snprintf(s->offcpu_why, sizeof(s->offcpu_why), "cannot attach to sched_switch: %s",
				 strerror(-s->offcpu));
			bpf_link__destroy(s->offcpu_exit_link);
			s->offcpu_exit_link = NULL;
		}
	}
	*out = s;
	return 0;
fail:
	offcpu_sel_free(&sel);
	sampler__free(s);
	return ret;
}

void sampler__free(struct sampler *s)
{
	if (!s)
		return;
	bpf_link__destroy(s->offcpu_link);
	bpf_link__destroy(s->offcpu_exit_link);
	for (int cpu = 0; s->links && cpu < s->ncpus; cpu++)
		bpf_link__destroy(s->links[cpu]);
	for (int cpu = 0; s->pfds && cpu < s->ncpus; cpu++)
		if (s->pfds[cpu] > 0)
			close(s->pfds[cpu]);
	profd_bpf__destroy(s->skel);
	if (s->online_fd >= 0)
		close(s->online_fd);
	free(s->pfds);
	free(s->links);
	free(s->enabled_ns);
	free(s->keys);
	free(s->vals);
	free(s->skeys);
	free(s->svals);
	free(s->sindex);
	free(s);
}

/*
 * Reads and deletes every entry of a hash map in batches; returns the count
 * read. ksz, vsz: the map's key and value sizes, as the buffers are laid out.
 */
static int read_and_clear(int fd, size_t ksz, size_t vsz, void *keys, void *vals, uint32_t cap,
			  uint32_t *got)
{
	uint32_t batch, total = 0;
	void *in = NULL;
	int err = 0;

	while (total < cap) {
		uint32_t n = cap - total;

		err = bpf_map_lookup_and_delete_batch(fd, in, &batch, (char *)keys + total * ksz,
						      (char *)vals + total * vsz, &n, NULL);
		if (err)
			err = -errno;
		total += n;
		in = &batch;
		if (err == -ENOENT) {
			err = 0;
			break;
		}
		if (err)
			break;
	}
	*got = total;
	return err;
}

static void index_stacks(struct sampler *s)
{
	uint32_t mask = s->sindex_cap - 1;

	memset(s->sindex, 0, s->sindex_cap * sizeof(*s->sindex));
	for (uint32_t i = 0; i < s->nstacks; i++) {
		uint32_t j = (uint32_t)(s->skeys[i] * 0x9e3779b97f4a7c15ULL >> 32) & mask;

		while (s->sindex[j])
			j = (j + 1) & mask;
		s->sindex[j] = i + 1;
	}
}

static const struct profd_stack *find_stack(const struct sampler *s, uint64_t id)
{
	uint32_t mask = s->sindex_cap - 1;
	uint32_t j = (uint32_t)(id * 0x9e3779b97f4a7c15ULL >> 32) & mask;

	for (; s->sindex[j]; j = (j + 1) & mask)
		if (s->skeys[s->sindex[j] - 1] == id)
			return &s->svals[s->sindex[j] - 1];
	return NULL;
}

int sampler__drain(struct sampler *s, sampler_entry_fn fn, void *arg)
{
	uint32_t gen = s->skel->bss->gen, old = gen & 1, ncounts = 0;
	struct bpf_map *cmaps[2] = { s->skel->maps.counts_a, s->skel->maps.counts_b };
	struct bpf_map *smaps[2] = { s->skel->maps.stacks_a, s->skel->maps.stacks_b };
	int outer = bpf_map__fd(s->skel->maps.counts), inner_fd = bpf_map__fd(cmaps[old]);
	int err;

	/* Counts up, not 0/1: the off-CPU hook caches stack ids per generation. */
	__atomic_store_n(&s->skel->bss->gen, gen + 1, __ATOMIC_SEQ_CST);
	/* Rewriting a map-in-map slot waits for running programs (synchronize_rcu). */
	if (bpf_map_update_elem(outer, &old, &inner_fd, BPF_ANY))
		return -errno;

	err = read_and_clear(bpf_map__fd(smaps[old]), sizeof(*s->skeys), sizeof(*s->svals), s->skeys,
			     s->svals, s->o.stacks_entries, &s->nstacks);
	if (err)
		return err;
	err = read_and_clear(bpf_map__fd(cmaps[old]), sizeof(*s->keys), sizeof(*s->vals), s->keys,
			     s->vals, s->o.counts_entries, &ncounts);
	s->ncounts = ncounts;
	if (err) {
		/* Read and deleted: they go no further. */
		s->drain_lost += ncounts;
		return err;
	}
	index_stacks(s);

	for (uint32_t i = 0; i < ncounts; i++) {
		const struct profd_stack *us = s->keys[i].ustack ? find_stack(s, s->keys[i].ustack) : NULL;
		const struct profd_stack *ks = s->keys[i].kstack ? find_stack(s, s->keys[i].kstack) : NULL;
		struct sampler_entry e = {
			.key = &s->keys[i],
			.value = s->vals[i],
			.ustack = us ? us->ips : NULL,
			.nustack = us ? (us->len > PROFD_MAX_DEPTH ? PROFD_MAX_DEPTH : us->len) : 0,
			.kstack = ks ? ks->ips : NULL,
			.nkstack = ks ? (ks->len > PROFD_MAX_DEPTH ? PROFD_MAX_DEPTH : ks->len) : 0,
		};

		err = fn(&e, arg);
		if (err) {
			/* This entry and the rest: read and deleted from the kernel, never stored. */
			s->drain_lost += ncounts - i;
			return err;
		}
	}
	return 0;
}

uint64_t sampler__drain_lost(const struct sampler *s)
{
	return s->drain_lost;
}

uint64_t sampler__prog_misses(const struct sampler *s)
{
	struct bpf_program *progs[] = { s->skel->progs.on_cpu, s->skel->progs.off_cpu,
					s->skel->progs.offcpu_exit };
	uint64_t n = 0;

	/* A program the kernel did not run because it was running already on that CPU. */
	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		struct bpf_prog_info info = { 0 };
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(progs[i]);

		if (fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &len))
			n += info.recursion_misses;
	}
	return n;
}

void sampler__drained(const struct sampler *s, uint32_t *counts, uint32_t *stacks)
{
	*counts = s->ncounts;
	*stacks = s->nstacks;
}

void sampler__counters(const struct sampler *s, uint64_t out[PROFD_CNT_MAX])
{
	for (int i = 0; i < PROFD_CNT_MAX; i++)
		out[i] = __atomic_load_n(&s->skel->bss->counters[i], __ATOMIC_RELAXED);
}

const char *sampler__event(const struct sampler *s)
{
	return s->event;
}

unsigned sampler__ncpus(const struct sampler *s)
{
	return s->nopen;
}

uint64_t sampler__map_bytes(const struct sampler *s)
{
	return 2ULL * s->o.counts_entries * (sizeof(struct profd_key) + 8 + 16) +
	       2ULL * s->o.stacks_entries * (sizeof(struct profd_stack) + 8 + 16);
}

/* ---- live frequency and CPU hotplug ---- */

int sampler__set_frequency(struct sampler *s, unsigned hz)
{
	/*
	 * PERF_EVENT_IOC_PERIOD changes the rate in place: no re-open, no gap. A
	 * hardware event in freq mode takes the new frequency; the hrtimer events
	 * (cpu-clock) turn freq into a fixed period at open and clear attr.freq,
	 * so they take a period in nanoseconds.
	 */
	int hrtimer = s->attr.type == PERF_TYPE_SOFTWARE;
	uint64_t v = hrtimer ? 1000000000ULL / hz : hz;
	uint64_t old = hrtimer ? 1000000000ULL / s->attr.sample_freq : s->attr.sample_freq;

	for (int cpu = 0; cpu < s->ncpus; cpu++) {
		if (s->pfds[cpu] >= 0 && ioctl(s->pfds[cpu], PERF_EVENT_IOC_PERIOD, &v)) {
			int err = -errno;

			for (int c = 0; c < cpu; c++)
				if (s->pfds[c] >= 0)
					ioctl(s->pfds[c], PERF_EVENT_IOC_PERIOD, &old);
			return err;
		}
	}
	s->attr.sample_freq = hz;
	s->o.frequency = hz;
	return 0;
}

static int reopen_cpu(struct sampler *s, int cpu)
{
	struct bpf_link *link;
	int fd;

	fd = perf_open(&s->attr, cpu);
	if (fd < 0)
		return -errno;
	link = bpf_program__attach_perf_event(s->skel->progs.on_cpu, fd);
	if (!link) {
		int err = -errno;

		close(fd);
		return err;
	}
	bpf_link__destroy(s->links[cpu]);
	if (s->pfds[cpu] >= 0)
		close(s->pfds[cpu]);
	s->links[cpu] = link;
	s->pfds[cpu] = fd;
	s->enabled_ns[cpu] = 0;
	return 0;
}

/*
 * Perf events are bound to a CPU; when it goes offline the kernel detaches
 * them for good, so a CPU that comes back must get a new event. A dead event
 * is one whose enabled time stood still while its CPU is online; that catches
 * an offline/online cycle shorter than the check interval too.
 */
int sampler__refresh_cpus(struct sampler *s)
{
	bool *online = calloc(s->ncpus, sizeof(*online));
	int ret, reopened = 0;
	unsigned n = 0;

	if (!online)
		return -ENOMEM;
	ret = online_cpus(s, online, s->ncpus);
	for (int cpu = 0; !ret && cpu < s->ncpus; cpu++) {
		uint64_t rf[2]; /* value, time_enabled */
		int dead = s->pfds[cpu] < 0;

		if (!dead && read(s->pfds[cpu], rf, sizeof(rf)) == (ssize_t)sizeof(rf)) {
			dead = online[cpu] && s->enabled_ns[cpu] && rf[1] == s->enabled_ns[cpu];
			s->enabled_ns[cpu] = rf[1];
		}
		if (online[cpu] && dead) {
			int err = reopen_cpu(s, cpu);

			if (err)
				log_warn("CPU %d is online but its perf event cannot be re-opened: %s", cpu,
					 strerror(-err));
			else
				reopened++;
		}
		if (online[cpu] && s->pfds[cpu] >= 0)
			n++;
	}
	free(online);
	if (ret)
		return ret;
	s->nopen = n;
	return reopened;
}

int sampler__offcpu(const struct sampler *s)
{
	return s->offcpu;
}

const char *sampler__offcpu_why(const struct sampler *s)
{
	return s->offcpu < 0 ? s->offcpu_why : "";
}

struct profd_bpf *sampler__skel(const struct sampler *s)
{
	return s->skel;
}

int sampler__umaps_fd(const struct sampler *s)
{
	return s->skel ? bpf_map__fd(s->skel->maps.umaps) : -1;
}
