/* profd: wires the sampler, symbolizer, window and store into one event loop. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "cgroups.h"
#include "log.h"
#include "notify.h"
#include "options.h"
#include "profile.h"
#include "sampler.h"
#include "server.h"
#include "store.h"
#include "symbolizer.h"

struct profd {
	struct profd_opts o;
	struct sampler *sampler;
	struct symbolizer *sym;
	struct cgroups *cg;
	struct store *store;
	struct server *server;
	struct profile *window;
	int epfd, sigfd, drain_tfd, flush_tfd;
	int64_t started_ns;
	struct utsname uts;
	uint64_t last_counters[PROFD_CNT_MAX];
	uint64_t samples_total, windows_written, flush_errors, drains, drain_ns_total, drain_ns_max;
	uint64_t unsymbolized_stacks;
	int64_t last_write_warn_ns;
	uint32_t *frames_buf;
	int stop;
};

static const char *const counter_names[PROFD_CNT_MAX] = {
	[PROFD_CNT_SAMPLES] = "bpf_samples",
	[PROFD_CNT_COUNTS_FULL] = "lost_counts_map_full",
	[PROFD_CNT_STACKS_FULL] = "lost_stacks_map_full",
	[PROFD_CNT_USTACK_ERR] = "lost_user_stack_error",
	[PROFD_CNT_KSTACK_ERR] = "lost_kernel_stack_error",
	[PROFD_CNT_HASH_CLASH] = "lost_stack_hash_clash",
	[PROFD_CNT_TRUNCATED] = "truncated_stacks",
	[PROFD_CNT_NO_MAP] = "lost_no_map",
	[PROFD_CNT_IDLE] = "idle_samples",
};

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int add_frame(struct profd *d, const struct sym *y, uint32_t *id)
{
	struct pf_frame f = { .offset = y->offset };
	int err;

	f.kind = y->kind == SYM_KERNEL ? PF_FRAME_KERNEL : y->kind == SYM_JIT ? PF_FRAME_JIT : PF_FRAME_USER;
	err = profile__intern_str(d->window, y->name, &f.name);
	if (!err)
		err = profile__intern_str(d->window, y->module, &f.module);
	if (!err)
		err = profile__frame_add(d->window, &f, id);
	return err;
}

static int on_entry(const struct sampler_entry *e, void *arg)
{
	struct profd *d = arg;
	const struct profd_key *k = e->key;
	struct pf_sample s = { .pid = k->pid, .tid = k->tid, .value = e->value };
	uint32_t n = 0;
	struct sym y;
	int err;

	/* Root first: outermost user frame ... user leaf, then kernel entry ... kernel leaf. */
	for (uint32_t i = e->nustack; i-- > 0;) {
		err = symbolizer__user(d->sym, k->pid, e->ustack[i], i > 0, &y);
		if (!err)
			err = add_frame(d, &y, &d->frames_buf[n++]);
		if (err)
			return err;
	}
	for (uint32_t i = e->nkstack; i-- > 0;) {
		err = symbolizer__kernel(d->sym, e->kstack[i], &y);
		if (!err)
			err = add_frame(d, &y, &d->frames_buf[n++]);
		if (err)
			return err;
	}
	if ((k->ustack && !e->nustack) || (k->kstack && !e->nkstack))
		d->unsymbolized_stacks++;

	err = profile__stack_add(d->window, d->frames_buf, n, &s.stack);
	if (!err)
		err = profile__intern(d->window, k->comm, strnlen(k->comm, sizeof(k->comm)), &s.comm);
	if (!err)
		err = profile__intern(d->window, k->thread, strnlen(k->thread, sizeof(k->thread)), &s.thread);
	if (!err)
		err = profile__intern_str(d->window, cgroups__path(d->cg, k->cgroup_id, clock_ns(CLOCK_MONOTONIC)),
					  &s.cgroup);
	if (err)
		return err;
	switch (k->kind) {
	case PROFD_KIND_OFFCPU: s.kind = PF_KIND_OFFCPU; break;
	case PROFD_KIND_RUNQ: s.kind = PF_KIND_RUNQ; break;
	default:
		s.kind = PF_KIND_CPU;
		d->samples_total += e->value;
		break;
	}
	return profile__add(d->window, &s);
}

