/* profd: wires the sampler, symbolizer, window and store into one event loop. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "cgroups.h"
#include "events.h"
#include "log.h"
#include "notify.h"
#include "options.h"
#include "pidlock.h"
#include "profile.h"
#include "pyprocs.h"
#include "pystack.h"
#include "sampler.h"
#include "server.h"
#include "store.h"
#include "filecache.h"
#include "procreg.h"
#include "symbolizer.h"
#include "tables.h"
#include "textesc.h"
#include "usnap.h"
#include "window.h"

/*
 * drain_max_recent_us: the longest of this many last drains (about 10 s at
 * the default interval).
 */
#define RECENT_DRAINS 10

struct profd {
	struct profd_opts o;
	struct sampler *sampler;
	struct procreg *reg; /* every process known: names and unwind tables hang off it */
	struct filecache *files; /* every file read: symbols and unwind tables hang off it */
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
	/* the last drains' times: what a load of the moment costs */
	uint64_t drain_ns_recent[RECENT_DRAINS];
	uint64_t unsymbolized_stacks;
	int64_t last_write_warn_ns;
	uint32_t *frames_buf;    /* Python stacks: their user frames */
	int stop;
	/* service: reload re-reads argv and the config file */
	int argc;
	char **argv;
	struct pidlock *lock;
	int wd_tfd;
	/* flush requests: one flush a second at most, the ones in between wait for it */
	int req_tfd;
	int64_t req_flush_ms;
	bool req_flush_waiting;
	/*
	 * A flush waits (drains go on into the window) while frames of the
	 * window wait for their file's symbols, until flush_hold_until_ns:
	 * written now they would stay unnamed. req_flush_held: the deferred
	 * requests are answered when it is written.
	 */
	int64_t flush_hold_until_ns;
	/* a held flush is asked again at this time too, not only at the drain tick */
	int64_t flush_retry_ns;
	bool flush_held, req_flush_held;
	uint64_t flushes_held, flushes_held_expired;
	/* the loop's longest turn (one wake-up, whatever woke it), and the turns over 50 ms */
	int64_t turn_ns_max;
	uint64_t turns_over_50ms;
	uint64_t flush_requests, flush_requests_coalesced, requests_refused;
	char restart_pending[256];
	uint64_t status_samples;
	int64_t status_ns;
	/* process events: NULL when the kernel refused them */
	struct events *events;
	/* DWARF unwinding: NULL with --unwind fp */
	struct tables *tables;
	int snap_fd;             /* --unwind-snapshots: the walker's snapshots go here; -1: off */
	/* CPython frames: NULL when the walker's maps could not be set up */
	struct pyprocs *py;
	/* names and interns the drained stacks into the window, with a frame cache */
	struct window *win;
	/* own cost: what was freed since the last trim */
	uint64_t trimmed_evictions, trims;
	/* process events and walker requests: see EVENTS_GAP_NS */
	int64_t events_turn_ns, events_tick_ns; /* tick_ns 0: watched, else muted until then */
	int64_t drain_tables_ns; /* inside a drain: when the tables' next turn is due */
	int64_t drain_now_ns;    /* inside a drain: the clock, read every DRAIN_TABLES_EVERY entries */
	uint32_t drain_seen;     /* entries of this drain, for the clock's look every few */
	double events_per_gap;
	uint64_t events_wakeups, events_ticks;
	/* own cost by part: entries the drains read, and the main thread's CPU */
	uint64_t drain_entries, drain_stacks;
	int64_t drain_cpu_ns, flush_cpu_ns; /* the main thread's CPU in drains, in flushes less drains */
	/* the loop's wake-ups, by what woke it */
	uint64_t woke_drain, woke_flush, woke_events, woke_tables, woke_tick, woke_other;
};

static const char *const counter_names[PROFD_CNT_MAX] = {
	[PROFD_CNT_SAMPLES] = "bpf_samples",
	[PROFD_CNT_COUNTS_FULL] = "lost_counts_map_full",
	[PROFD_CNT_STACKS_FULL] = "stacks_dropped_map_full",
	[PROFD_CNT_USTACK_ERR] = "stacks_dropped_user_error",
	[PROFD_CNT_KSTACK_ERR] = "stacks_dropped_kernel_error",
	[PROFD_CNT_HASH_CLASH] = "stacks_dropped_hash_clash",
	[PROFD_CNT_TRUNCATED] = "truncated_stacks",
	[PROFD_CNT_NO_MAP] = "lost_no_map",
	[PROFD_CNT_IDLE] = "idle_samples",
	[PROFD_CNT_OFFCPU_NO_STATE] = "lost_offcpu_no_task_state",
	[PROFD_CNT_OFFCPU_SHORT] = "offcpu_below_minimum",
	[PROFD_CNT_OFFCPU_CAPTURED] = "offcpu_stacks_captured",
	[PROFD_CNT_OFFCPU_RATE_WINDOWS] = "offcpu_sampled_windows",
	[PROFD_CNT_OFFCPU_UNSEEN] = "lost_offcpu_end_unseen",
	[PROFD_CNT_OFFCPU_INFERRED] = "offcpu_ends_inferred",
	[PROFD_CNT_OFFCPU_NOT_CAPTURED] = "lost_offcpu_not_captured",
	[PROFD_CNT_OFFCPU_TAIL_FAILED] = "offcpu_capture_tail_call_failed",
};

static int sym_user(void *arg, uint32_t pid, uint64_t ip, int is_ret, struct sym *out)
{
	return symbolizer__user(arg, pid, ip, is_ret, out);
}

static int sym_kernel(void *arg, uint64_t ip, struct sym *out)
{
	return symbolizer__kernel(arg, ip, out);
}

static int sym_place(void *arg, uint32_t pid, uint64_t ip, int is_ret, uint64_t *file,
		     uint64_t *offset)
{
	return symbolizer__place(arg, pid, ip, is_ret, file, offset);
}

static int sym_later(void *arg, uint64_t file, uint64_t offset, int is_ret, const char **name)
{
	return symbolizer__name_later(arg, file, offset, is_ret, name);
}

struct native_ctx {
	struct profd *d;
	uint32_t pid;
};

/* The tables' turns inside a drain, at most this often; the clock read once per EVERY entries. */
#define DRAIN_TABLES_GAP_NS (20 * 1000000LL)
#define DRAIN_TABLES_EVERY 64

static int native_frame(void *arg, uint64_t ip, uint32_t is_ret, uint32_t *id)
{
	struct native_ctx *c = arg;

	return window__frame(c->d->win, c->pid, ip, (int)is_ret, id);
}

