/* Which samples a user asked for: time range, pids, comm glob, cgroup, type. */
#ifndef PROFD_QUERY_H
#define PROFD_QUERY_H

#include <stddef.h>
#include <stdint.h>

struct profile;
struct pf_sample;

enum query_type {
	QUERY_CPU = 0,    /* on-CPU samples */
	QUERY_OFFCPU = 1, /* blocked time, microseconds */
	QUERY_RUNQ = 2,   /* waiting for a CPU, microseconds */
	QUERY_WALL = 3,   /* on-CPU time + blocked + waiting, microseconds */
};

struct query {
	int64_t since_ns, until_ns; /* [since, until), CLOCK_REALTIME */
	const uint32_t *pids;
	size_t npids;
	const char *comm;   /* exact name or fnmatch glob; NULL: any */
	const char *cgroup; /* path prefix ("/system.slice") or unit ("nginx.service"); NULL: any */
	int type;           /* enum query_type */
	int threads;        /* thread name after the process name */
	int no_kernel;      /* drop kernel frames */
};

int query__parse_type(const char *s, int *type);
const char *query__type_name(int type);
/* Matches one sample's labels and kind; a profile_keep_fn for profile__merge. */
int query__keep(const struct profile *p, const struct pf_sample *s, void *query);
int query__cgroup_match(const char *path, const char *want);

#endif