static void drain(struct profd *d)
{
	int64_t t0 = clock_ns(CLOCK_MONOTONIC), dt;
	int err = sampler__drain(d->sampler, on_entry, d);

	if (err)
		log_ratelimited(&d->last_write_warn_ns, 60000000000LL, LOG_LVL_WARN,
				"draining kernel maps failed: %s", strerror(-err));
	dt = clock_ns(CLOCK_MONOTONIC) - t0;
	d->drains++;
	d->drain_ns_total += dt;
	if ((uint64_t)dt > d->drain_ns_max)
		d->drain_ns_max = dt;
}

static int window_begin(struct profd *d)
{
	struct pf_meta *m;
	int err;

	profile__reset(d->window);
	m = profile__meta(d->window);
	m->start_ns = clock_ns(CLOCK_REALTIME);
	m->frequency = d->o.frequency;
	err = profile__intern_str(d->window, d->uts.nodename, &m->host);
	if (!err)
		err = profile__intern_str(d->window, d->uts.release, &m->kernel);
	if (!err)
		err = profile__intern_str(d->window, sampler__event(d->sampler), &m->event);
	return err;
}

/* Drains, closes the open window into the store and opens the next one. */
static int flush(struct profd *d)
{
	uint64_t c[PROFD_CNT_MAX];
	int err = 0;

	drain(d);
	sampler__counters(d->sampler, c);
	for (int i = 0; i < PROFD_CNT_MAX; i++) {
		if (c[i] != d->last_counters[i] && (err = profile__counter_add(d->window, counter_names[i],
							c[i] - d->last_counters[i])))
			break;
	}
	memcpy(d->last_counters, c, sizeof(c));
	profile__meta(d->window)->end_ns = clock_ns(CLOCK_REALTIME);
	if (!err && profile__nsamples(d->window)) {
		err = store__append(d->store, d->window);
		if (err) {
			d->flush_errors++;
			log_ratelimited(&d->last_write_warn_ns, 60000000000LL, LOG_LVL_WARN,
					"cannot write a window to %s: %s; sampling goes on, the window is dropped",
					d->o.state_dir, strerror(-err));
		} else {
			d->windows_written++;
		}
	}
	store__retain(d->store, clock_ns(CLOCK_REALTIME));
	return window_begin(d) ? -ENOMEM : err;
}

#define ADD(fmt, ...) fprintf(f, fmt "\n", __VA_ARGS__)