static int on_entry(const struct sampler_entry *e, void *arg)
{
	struct profd *d = arg;
	const struct profd_key *k = e->key;
	struct window_sample s = {
		.pid = k->pid, .tid = k->tid, .value = e->value,
		.comm = k->comm, .comm_len = strnlen(k->comm, sizeof(k->comm)),
		.thread = k->thread, .thread_len = strnlen(k->thread, sizeof(k->thread)),
		.ustack = e->ustack, .nustack = e->nustack,
		.kstack = e->kstack, .nkstack = e->nkstack,
	};
	int err;

	/*
	 * A process first seen now may be gone at the next drain: capture all it
	 * maps while it runs.
	 */
	if (d->events) {
		events__poll(d->events);
		if (e->nustack)
			events__seen(d->events, k->pid);
	}
	/*
	 * On a loaded host a drain of a busy second takes the main thread
	 * seconds of wall time: new processes get their tables meanwhile, not
	 * after it (a 300 ms script would run without its native callers).
	 */
	if (++d->drain_seen % DRAIN_TABLES_EVERY == 0) {
		d->drain_now_ns = clock__mono_ns();
		if (d->tables && d->drain_now_ns >= d->drain_tables_ns) {
			tables__poll(d->tables);
			d->drain_now_ns = clock__mono_ns();
			d->drain_tables_ns = d->drain_now_ns + DRAIN_TABLES_GAP_NS;
		}
	}
	if (d->py && e->nustack)
		pyprocs__seen(d->py, d->sym, k->pid);
	if (d->py && pystack__has_python(e->ustack, e->nustack)) {
		struct native_ctx nc = { d, k->pid };

		window__prefetch(d->win, k->pid, e->ustack, e->nustack);

		err = pyprocs__stack(d->py, d->window, k->pid, e->ustack, e->nustack, native_frame,
				     &nc, d->frames_buf, &s.nuser_ids);
		if (err)
			return err;
		s.user_ids = d->frames_buf;
	}
	if ((k->ustack && !e->nustack) || (k->kstack && !e->nkstack))
		d->unsymbolized_stacks++;
	/* The clock only paces cgroup rescans (a second apart): the drain's, read every few entries. */
	s.cgroup = cgroups__path(d->cg, k->cgroup_id, d->drain_now_ns);
	switch (k->kind) {
	case PROFD_KIND_OFFCPU: s.kind = PF_KIND_OFFCPU; break;
	case PROFD_KIND_RUNQ: s.kind = PF_KIND_RUNQ; break;
	default: s.kind = PF_KIND_CPU; break;
	}
	err = window__add(d->win, &s);
	if (!err && s.kind == PF_KIND_CPU)
		d->samples_total += e->value;
	return err;
}

/*
 * Gives memory freed by evicted symbol files back to the kernel. glibc keeps
 * freed heap for reuse and only trims the top of the heap, so a burst of
 * large files would otherwise stay in RSS after they were evicted. Only
 * after a drain that evicted: malloc_trim walks the whole heap.
 */
static void trim(struct profd *d)
{
	struct symbolizer_stats ss;

	symbolizer__stats(d->sym, &ss);
	if (ss.file_evictions == d->trimmed_evictions)
		return;
	d->trimmed_evictions = ss.file_evictions;
	d->trims++;
	malloc_trim(0);
}

static void drain(struct profd *d)
{
	int64_t t0 = clock__mono_ns(), c0 = clock__ns(CLOCK_THREAD_CPUTIME_ID), dt;
	uint32_t nc = 0, ns = 0;
	int err;

	/*
	 * Exits noted before the flip are forgotten after the next drain: samples
	 * taken in do_exit may come after it.
	 */
	if (d->events)
		events__drain_begin(d->events);
	window__drain(d->win);
	d->drain_tables_ns = t0 + DRAIN_TABLES_GAP_NS;
	d->drain_now_ns = t0;
	d->drain_seen = 0;
	err = sampler__drain(d->sampler, on_entry, d);
	if (d->events)
		events__drain_end(d->events);
	window__settle(d->win);
	trim(d);

	if (err)
		log_ratelimited(&d->last_write_warn_ns, 60000000000LL, LOG_LVL_WARN,
				"draining kernel maps failed: %s", strerror(-err));
	dt = clock__mono_ns() - t0;
	d->drains++;
	d->drain_ns_total += dt;
	if ((uint64_t)dt > d->drain_ns_max)
		d->drain_ns_max = dt;
	d->drain_ns_recent[d->drains % RECENT_DRAINS] = (uint64_t)dt;
	sampler__drained(d->sampler, &nc, &ns);
	d->drain_entries += nc;
	d->drain_stacks += ns;
	d->drain_cpu_ns += clock__ns(CLOCK_THREAD_CPUTIME_ID) - c0;
}

static int window_begin(struct profd *d)
{
	struct pf_meta *m;
	int err;

	profile__reset(d->window);
	window__clear(d->win);
	m = profile__meta(d->window);
	m->start_ns = clock__ns(CLOCK_REALTIME);
	m->frequency = d->o.frequency;
	err = profile__intern_str(d->window, d->uts.nodename, &m->host);
	if (!err)
		err = profile__intern_str(d->window, d->uts.release, &m->kernel);
	if (!err)
		err = profile__intern_str(d->window, sampler__event(d->sampler), &m->event);
	return err;
}

/*
 * A window is not written while some of its frames wait for their file's
 * symbols (read on the symbolizer's worker; libLLVM's take seconds on a
 * loaded host), for at most this long; a flush a client waits for, at
 * most REQ_FLUSH_HOLD_NS (profctl gives up after 5 s).
 */
#define FLUSH_HOLD_NS (10 * 1000000000LL)
#define REQ_FLUSH_HOLD_NS (3 * 1000000000LL)
/*
 * How often a held window is asked again besides the drain tick: the
 * worker's read does not wake the loop, and a drain interval may be
 * longer than profctl waits for its flush.
 */
#define FLUSH_RETRY_NS (250 * 1000000LL)

/*
 * Drains, closes the open window into the store and opens the next one.
 * Unless force, a window with frames waiting for their names is held
 * (d->flush_held): the drain tick asks again.
 */
static int flush_window(struct profd *d, bool force)
{
	uint64_t c[PROFD_CNT_MAX];
	int64_t c0, now;
	int err = 0;

	drain(d);
	now = clock__mono_ns();
	if (!force && window__settle(d->win)) {
		if (!d->flush_held) {
			d->flush_held = true;
			d->flushes_held++;
			d->flush_hold_until_ns = now + FLUSH_HOLD_NS;
		}
		if (now < d->flush_hold_until_ns) {
			d->flush_retry_ns = now + FLUSH_RETRY_NS;
			return 0;
		}
		d->flushes_held_expired++;
	}
	d->flush_held = false;
	c0 = clock__ns(CLOCK_THREAD_CPUTIME_ID);
	sampler__counters(d->sampler, c);
	for (int i = 0; i < PROFD_CNT_MAX; i++) {
		if (c[i] != d->last_counters[i] &&
		    (err = profile__counter_add(d->window, counter_names[i],
						c[i] - d->last_counters[i])))
			break;
	}
	memcpy(d->last_counters, c, sizeof(c));
	profile__meta(d->window)->end_ns = clock__ns(CLOCK_REALTIME);
	if (!err && profile__nsamples(d->window)) {
		err = store__append(d->store, d->window);
		if (err) {
			d->flush_errors++;
			log_ratelimited(&d->last_write_warn_ns, 60000000000LL, LOG_LVL_WARN,
					"cannot write a window to %s: %s; sampling goes on, the "
					"window is dropped", d->o.state_dir, strerror(-err));
		} else {
			d->windows_written++;
		}
	}
	store__retain(d->store, clock__ns(CLOCK_REALTIME));
	/* At most one segment per flush; a failure is retried later by the store itself. */
	store__compact(d->store, clock__ns(CLOCK_REALTIME));
	if (window_begin(d))
		err = -ENOMEM;
	d->flush_cpu_ns += clock__ns(CLOCK_THREAD_CPUTIME_ID) - c0;
	return err;
}

