/*
 * Processes waiting for a read of their mappings (the unwind tables' loads),
 * one request per process. Hot requests come from the walker (a process
 * sampled now, losing frames until it is read) and are served first, oldest
 * first. The others (at exec, planned re-reads) are served newest first and
 * dropped once older than max_age or beyond max_cold: on a host exec'ing
 * hundreds of processes a second most are gone before their turn, and one
 * that runs long enough to be sampled asks again, hot. A young request (the
 * walker's first for a process) waits up to grace for the mappings its exec
 * event brings, rather than read /proc itself. One that lingers (it loses
 * nothing by waiting: the walker has its parent's tables meanwhile) is
 * served by the first serve after its grace, but is not due one before
 * linger: a loop that serves at its other wake-ups serves it then.
 */
#ifndef PROFD_LOADQ_H
#define PROFD_LOADQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct loadq;
struct procmaps;

struct loadq_req {
	uint32_t pid;
	bool exec;           /* asked at exec: read again once ld.so mapped the libraries */
	bool hot;            /* asked by the walker */
	bool young;          /* the walker's first request for the process */
	bool snapshot;       /* pm is the registry's snapshot, not read for this request: young, it waits all the same */
	bool linger;         /* young, and nothing lost while it waits: due a serve only after linger */
	int64_t queued;      /* when it was made (loadq__add sets it) */
	struct procmaps *pm; /* the mappings process events read; NULL: read them */
	uint64_t start_time, start_code; /* with pm, from the exec event; 0: read /proc/PID/stat */
};

struct loadq_opts {
	size_t max;              /* requests waiting at most; 0: 1024 */
	size_t max_cold;         /* of them, not hot; 0: 256 */
	int64_t cold_max_age_ns; /* 0: one second */
	int64_t grace_ns;        /* how long a young request waits for its mappings */
	int64_t linger_ns;       /* how long one that lingers may wait for a serve (at least grace) */
};

int loadq__new(const struct loadq_opts *o, struct loadq **out);
void loadq__free(struct loadq *q);
void loadq__set_grace(struct loadq *q, int64_t ns);

/*
 * A request made at now (a reference to r->pm is taken), merged with the
 * one waiting for that pid: its kinds add up, the newest mappings win.
 * stale: the walker met a pc outside the mappings known, so a read now is
 * needed (mappings waiting are dropped, and it no longer waits). 0, or
 * -ENOSPC / -ENOMEM (not queued).
 */
int loadq__add(struct loadq *q, const struct loadq_req *r, bool stale, int64_t now);
/* The process exited: its request goes. */
void loadq__cancel(struct loadq *q, uint32_t pid);
bool loadq__has(const struct loadq *q, uint32_t pid);
size_t loadq__count(const struct loadq *q);

/*
 * Hands fn the requests that can be served at now, in their order, until
 * it returns non-zero (its time is spent); each leaves the queue (pm is
 * released after the call). Cold requests too old are dropped, not served.
 * fn may add requests. Returns whether some that can be served remain.
 */
typedef int (*loadq_serve_fn)(const struct loadq_req *r, void *arg);
bool loadq__serve(struct loadq *q, int64_t now, loadq_serve_fn fn, void *arg);
/* When the first young request waiting at now is due a serve (linger: at the latest); 0: none waits. */
int64_t loadq__wake_at(const struct loadq *q, int64_t now);
/* Cold requests dropped: too many at once, or too old by their turn. */
uint64_t loadq__dropped(const struct loadq *q);

#endif