static int status_reply(struct profd *d, char **out)
{
	uint64_t c[PROFD_CNT_MAX], lost = 0;
	struct symbolizer_stats ss;
	struct store_stats st;
	size_t len;
	FILE *f = open_memstream(out, &len);

	if (!f)
		return -ENOMEM;
	sampler__counters(d->sampler, c);
	symbolizer__stats(d->sym, &ss);
	store__stats(d->store, &st);
	/* Samples dropped whole; the stack losses keep the sample without that stack. */
	lost = c[PROFD_CNT_COUNTS_FULL] + c[PROFD_CNT_NO_MAP];
	ADD("pid\t%d", (int)getpid());
	ADD("uptime_s\t%" PRId64, (clock_ns(CLOCK_MONOTONIC) - d->started_ns) / 1000000000);
	ADD("host\t%s", d->uts.nodename);
	ADD("kernel\t%s", d->uts.release);
	ADD("event\t%s", sampler__event(d->sampler));
	ADD("frequency_hz\t%u", d->o.frequency);
	ADD("cpus\t%u", sampler__ncpus(d->sampler));
	ADD("state_dir\t%s", d->o.state_dir);
	ADD("samples\t%" PRIu64, d->samples_total);
	ADD("samples_lost\t%" PRIu64, lost);
	ADD("stacks_lost\t%" PRIu64, c[PROFD_CNT_STACKS_FULL] + c[PROFD_CNT_USTACK_ERR] +
				       c[PROFD_CNT_KSTACK_ERR] + c[PROFD_CNT_HASH_CLASH]);
	for (int i = 0; i < PROFD_CNT_MAX; i++)
		ADD("%s\t%" PRIu64, counter_names[i], c[i]);
	ADD("stacks_unresolved\t%" PRIu64, d->unsymbolized_stacks);
	ADD("drains\t%" PRIu64, d->drains);
	ADD("drain_avg_us\t%" PRIu64, d->drains ? d->drain_ns_total / d->drains / 1000 : 0);
	ADD("drain_max_us\t%" PRIu64, d->drain_ns_max / 1000);
	ADD("windows_written\t%" PRIu64, d->windows_written);
	ADD("window_write_errors\t%" PRIu64, d->flush_errors);
	ADD("segments\t%" PRIu64, st.segments);
	ADD("bytes_on_disk\t%" PRIu64, st.bytes_on_disk);
	ADD("segments_removed\t%" PRIu64, st.segments_removed);
	ADD("kernel_map_bytes\t%" PRIu64, sampler__map_bytes(d->sampler));
	ADD("symbol_files_cached\t%" PRIu64, ss.files_cached);
	ADD("symbol_file_hits\t%" PRIu64, ss.file_hits);
	ADD("symbol_file_misses\t%" PRIu64, ss.file_misses);
	ADD("symbol_file_evictions\t%" PRIu64, ss.file_evictions);
	ADD("symbol_pids_cached\t%" PRIu64, ss.pids_cached);
	ADD("symbol_bad_files\t%" PRIu64, ss.bad_files);
	{
		struct rusage ru;

		getrusage(RUSAGE_SELF, &ru);
		ADD("rss_max_kb\t%ld", ru.ru_maxrss);
		ADD("cpu_user_ms\t%ld", ru.ru_utime.tv_sec * 1000 + ru.ru_utime.tv_usec / 1000);
		ADD("cpu_sys_ms\t%ld", ru.ru_stime.tv_sec * 1000 + ru.ru_stime.tv_usec / 1000);
	}
	return fclose(f) ? -ENOMEM : 0;
}

static int handle(const char *req, char **reply, void *arg)
{
	struct profd *d = arg;

	if (!strcmp(req, "status"))
		return status_reply(d, reply);
	if (!strcmp(req, "flush")) {
		int err = flush(d), r;

		if (err)
			r = asprintf(reply, "error\t%s\n", strerror(-err));
		else
			r = asprintf(reply, "ok\tflushed\nwindows_written\t%" PRIu64 "\n", d->windows_written);
		return r < 0 ? -ENOMEM : 0;
	}
	return asprintf(reply, "error\tunknown request '%.64s' (try status, flush)\n", req) < 0 ? -ENOMEM : 0;
}

static int timer_open(int epfd, int64_t interval_ns, int *out)
{
	struct itimerspec its = {
		.it_interval = { interval_ns / 1000000000, interval_ns % 1000000000 },
		.it_value = { interval_ns / 1000000000, interval_ns % 1000000000 },
	};
	struct epoll_event ev = { .events = EPOLLIN };
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);

	if (fd < 0)
		return -errno;
	ev.data.ptr = out;
	if (timerfd_settime(fd, 0, &its, NULL) || epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev)) {
		close(fd);
		return -errno;
	}
	*out = fd;
	return 0;
}

static void store_warn(void *arg, const char *msg)
{
	(void)arg;
	log_warn("%s", msg);
}

static int mkdir_parent(const char *path)
{
	char *dup = strdup(path), *slash;
	int err = 0;

	if (!dup)
		return -ENOMEM;
	slash = strrchr(dup, '/');
	if (slash && slash != dup) {
		*slash = 0;
		if (mkdir(dup, 0755) && errno != EEXIST)
			err = -errno;
	}
	free(dup);
	return err;
}