static int flush(struct profd *d)
{
	return flush_window(d, true);
}

#define ADD(fmt, ...) fprintf(f, fmt "\n", __VA_ARGS__)

/* A value with a newline would end its line and forge the next key: escaped (textesc.h). */
static void status_text(FILE *f, const char *key, const char *value)
{
	char v[4096];

	textesc__copy(v, sizeof(v), value);
	fprintf(f, "%s\t%s\n", key, v);
}

static void status_setting(const char *key, const char *value, void *arg)
{
	char k[96];

	snprintf(k, sizeof(k), "config.%s", key);
	status_text(arg, k, value);
}

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
	status_text(f, "config", d->o.config[0] ? d->o.config : "none");
	options_foreach(&d->o, status_setting, f);
	if (d->restart_pending[0])
		ADD("config.restart_needed\t%s", d->restart_pending);
	ADD("uptime_s\t%" PRId64, (clock__mono_ns() - d->started_ns) / 1000000000);
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
	ADD("drain_entries_lost\t%" PRIu64, sampler__drain_lost(d->sampler));
	ADD("bpf_prog_misses\t%" PRIu64, sampler__prog_misses(d->sampler));
	ADD("drains\t%" PRIu64, d->drains);
	ADD("drain_avg_us\t%" PRIu64, d->drains ? d->drain_ns_total / d->drains / 1000 : 0);
	ADD("drain_max_us\t%" PRIu64, d->drain_ns_max / 1000);
	{
		uint64_t m = 0;

		for (int i = 0; i < RECENT_DRAINS; i++)
			m = d->drain_ns_recent[i] > m ? d->drain_ns_recent[i] : m;
		ADD("drain_max_recent_us\t%" PRIu64, m / 1000);
	}
	ADD("windows_written\t%" PRIu64, d->windows_written);
	ADD("window_write_errors\t%" PRIu64, d->flush_errors);
	ADD("flush_requests\t%" PRIu64, d->flush_requests);
	ADD("flush_requests_coalesced\t%" PRIu64, d->flush_requests_coalesced);
	ADD("socket_requests_refused\t%" PRIu64, d->requests_refused);
	ADD("socket_busy\t%" PRIu64, server__busy(d->server));
	ADD("segments\t%" PRIu64, st.segments);
	ADD("bytes_on_disk\t%" PRIu64, st.bytes_on_disk);
	ADD("segments_removed\t%" PRIu64, st.segments_removed);
	ADD("segments_rolled_up\t%" PRIu64, st.rollups);
	ADD("windows_rolled_up\t%" PRIu64, st.windows_rolled);
	ADD("summaries_built\t%" PRIu64, st.summaries_built);
	ADD("summaries_without_pids\t%" PRIu64, st.summaries_no_pids);
	ADD("summaries_over_memory\t%" PRIu64, st.summaries_over_mem);
	ADD("days_built\t%" PRIu64, st.days_built);
	ADD("days_over_memory\t%" PRIu64, st.days_over_mem);
	ADD("summary_memory_peak_bytes\t%" PRIu64, st.summary_mem_peak);
	ADD("summary_pids_memory_peak_bytes\t%" PRIu64, st.summary_pids_mem_peak);
	ADD("offcpu\t%s", sampler__offcpu(d->sampler) > 0 ? "on" :
			  sampler__offcpu(d->sampler) ? "unavailable" : "off");
	ADD("kernel_map_bytes\t%" PRIu64, sampler__map_bytes(d->sampler));
	tables__print_status(d->tables, f);
	ADD("symbol_files_cached\t%" PRIu64, ss.files_cached);
	ADD("symbol_cache_bytes\t%" PRIu64, ss.file_bytes);
	ADD("symbol_pids_bytes\t%" PRIu64, ss.pid_bytes);
	ADD("symbol_maps_reads\t%" PRIu64, ss.maps_reads);
	ADD("symbol_miss_checks\t%" PRIu64, ss.miss_checks);
	ADD("symbol_prev_image_hits\t%" PRIu64, ss.prev_image_hits);
	ADD("symbol_file_hits\t%" PRIu64, ss.file_hits);
	ADD("symbol_file_misses\t%" PRIu64, ss.file_misses);
	ADD("symbol_file_evictions\t%" PRIu64, ss.file_evictions);
	ADD("symbol_pids_cached\t%" PRIu64, ss.pids_cached);
	ADD("symbol_bad_files\t%" PRIu64, ss.bad_files);
	ADD("symbol_jit_frames\t%" PRIu64, ss.jit_hits);
	ADD("symbol_perfmaps_rejected\t%" PRIu64, ss.perfmaps_rejected);
	ADD("cache_memory_bytes\t%" PRIu64, ss.cache_memory);
	ADD("cache_used_bytes\t%" PRIu64, ss.file_bytes + ss.pid_bytes);
	ADD("cache_file_cap_bytes\t%" PRIu64, ss.file_cap);
	ADD("cache_pid_cap_bytes\t%" PRIu64, ss.pid_cap);
	ADD("cache_files_refused\t%" PRIu64, ss.files_refused);
	ADD("cache_pids_refused\t%" PRIu64, ss.pids_refused);
	ADD("cache_perfmaps_capped\t%" PRIu64, ss.perfmaps_capped);
	ADD("cgroup_names_bytes\t%" PRIu64, cgroups__mem_bytes(d->cg));
	ADD("symbol_files_refused_pid\t%" PRIu64, ss.files_refused_pid);
	ADD("symbol_files_mismatched\t%" PRIu64, ss.files_mismatched);
	ADD("symbol_files_changed\t%" PRIu64, ss.files_changed);
	ADD("symbol_nonregular_refused\t%" PRIu64, ss.nonregular_refused);
	ADD("symbol_debug_deferred\t%" PRIu64, ss.debug_deferred);
	ADD("symbol_loads_async\t%" PRIu64, ss.loads_async);
	ADD("symbol_loads_inline_full\t%" PRIu64, ss.loads_inline_full);
	ADD("symbol_loads_waiting\t%" PRIu64, ss.loads_waiting);
	ADD("symbol_load_async_max_ms\t%" PRIu64, ss.load_async_max_ms);
	ADD("symbol_read_inline_max_ms\t%.1f", ss.read_inline_max_us / 1e3);
	ADD("loop_turn_max_ms\t%.1f", d->turn_ns_max / 1e6);
	ADD("loop_turns_over_50ms\t%" PRIu64, d->turns_over_50ms);
	ADD("flushes_held\t%" PRIu64, d->flushes_held);
	ADD("flushes_held_expired\t%" PRIu64, d->flushes_held_expired);
	events__print_status(d->events, f);
	pyprocs__print_status(d->py, f);
	{
		struct rusage ru;
		struct window_stats ws;
		struct mallinfo2 mi = mallinfo2();
		long pages = 0;
		FILE *sm = fopen("/proc/self/statm", "re");

		if (sm) {
			if (fscanf(sm, "%*d %ld", &pages) != 1)
				pages = 0;
			fclose(sm);
		}
		/*
		 * Memory by part: the window, the frame cache, the heap as malloc
		 * sees it (used and kept free).
		 */
		window__stats(d->win, &ws);
		ADD("window_bytes\t%zu", profile__mem_bytes(d->window));
		ADD("frame_cache_hits\t%" PRIu64, ws.frame_hits);
		ADD("frame_cache_misses\t%" PRIu64, ws.frame_misses);
		ADD("frame_cache_place_hits\t%" PRIu64, ws.place_hits);
		ADD("frame_cache_misses_unplaced\t%" PRIu64, ws.unplaced);
		ADD("frames_named_later\t%" PRIu64, ws.later_named);
		ADD("frames_later_unnamed\t%" PRIu64, ws.later_unnamed);
		ADD("frames_later_dropped\t%" PRIu64, ws.later_dropped);
		ADD("frames_later_waiting\t%" PRIu64, ws.later_waiting);
		ADD("heap_used_bytes\t%zu", mi.uordblks + mi.hblkhd);
		ADD("heap_free_bytes\t%zu", mi.fordblks);
		ADD("heap_trims\t%" PRIu64, d->trims);
		ADD("event_wakeups\t%" PRIu64, d->events_wakeups);
		ADD("event_ticks\t%" PRIu64, d->events_ticks);
		ADD("drain_entries\t%" PRIu64, d->drain_entries);
		ADD("drain_stacks\t%" PRIu64, d->drain_stacks);
		ADD("drain_cpu_ms\t%" PRId64, d->drain_cpu_ns / 1000000);
		ADD("flush_cpu_ms\t%" PRId64, d->flush_cpu_ns / 1000000);
		ADD("wakeups_drain_timer\t%" PRIu64, d->woke_drain);
		ADD("wakeups_flush_timer\t%" PRIu64, d->woke_flush);
		ADD("wakeups_process_events\t%" PRIu64, d->woke_events);
		ADD("wakeups_table_requests\t%" PRIu64, d->woke_tables);
		ADD("wakeups_event_ticks\t%" PRIu64, d->woke_tick);
		ADD("wakeups_other\t%" PRIu64, d->woke_other);
		ADD("rss_kb\t%ld", pages * (sysconf(_SC_PAGESIZE) / 1024));
		getrusage(RUSAGE_SELF, &ru);
		ADD("rss_max_kb\t%ld", ru.ru_maxrss);
		ADD("cpu_user_ms\t%ld", ru.ru_utime.tv_sec * 1000 + ru.ru_utime.tv_usec / 1000);
		ADD("cpu_sys_ms\t%ld", ru.ru_stime.tv_sec * 1000 + ru.ru_stime.tv_usec / 1000);
	}
	return fclose(f) ? -ENOMEM : 0;
}

