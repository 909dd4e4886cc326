#include <errno.h>
#include <fnmatch.h>
#include <string.h>

#include "cgroup_name.h"
#include "profile.h"
#include "query.h"

static const char *const type_names[] = { "cpu", "offcpu", "runq", "wall" };

int query__parse_type(const char *s, int *type)
{
	for (int i = 0; i < (int)(sizeof(type_names) / sizeof(type_names[0])); i++) {
		if (!strcmp(s, type_names[i])) {
			*type = i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *query__type_name(int type)
{
	if (type < 0 || type >= (int)(sizeof(type_names) / sizeof(type_names[0])))
		return "?";
	return type_names[type];
}

/*
 * A unit name ("nginx.service", "docker-<id>.scope") matches a path component;
 * a container id (or its first 12 digits) or a pod UID matches the paths of
 * that container or pod;
 * anything starting with '/' is a path prefix that must end at a component
 * boundary, so "/system.slice/foo" does not match "/system.slice/foobar".
 */
int query__cgroup_match(const char *path, const char *want)
{
	size_t n = strlen(want);

	if (!path)
		return 0;
	if (want[0] == '/') {
		while (n > 1 && want[n - 1] == '/')
			n--;
		if (n == 1)
			return 1;
		return !strncmp(path, want, n) && (path[n] == 0 || path[n] == '/');
	}
	for (const char *c = path; (c = strstr(c, want)); c++) {
		if ((c == path || c[-1] == '/') && (c[n] == 0 || c[n] == '/'))
			return 1;
	}
	/* A container id (or the 12-digit prefix docker prints) or a pod UID, from the path's shape. */
	return cgroup_name__match(path, want);
}

int query__keep(const struct profile *p, const struct pf_sample *s, void *arg)
{
	const struct query *q = arg;

	switch (q->type) {
	case QUERY_CPU:
		if (s->kind != PF_KIND_CPU)
			return 0;
		break;
	case QUERY_OFFCPU:
		if (s->kind != PF_KIND_OFFCPU)
			return 0;
		break;
	case QUERY_RUNQ:
		if (s->kind != PF_KIND_RUNQ)
			return 0;
		break;
	default:
		break;
	}
	if (q->npids) {
		size_t i;

		for (i = 0; i < q->npids; i++)
			if (q->pids[i] == s->pid)
				break;
		if (i == q->npids)
			return 0;
	}
	if (q->comm) {
		const char *c = profile__str(p, s->comm);

		if (strcmp(c, q->comm) && fnmatch(q->comm, c, 0))
			return 0;
	}
	if (q->cgroup && !query__cgroup_match(profile__str(p, s->cgroup), q->cgroup))
		return 0;
	return 1;
}