static int setup(struct profd *d)
{
	struct sampler_opts so = {
		.frequency = d->o.frequency,
		.counts_entries = d->o.counts_entries,
		.stacks_entries = d->o.stacks_entries,
	};
	struct symbolizer_opts yo = { .max_files = d->o.max_files, .max_pids = d->o.max_pids };
	struct store_opts to = {
		.dir = d->o.state_dir, .writer = 1, .zstd_level = d->o.zstd_level,
		.max_age_ns = d->o.retention_ns, .max_bytes = d->o.max_disk,
		.warn = store_warn,
	};
	struct epoll_event ev = { .events = EPOLLIN };
	char err_msg[256] = "";
	sigset_t mask;
	int err;

	uname(&d->uts);
	d->frames_buf = calloc(2 * PROFD_MAX_DEPTH, sizeof(*d->frames_buf));
	if (!d->frames_buf || profile__new(&d->window))
		return log_err("out of memory"), -ENOMEM;

	mkdir_parent(d->o.state_dir);
	err = store__open(&to, &d->store);
	if (err) {
		log_err("cannot open state directory %s: %s; check that it is writable by profd (or pick one with --state-dir)",
			d->o.state_dir, strerror(-err));
		return err;
	}
	if (symbolizer__new(&yo, &d->sym) || cgroups__new(NULL, &d->cg))
		return log_err("out of memory"), -ENOMEM;

	err = sampler__open(&so, &d->sampler, err_msg, sizeof(err_msg));
	if (err) {
		log_err("%s", err_msg);
		return err;
	}
	if (window_begin(d))
		return -ENOMEM;

	d->epfd = epoll_create1(EPOLL_CLOEXEC);
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	d->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	ev.data.ptr = &d->sigfd;
	if (d->epfd < 0 || d->sigfd < 0 || epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->sigfd, &ev))
		return log_err("cannot set up the event loop: %s", strerror(errno)), -errno;
	if ((err = timer_open(d->epfd, d->o.drain_interval_ns, &d->drain_tfd)) ||
	    (err = timer_open(d->epfd, d->o.flush_interval_ns, &d->flush_tfd)))
		return log_err("cannot create timers: %s", strerror(-err)), err;

	mkdir_parent(d->o.socket);
	err = server__open(d->o.socket, d->epfd, handle, d, &d->server);
	if (err) {
		log_err("cannot listen on %s: %s; pick another path with --socket", d->o.socket, strerror(-err));
		return err;
	}
	return 0;
}

static void teardown(struct profd *d)
{
	server__free(d->server);
	sampler__free(d->sampler);
	store__close(d->store);
	symbolizer__free(d->sym);
	cgroups__free(d->cg);
	profile__free(d->window);
	free(d->frames_buf);
	if (d->epfd > 0)
		close(d->epfd);
}

static void on_signal(struct profd *d)
{
	struct signalfd_siginfo si;

	while (read(d->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGHUP)
			log_info("SIGHUP: nothing to reload without --config");
		else
			d->stop = 1;
	}
}

static int loop(struct profd *d)
{
	struct epoll_event evs[16];
	uint64_t ticks;

	while (!d->stop) {
		int n = epoll_wait(d->epfd, evs, 16, -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (int i = 0; i < n; i++) {
			void *tag = evs[i].data.ptr;

			if (tag == &d->sigfd) {
				on_signal(d);
			} else if (tag == &d->drain_tfd) {
				if (read(d->drain_tfd, &ticks, sizeof(ticks)) > 0)
					drain(d);
				server__reap(d->server, clock_ns(CLOCK_MONOTONIC) / 1000000);
			} else if (tag == &d->flush_tfd) {
				if (read(d->flush_tfd, &ticks, sizeof(ticks)) > 0)
					flush(d);
			} else {
				server__dispatch(d->server, tag, evs[i].events);
			}
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct profd d = { .epfd = -1, .sigfd = -1, .drain_tfd = -1, .flush_tfd = -1 };
	int err;

	options_defaults(&d.o);
	err = options_parse(&d.o, argc, argv);
	if (err)
		return err > 0 ? 0 : 2;
	log_init(d.o.log_level);
	d.started_ns = clock_ns(CLOCK_MONOTONIC);

	err = setup(&d);
	if (err) {
		teardown(&d);
		return 1;
	}
	log_info("sampling %u CPUs at %u Hz with %s; windows every %" PRId64 "s to %s; socket %s",
		 sampler__ncpus(d.sampler), d.o.frequency, sampler__event(d.sampler),
		 d.o.flush_interval_ns / 1000000000, d.o.state_dir, d.o.socket);
	notify_send("READY=1");

	err = loop(&d);
	notify_send("STOPPING=1");
	if (flush(&d))
		log_warn("the last window could not be written");
	log_info("stopped after writing %" PRIu64 " windows", d.windows_written);
	teardown(&d);
	return err ? 1 : 0;
}