static int reload(struct profd *d, char **reply);

#define REQ_FLUSH_GAP_MS 1000

static int flush_answer(struct profd *d, int err, char **reply)
{
	if (err)
		return asprintf(reply, "error\t%s\n", strerror(-err)) < 0 ? -ENOMEM : 0;
	return asprintf(reply, "ok\tflushed\nwindows_written\t%" PRIu64 "\n",
			d->windows_written) < 0 ? -ENOMEM : 0;
}

/* SERVER_DEFER: the window is held for names, the answer comes when it is written. */
static int flush_reply(struct profd *d, char **reply)
{
	int64_t now = clock__mono_ns();
	int err;

	if (d->flush_held && d->flush_hold_until_ns > now + REQ_FLUSH_HOLD_NS)
		d->flush_hold_until_ns = now + REQ_FLUSH_HOLD_NS;
	err = flush_window(d, false);
	d->req_flush_ms = now / 1000000;
	if (!err && d->flush_held) {
		if (d->flush_hold_until_ns > now + REQ_FLUSH_HOLD_NS)
			d->flush_hold_until_ns = now + REQ_FLUSH_HOLD_NS;
		d->req_flush_held = true;
		return SERVER_DEFER;
	}
	return flush_answer(d, err, reply);
}

static void answer_deferred(struct profd *d, int err)
{
	char *reply = NULL;

	if (flush_answer(d, err, &reply))
		reply = NULL;
	server__answer_deferred(d->server, reply ? reply : "error\tout of memory\n");
	free(reply);
}

/* A held window is asked again at each drain tick; the timer's flush too. */
static void flush_retry(struct profd *d)
{
	int err = flush_window(d, false);

	if (!d->flush_held && d->req_flush_held) {
		d->req_flush_held = false;
		d->req_flush_waiting = false;
		answer_deferred(d, err);
	}
}

/*
 * A flush asked less than REQ_FLUSH_GAP_MS after the last asked one waits
 * for the next, which every request in between shares: a flood of requests
 * writes a window a second, and each caller still gets what was sampled
 * before it asked.
 */
static int flush_request(struct profd *d, char **reply)
{
	int64_t now = clock__mono_ns() / 1000000;
	int64_t wait = d->req_flush_ms + REQ_FLUSH_GAP_MS - now;
	struct itimerspec its = { 0 };

	d->flush_requests++;
	if (d->req_flush_waiting || d->req_flush_held) {
		d->flush_requests_coalesced++;
		return SERVER_DEFER;
	}
	if (!d->req_flush_ms || wait <= 0 || d->req_tfd < 0)
		return flush_reply(d, reply);
	its.it_value.tv_sec = wait / 1000;
	its.it_value.tv_nsec = wait % 1000 * 1000000;
	if (timerfd_settime(d->req_tfd, 0, &its, NULL))
		return flush_reply(d, reply);
	d->req_flush_waiting = true;
	d->flush_requests_coalesced++;
	return SERVER_DEFER;
}

static void flush_deferred(struct profd *d)
{
	char *reply = NULL;
	int err;

	d->req_flush_waiting = false;
	err = flush_reply(d, &reply);
	if (err == SERVER_DEFER) {
		d->req_flush_waiting = true;
		return;
	}
	if (err)
		reply = NULL;
	server__answer_deferred(d->server, reply ? reply : "error\tout of memory\n");
	free(reply);
}

static int handle(const char *req, uid_t uid, char **reply, void *arg)
{
	struct profd *d = arg;

	if (!strcmp(req, "status"))
		return status_reply(d, reply);
	/* Only root changes what profd does; the socket's group may look. */
	if ((!strcmp(req, "flush") || !strcmp(req, "reload")) && uid) {
		d->requests_refused++;
		return asprintf(reply, "error\tpermission denied: %s is for root (uid 0); 'status' "
			       "is open to the socket's group\n", req) < 0 ? -ENOMEM : 0;
	}
	if (!strcmp(req, "flush"))
		return flush_request(d, reply);
	if (!strcmp(req, "reload"))
		return reload(d, reply);
	return asprintf(reply, "error\tunknown request '%.64s' (try status, flush, reload)\n",
			req) < 0 ? -ENOMEM : 0;
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

/* ---- service: lock, socket group, watchdog, STATUS=, hotplug, reload ---- */

static struct store_opts store_opts(const struct profd_opts *o)
{
	struct group *g = *o->state_group ? getgrnam(o->state_group) : NULL;

	return (struct store_opts){
		.dir = o->state_dir, .writer = 1, .zstd_level = o->zstd_level,
		.max_age_ns = o->retention_ns, .max_bytes = o->max_disk, .no_rollup = !o->rollup,
		.named_age_ns = o->rollup_by_name_ns ? o->rollup_by_name_ns : -1,
		.rollup_pressure_pct = o->rollup_pressure ? (int)o->rollup_pressure : -1,
		.summary_mem_max = o->summary_memory,
		.value_unit_ns = 1000, /* off-CPU and run-queue times in microseconds */
		.calls_by_function = !o->call_pcs,
		.leaf_by_function = !o->call_pcs && !o->leaf_pcs,
		.runq_entry_frame = o->runqueue_stack == RUNQ_STACK_ENTRY,
		.group_read = g != NULL, .group_gid = g ? g->gr_gid : 0,
		.warn = store_warn,
	};
}

static int take_lock(struct profd *d)
{
	pid_t holder;
	int err = pidlock__take(d->o.state_dir, &d->lock, &holder);

	if (err == -EBUSY)
		return log_err(err, "another profd (pid %d) is using %s; stop it first or give "
			       "this one another --state-dir", (int)holder, d->o.state_dir);
	if (err == -ELOOP)
		return log_err(err, "state directory %s is a symbolic link; refusing it: give "
			       "--state-dir the directory itself", d->o.state_dir);
	if (err)
		return log_err(err, "state directory %s is not writable: %s; check its permissions "
			       "and mount (or pick one with --state-dir)", d->o.state_dir,
			       strerror(-err));
	return 0;
}

/*
 * The socket is 0660, profd's user and group (root:root when profd runs as
 * root; root reaches it either way); a configured group may use it too.
 */
static int socket_group(struct profd *d, const char *name)
{
	gid_t gid = getegid();

	if (*name) {
		struct group *g = getgrnam(name);

		if (!g)
			return log_err(-ENOENT, "socket-group: no group named '%s'", name);
		gid = g->gr_gid;
	}
	if (chown(d->o.socket, (uid_t)-1, gid) || chmod(d->o.socket, 0660))
		return log_err(-errno, "cannot give %s to group %s: %s%s", d->o.socket,
			       *name ? name : "profd's own", strerror(errno),
			       errno == EPERM && *name ?
			       " (add the group to the unit's SupplementaryGroups=)" : "");
	return 0;
}

/* Binding unlinks a stale socket first; a live one belongs to another profd. */
static int socket_in_use(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, used;

	if (strlen(path) >= sizeof(sa.sun_path))
		return 0;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	used = !connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	close(fd);
	return used;
}

static int timer_set(int fd, int64_t interval_ns)
{
	struct itimerspec its = {
		.it_interval = { interval_ns / 1000000000, interval_ns % 1000000000 },
		.it_value = { interval_ns / 1000000000, interval_ns % 1000000000 },
	};

	return timerfd_settime(fd, 0, &its, NULL) ? -errno : 0;
}

/* Pings at half of WatchdogSec from the event loop, so a stuck loop is what systemd sees. */
static int watchdog_open(struct profd *d)
{
	int64_t wd = notify_watchdog_ns();

	if (!wd)
		return 0;
	log_debug("systemd watchdog: %" PRId64 " ms; pinging every %" PRId64 " ms", wd / 1000000,
		  wd / 2000000);
	notify_send("WATCHDOG=1");
	return timer_open(d->epfd, wd / 2, &d->wd_tfd);
}

static void notify_status(struct profd *d)
{
	int64_t now = clock__mono_ns();
	struct store_stats st;
	double rate = 0;

	store__stats(d->store, &st);
	if (d->status_ns && now > d->status_ns)
		rate = (double)(d->samples_total - d->status_samples) * 1e9 /
		       (double)(now - d->status_ns);
	d->status_ns = now;
	d->status_samples = d->samples_total;
	notify_sendf("STATUS=sampling %u CPUs at %u Hz (%s), %.0f samples/s; %" PRIu64 " windows, "
		     "%.1f MiB on disk",
		     sampler__ncpus(d->sampler), d->o.frequency, sampler__event(d->sampler), rate,
		     d->windows_written, (double)st.bytes_on_disk / (1 << 20));
}

static void refresh_cpus(struct profd *d)
{
	static int64_t last_warn;
	int n = sampler__refresh_cpus(d->sampler);

	if (n > 0)
		log_info("%d CPU(s) came back online: sampling %u CPUs again", n,
			 sampler__ncpus(d->sampler));
	else if (n < 0)
		log_ratelimited(&last_warn, 600000000000LL, LOG_LVL_WARN,
				"cannot check for CPU hotplug: %s", strerror(-n));
}

struct reload_log {
	char *pending;
	size_t len;
};

static void reload_change(const char *key, const char *old, const char *new, int live, void *arg)
{
	struct reload_log *r = arg;
	size_t n = strlen(r->pending);

	if (live) {
		log_info("reload: %s %s -> %s", key, *old ? old : "none", *new ? new : "none");
		return;
	}
	log_warn("reload: %s %s -> %s needs a restart; still using %s", key, *old ? old : "none",
		 *new ? new : "none", *old ? old : "none");
	snprintf(r->pending + n, r->len - n, "%s%s", n ? "," : "", key);
}

/*
 * Re-reads the config file (and the flags given at start, which still win)
 * and applies what can change live. The open window is never dropped: a new
 * frequency closes it first, so each stored window has one frequency.
 */
static int reload(struct profd *d, char **reply)
{
	struct profd_opts n, old = d->o;
	char err[512], pending[256] = "";
	struct reload_log rl = { pending, sizeof(pending) };
	int ret;

	options_defaults(&n);
	ret = options_load(&n, d->argc, d->argv, err, sizeof(err));
	if (ret) {
		log_err(-EINVAL, "reload refused, keeping the running configuration: %s", err);
		return asprintf(reply, "error\t%s\n", err) < 0 ? -ENOMEM : 0;
	}
	options_diff(&d->o, &n, reload_change, &rl);

	snprintf(d->o.config, sizeof(d->o.config), "%s", n.config);
	if (n.frequency != old.frequency) {
		if (flush(d))
			log_warn("reload: the window before the frequency change could not be "
				 "written");
		ret = sampler__set_frequency(d->sampler, n.frequency);
		if (ret) {
			log_err(ret, "reload: cannot sample at %u Hz (%s); staying at %u Hz (see "
				"kernel.perf_event_max_sample_rate)", n.frequency, strerror(-ret),
				old.frequency);
		} else {
			d->o.frequency = n.frequency;
			profile__meta(d->window)->frequency = n.frequency;
		}
	}
	if (n.flush_interval_ns != old.flush_interval_ns &&
	    !timer_set(d->flush_tfd, n.flush_interval_ns))
		d->o.flush_interval_ns = n.flush_interval_ns;
	if (n.drain_interval_ns != old.drain_interval_ns &&
	    !timer_set(d->drain_tfd, n.drain_interval_ns))
		d->o.drain_interval_ns = n.drain_interval_ns;
	if (n.retention_ns != old.retention_ns || n.max_disk != old.max_disk ||
	    n.zstd_level != old.zstd_level || n.rollup != old.rollup ||
	    n.rollup_pressure != old.rollup_pressure) {
		struct store_opts to;
		struct store *st;

		/* The store has no setters: re-open it (our pid lock keeps the directory ours). */
		d->o.retention_ns = n.retention_ns;
		d->o.max_disk = n.max_disk;
		d->o.zstd_level = n.zstd_level;
		d->o.rollup = n.rollup;
		d->o.rollup_pressure = n.rollup_pressure;
		to = store_opts(&d->o);
		store__close(d->store);
		d->store = NULL;
		ret = store__open(&to, &st);
		if (ret) {
			log_err(ret, "reload: cannot re-open %s with the new retention (%s); "
				"keeping the old one", d->o.state_dir, strerror(-ret));
			d->o.retention_ns = old.retention_ns;
			d->o.max_disk = old.max_disk;
			d->o.zstd_level = old.zstd_level;
			d->o.rollup = old.rollup;
			d->o.rollup_pressure = old.rollup_pressure;
			to = store_opts(&d->o);
			ret = store__open(&to, &st);
		}
		if (ret) {
			log_err(ret, "cannot re-open %s: %s; stopping", d->o.state_dir,
				strerror(-ret));
			d->stop = 1;
			return asprintf(reply, "error\tstate directory lost: %s\n",
					strerror(-ret)) < 0 ? -ENOMEM : 0;
		}
		d->store = st;
		store__retain(d->store, clock__ns(CLOCK_REALTIME));
	}
	if (strcmp(n.socket_group, old.socket_group) && !socket_group(d, n.socket_group))
		snprintf(d->o.socket_group, sizeof(d->o.socket_group), "%s", n.socket_group);
	if (n.log_level != old.log_level) {
		d->o.log_level = n.log_level;
		log_set_level(n.log_level);
	}
	snprintf(d->restart_pending, sizeof(d->restart_pending), "%s", pending);
	log_info("configuration reloaded from %s%s%s",
		 d->o.config[0] ? d->o.config : "defaults and flags",
		 pending[0] ? "; restart to apply: " : "", pending);
	notify_status(d);
	return asprintf(reply, "ok\treloaded\nconfig\t%s\nrestart_needed\t%s\n",
			d->o.config[0] ? d->o.config : "none",
			pending[0] ? pending : "none") < 0 ? -ENOMEM : 0;
}

/* One line per file: it stays cached as bad, so this is not called for it again. */
static void bad_file(void *arg, uint32_t pid, const char *path, int err)
{
	(void)arg;
	log_warn("cannot read symbols from %s (mapped by pid %u): %s; its frames show as [module+0xOFF]", path, pid,
		 err == -EFBIG ? "over the size limits" : err == -ENOEXEC ? "not an ELF file" : "malformed ELF");
}

/* Per process, so a test can count the reads of its own processes among the host's. */
static void maps_read(void *arg, uint32_t pid)
{
	(void)arg;
	log_debug("read /proc/%u/maps for symbols", pid);
}

/*
 * A new program's tables are read at its exec and again once ld.so mapped its libraries, from the
 * symbolizer's captures: its first samples need not wait for a request from the walker.
 */
static void maps_to_tables(const struct events_image *im, void *arg)
{
	struct profd *d = arg;

	if (d->tables && im->written)
		tables__exec_written(d->tables, im->pid, im->maps);
	else if (d->tables)
		tables__exec(d->tables, im->pid, im->exec, im->start_time, im->start_code, im->maps);
	if (d->py && im->maps)
		pyprocs__maps(d->py, im->pid, im->start_code, im->maps, im->exec > 0);
}

/*
 * The walker met a pc outside a process's mappings (a library ld.so mapped
 * after the re-capture, dlopen): one read serves the symbolizer (whose
 * names would otherwise miss the library once the process exited) and the
 * tables, through maps_to_tables.
 */
static void reread_to_events(uint32_t pid, uint64_t start_time, uint64_t start_code, void *arg)
{
	events__recapture(arg, pid, start_time, start_code);
}

/* An exited process's entry goes at once: on a host exec'ing hundreds a second, slots would run out before gc. */
static void exit_to_tables(uint32_t pid, uint64_t time_ns, void *arg)
{
	struct profd *d = arg;

	if (d->tables)
		tables__exit(d->tables, pid, time_ns);
	if (d->py)
		pyprocs__exit(d->py, pid, time_ns);
}

/* Test mode: snapshots for tests/tools/unwind_check, which unwinds them again with libunwind. */
static void snapshot_write(const struct profd_uevent *ev, void *arg)
{
	const struct profd *d = arg;
	int err = usnap__write(d->snap_fd, ev);

	if (err)
		log_debug("cannot write a snapshot of pid %u: %s", ev->pid, strerror(-err));
}

static int setup(struct profd *d)
{
	struct sampler_opts so = {
		.frequency = d->o.frequency,
		.counts_entries = d->o.counts_entries,
		.stacks_entries = d->o.stacks_entries,
		.offcpu = d->o.offcpu,
		.offcpu_min_ns = d->o.offcpu_min_ns,
		.offcpu_stack_interval_ns = d->o.offcpu_stack_interval_ns,
		.offcpu_pids = d->o.offcpu_pids,
		.offcpu_cgroups = d->o.offcpu_cgroups,
		.offcpu_sample = d->o.offcpu_sample,
		.offcpu_max_rate = d->o.offcpu_max_rate,
		.runq_user_stack = d->o.runqueue_stack == RUNQ_STACK_USER,
	};
	struct symbolizer_opts yo = { .max_files = d->o.max_files, .max_file_bytes = d->o.symbol_cache,
				      .max_pids = d->o.max_pids, .cache_memory = d->o.cache_memory,
				      .bad_file = bad_file, .maps_read = maps_read };
	struct store_opts to = store_opts(&d->o);
	struct epoll_event ev = { .events = EPOLLIN };
	struct pyprocs_fds pyfds;
	const char *snap_path = NULL;
	uint32_t snap_pid = 0;
	char err_msg[256] = "";
	sigset_t mask;
	int err;

	uname(&d->uts);
	d->frames_buf = calloc(PROFD_MAX_DEPTH, sizeof(*d->frames_buf));
	if (!d->frames_buf || profile__new(&d->window))
		return log_err(-ENOMEM, "out of memory");

	mkdir_parent(d->o.state_dir);
	err = take_lock(d);
	if (err)
		return err;
	err = store__open(&to, &d->store);
	if (err)
		return log_err(err, "cannot open state directory %s: %s; check that it is "
			       "writable by profd (or pick one with --state-dir)", d->o.state_dir,
			       strerror(-err));
	if (procreg__new(0, 0, &d->reg) || filecache__new(&d->files))
		return log_err(-ENOMEM, "out of memory");
	yo.registry = d->reg;
	yo.files = d->files;
	if (symbolizer__new(&yo, &d->sym) || cgroups__new(NULL, &d->cg) ||
	    window__new(d->window,
			&(struct window_syms){ sym_user, sym_kernel, d->sym, sym_place, sym_later },
			&d->win))
		return log_err(-ENOMEM, "out of memory");

	/* tp_btf programs and CO-RE relocations cannot load without the kernel's BTF. */
	if (access("/sys/kernel/btf/vmlinux", R_OK))
		return log_err(-ENOENT, "no kernel BTF at /sys/kernel/btf/vmlinux (%s): profd "
			       "needs a kernel built with CONFIG_DEBUG_INFO_BTF=y",
			       strerror(errno));
	/* Loading and verifying the programs can outlast TimeoutStartSec on a busy host. */
	notify_send("EXTEND_TIMEOUT_USEC=60000000");
	/* DWARF unwinding */
	if (d->o.unwind_snapshots[0])
		options_snapshots(d->o.unwind_snapshots, &snap_pid, &snap_path);
	so.unwind = (struct tables_opts){ .enabled = d->o.unwind != UNWIND_FP,
					  .max_bytes = d->o.unwind_memory, .max_pids = d->o.max_pids,
					  .snapshot_pid = snap_pid };
	err = sampler__open(&so, &d->sampler, err_msg, sizeof(err_msg));
	if (err && so.unwind.enabled && d->o.unwind == UNWIND_AUTO && err != -EPERM &&
	    err != -EACCES) {
		char why[sizeof(err_msg)];

		/* Warn only when the fallback runs: a start-up failure stays one line. */
		snprintf(why, sizeof(why), "%s", err_msg);
		so.unwind.enabled = 0;
		err = sampler__open(&so, &d->sampler, err_msg, sizeof(err_msg));
		if (!err)
			log_warn("DWARF unwinding unavailable (%s); walking user stacks by frame "
				 "pointers", why);
	}
	if (err)
		return log_err(err, "%s", err_msg);
	if (sampler__offcpu(d->sampler) < 0)
		log_warn("off-CPU profiling unavailable (%s); on-CPU profiles only",
			 sampler__offcpu_why(d->sampler));
	/* Without exec/exit events short-lived processes go unnamed; the rest still is. */
	pyprocs__share(sampler__skel(d->sampler), &pyfds);
	err = events__open(d->sym, d->reg, d->files, &pyfds,
			   so.unwind.enabled ? sampler__umaps_fd(d->sampler) : -1,
			   &d->events);
	if (err)
		log_warn("process exec/exit events unavailable (%s): processes that live less than "
			 "a drain interval may show unnamed frames", strerror(-err));
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
		return log_err(-errno, "cannot set up the event loop: %s", strerror(errno));
	if ((err = timer_open(d->epfd, d->o.drain_interval_ns, &d->drain_tfd)) ||
	    (err = timer_open(d->epfd, d->o.flush_interval_ns, &d->flush_tfd)))
		return log_err(err, "cannot create timers: %s", strerror(-err));
	d->req_tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	ev.data.ptr = &d->req_tfd;
	if (d->req_tfd < 0 || epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->req_tfd, &ev))
		return log_err(-errno, "cannot create timers: %s", strerror(errno));
	ev.events = EPOLLIN | EPOLLONESHOT;
	ev.data.ptr = &d->events;
	if (d->events && epoll_ctl(d->epfd, EPOLL_CTL_ADD, events__fd(d->events), &ev))
		return log_err(-errno, "cannot watch process events: %s", strerror(errno));
	/* DWARF unwinding: the walker's load requests arrive on a ring buffer. */
	if (so.unwind.enabled) {
		so.unwind.exit_events = d->events != NULL;
		err = tables__new(sampler__skel(d->sampler), &so.unwind, &d->tables);
		if (!err)
			err = tables__use_registry(d->tables, d->reg, d->files);
		ev = (struct epoll_event){ .events = EPOLLIN | EPOLLONESHOT, .data.ptr = d->tables };
		if (err || epoll_ctl(d->epfd, EPOLL_CTL_ADD, tables__fd(d->tables), &ev))
			return log_err(err ? err : -errno, "cannot set up DWARF unwind tables: %s",
				       strerror(err ? -err : errno));
		if (d->events) {
			uint64_t *seq = NULL;
			int fd = events__ufiles(d->events, &seq);

			tables__on_reread(d->tables, reread_to_events, d->events);
			tables__exec_delay(d->tables, events__exec_delay_ns(d->events));
			tables__share_ufiles(d->tables, fd, seq);
		}
		if (snap_pid) {
			d->snap_fd = open(snap_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND |
					  O_CLOEXEC, 0644);
			if (d->snap_fd < 0)
				return log_err(-errno, "cannot create %s: %s", snap_path,
					       strerror(errno));
			tables__on_snapshot(d->tables, snapshot_write, d);
			log_info("snapshots of pid %u go to %s", snap_pid, snap_path);
		}
	}

	/* CPython frames: without them Python processes keep their native frames. */
	struct pyprocs_hook_opts hook = { d->o.python_free_hook, d->o.python_free_hook_after_ns,
					  d->o.python_free_hook_max_rate };

	if ((err = pyprocs__new(sampler__skel(d->sampler), d->reg, d->files, &hook, &d->py)))
		log_warn("Python frames unavailable: %s", strerror(-err));
	if (d->events) {
		events__on_maps(d->events, maps_to_tables, d);
		events__on_exit(d->events, exit_to_tables, d);
	}

	mkdir_parent(d->o.socket);
	if (socket_in_use(d->o.socket))
		return log_err(-EADDRINUSE, "another process is listening on %s; stop it or pick "
			       "another path with --socket", d->o.socket);
	err = server__open(d->o.socket, d->epfd, handle, d, &d->server);
	if (err)
		return log_err(err, "cannot listen on %s: %s; pick another path with --socket",
			       d->o.socket, strerror(-err));
	if ((err = socket_group(d, d->o.socket_group)))
		return err;
	if ((err = watchdog_open(d)))
		return log_err(err, "cannot create the watchdog timer: %s", strerror(-err));
	return 0;
}

static void teardown(struct profd *d)
{
	server__free(d->server);
	if (d->wd_tfd >= 0)
		close(d->wd_tfd);
	tables__free(d->tables);
	if (d->snap_fd >= 0)
		close(d->snap_fd);
	pyprocs__free(d->py);
	sampler__free(d->sampler);
	store__close(d->store);
	events__free(d->events);
	symbolizer__free(d->sym);
	procreg__free(d->reg);
	filecache__free(d->files);
	cgroups__free(d->cg);
	profile__free(d->window);
	free(d->frames_buf);
	window__free(d->win);
	if (d->epfd > 0)
		close(d->epfd);
	pidlock__free(d->lock);
}

static void on_signal(struct profd *d)
{
	struct signalfd_siginfo si;

	while (read(d->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			char *reply = NULL;

			reload(d, &reply);
			free(reply);
		} else
			d->stop = 1;
	}
}

/*
 * Process events and the walker's requests wake the loop, and a wake-up
 * costs far more than its work: 70-180 µs of CPU on a virtual machine
 * (a world switch each way), a hundred system calls. A host starting 150
 * processes a second woke profd about twice per exec (the exec, a
 * re-capture, a table request). Both sources are watched one-shot; while
 * they bring two things or more per EVENTS_GAP_NS (the rate estimated
 * over the last turns), they stay muted and are handled together once
 * per EVENTS_GAP_NS (a tick). A lone exec is handled at once; under a
 * stream of them each waits up to that long, beside the kernel's wait of
 * up to 20 ms for ld.so (the exec event lists the mappings either way).
 */
#define EVENTS_GAP_NS (20 * 1000000LL)
/*
 * Things per gap, estimated, from which the sources are ticked, and below
 * which watched again: a tick that finds one thing is a wake-up like the
 * one it saved, and one that finds nothing is lost.
 */
#define TICK_ENTER 2.0
#define TICK_LEAVE 1.0

static void watch(struct profd *d, int fd, void *tag, bool on)
{
	struct epoll_event ev = { .events = (on ? EPOLLIN : 0) | EPOLLONESHOT, .data.ptr = tag };

	if (fd >= 0 && epoll_ctl(d->epfd, EPOLL_CTL_MOD, fd, &ev))
		log_ratelimited(&d->last_write_warn_ns, 60000000000LL, LOG_LVL_WARN,
				"cannot watch process events: %s", strerror(errno));
}

/*
 * Exec events first: their captures serve the walker's requests for new
 * processes. Updates the estimate of things per gap.
 */
static void events_turn(struct profd *d, int64_t now)
{
	int64_t dt = now - d->events_turn_ns;
	int n = 0, r;

	if (d->events && (r = events__dispatch(d->events)) > 0)
		n += r;
	/*
	 * The walker's requests come with the exec events that share a
	 * wake-up (most wake nobody): one thing, however many, or the rate
	 * would call for ticks the shared wake-ups already make.
	 */
	if (d->tables && (r = tables__poll(d->tables)) > 0)
		n++;
	/* A turn after a long quiet one says little about the rate: the gap bounds it. */
	if (dt < EVENTS_GAP_NS)
		dt = EVENTS_GAP_NS;
	d->events_per_gap += ((double)n * EVENTS_GAP_NS / (double)dt - d->events_per_gap) / 4;
	d->events_turn_ns = now;
}

/*
 * Muted by its wake-up, a source is watched again unless the rate says
 * tick; the other, if it did not fire, is muted when it does (a tick then
 * serves it).
 */
static void events_woke(struct profd *d, bool ev_fired, bool tab_fired)
{
	int64_t now = clock__mono_ns();
	bool tick;

	d->events_wakeups++;
	events_turn(d, now);
	tick = d->events_per_gap >= TICK_ENTER;
	if (tick)
		d->events_tick_ns = now + EVENTS_GAP_NS;
	if (d->events && ev_fired != tick)
		watch(d, events__fd(d->events), &d->events, !tick);
	if (d->tables && tab_fired != tick)
		watch(d, tables__fd(d->tables), d->tables, !tick);
}

static void events_tick(struct profd *d)
{
	int64_t now = clock__mono_ns();

	d->events_ticks++;
	events_turn(d, now);
	if (d->events_per_gap >= TICK_LEAVE) {
		d->events_tick_ns = now + EVENTS_GAP_NS;
		return;
	}
	d->events_tick_ns = 0;
	if (d->events)
		watch(d, events__fd(d->events), &d->events, true);
	if (d->tables)
		watch(d, tables__fd(d->tables), d->tables, true);
}

static int loop(struct profd *d)
{
	struct epoll_event evs[16];
	uint64_t ticks;
	int64_t t0;

	while (!d->stop) {
		int64_t wait = -1;
		bool ev_fired = false, tab_fired = false;
		int n;

		if (d->events_tick_ns) {
			wait = (d->events_tick_ns - clock__mono_ns() + 999999) / 1000000;
			wait = wait < 0 ? 0 : wait;
		}
		if (d->flush_held) {
			int64_t held = (d->flush_retry_ns - clock__mono_ns() + 999999) / 1000000;

			held = held < 0 ? 0 : held;
			wait = wait < 0 || held < wait ? held : wait;
		}
		n = epoll_wait(d->epfd, evs, 16, (int)wait);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		t0 = clock__mono_ns();
		for (int i = 0; i < n; i++) {
			void *tag = evs[i].data.ptr;

			if (tag == &d->sigfd) {
				d->woke_other++;
				on_signal(d);
			} else if (tag == &d->drain_tfd) {
				d->woke_drain++;
				if (read(d->drain_tfd, &ticks, sizeof(ticks)) > 0) {
					if (d->flush_held)
						flush_retry(d);
					else
						drain(d);
				}
				if (d->tables)
					tables__gc(d->tables);
				server__reap(d->server, clock__mono_ns() / 1000000);
				refresh_cpus(d);
			} else if (tag == &d->flush_tfd) {
				d->woke_flush++;
				if (read(d->flush_tfd, &ticks, sizeof(ticks)) > 0)
					flush_retry(d);
				notify_status(d);
			} else if (tag == &d->events) {
				d->woke_events++;
				ev_fired = true;
			} else if (d->tables && tag == d->tables) {
				d->woke_tables++;
				tab_fired = true;
			} else if (tag == &d->req_tfd) {
				d->woke_other++;
				if (read(d->req_tfd, &ticks, sizeof(ticks)) > 0)
					flush_deferred(d);
			} else if (tag == &d->wd_tfd) {
				d->woke_other++;
				if (read(d->wd_tfd, &ticks, sizeof(ticks)) > 0)
					notify_send("WATCHDOG=1");
			} else {
				d->woke_other++;
				server__dispatch(d->server, tag, evs[i].events);
			}
		}
		d->woke_tick += n == 0;
		if (d->flush_held && clock__mono_ns() >= d->flush_retry_ns)
			flush_retry(d);
		/* One turn serves both sources; one that fires while muted waits for the tick. */
		if ((ev_fired || tab_fired) && !d->events_tick_ns)
			events_woke(d, ev_fired, tab_fired);
		else if (d->events_tick_ns && clock__mono_ns() >= d->events_tick_ns)
			events_tick(d);
		t0 = clock__mono_ns() - t0;
		if (t0 > d->turn_ns_max)
			d->turn_ns_max = t0;
		d->turns_over_50ms += t0 > 50 * 1000000LL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct profd d = { .epfd = -1, .sigfd = -1, .drain_tfd = -1, .flush_tfd = -1, .wd_tfd = -1,
			   .req_tfd = -1, .snap_fd = -1, .argc = argc, .argv = argv };
	int err;

	/*
	 * Fixed thresholds turn off glibc's sliding ones: after a large block
	 * (a big binary's symbols) is freed, glibc would raise the mmap threshold
	 * to its size and serve the next ones from the heap, whose free middle it
	 * never returns. Symbol tables and drain buffers then get their own
	 * mappings, unmapped when freed.
	 */
	mallopt(M_MMAP_THRESHOLD, 128 << 10);
	mallopt(M_TRIM_THRESHOLD, 1 << 20);
	options_defaults(&d.o);
	err = options_parse(&d.o, argc, argv);
	if (err)
		return err > 0 ? 0 : 2;
	log_init(d.o.log_level);
	{
		sigset_t mask;

		/*
		 * Queued from the start, not fatal: a SIGHUP or SIGTERM while BPF loads
		 * waits for the loop. A shell starts background jobs with SIGINT
		 * ignored, and an ignored signal never reaches a signalfd: reset first.
		 */
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		sigemptyset(&mask);
		sigaddset(&mask, SIGTERM);
		sigaddset(&mask, SIGINT);
		sigaddset(&mask, SIGHUP);
		sigprocmask(SIG_BLOCK, &mask, NULL);
	}
	d.started_ns = clock__mono_ns();

	err = setup(&d);
	if (err) {
		teardown(&d);
		return 1;
	}
	log_info("sampling %u CPUs at %u Hz with %s; windows every %" PRId64 "s to %s; socket %s",
		 sampler__ncpus(d.sampler), d.o.frequency, sampler__event(d.sampler),
		 d.o.flush_interval_ns / 1000000000, d.o.state_dir, d.o.socket);
	notify_send("READY=1");
	notify_status(&d);

	err = loop(&d);
	notify_send("STOPPING=1");
	if (flush(&d))
		log_warn("the last window could not be written");
	log_info("stopped after writing %" PRIu64 " windows", d.windows_written);
	teardown(&d);
	return err ? 1 : 0;
}
