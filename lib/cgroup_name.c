#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "cgroup_name.h"

static bool is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

static bool ends_with(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);

	return n > k && !memcmp(s + n - k, suffix, k);
}

/* systemd names units with these; slices only group them. */
static bool is_unit(const char *c, size_t n)
{
	static const char *const suffixes[] = { ".service", ".scope", ".socket", ".mount", ".swap" };

	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++)
		if (ends_with(c, n, suffixes[i]))
			return true;
	return false;
}

/*
 * Container scopes of the systemd driver: <prefix><64 hex>.scope. crio-conmon-
 * is CRI-O's monitor, not the container, and does not match "crio-" + hex.
 */
static const struct {
	const char *prefix, *runtime;
} scopes[] = {
	{ "docker-", "docker" },
	{ "cri-containerd-", "containerd" },
	{ "crio-", "cri-o" },
	{ "libpod-", "podman" },
	{ "containerd-", "containerd" },
};

static bool container_of_component(const char *c, size_t n, const char *parent, size_t pn,
				   struct cgroup_name *out)
{
	if (n == CGROUP_NAME_ID_LEN && is_hex(c, n)) {
		/* cgroupfs driver: /docker/<id>, /kubepods/<qos>/pod<uid>/<id>, /<containerd namespace>/<id> */
		memcpy(out->container, c, n);
		out->container[n] = 0;
		out->runtime = pn == 6 && !memcmp(parent, "docker", 6) ? "docker" :
			       pn == 6 && !memcmp(parent, "libpod", 6) ? "podman" : NULL;
		return true;
	}
	if (!ends_with(c, n, ".scope"))
		return false;
	n -= strlen(".scope");
	for (size_t i = 0; i < sizeof(scopes) / sizeof(scopes[0]); i++) {
		size_t k = strlen(scopes[i].prefix);

		if (n == k + CGROUP_NAME_ID_LEN && !memcmp(c, scopes[i].prefix, k) && is_hex(c + k, CGROUP_NAME_ID_LEN)) {
			memcpy(out->container, c + k, CGROUP_NAME_ID_LEN);
			out->container[CGROUP_NAME_ID_LEN] = 0;
			out->runtime = scopes[i].runtime;
			return true;
		}
	}
	return false;
}

/* A pod UID, dashed (cgroupfs: pod<uid>) or with underscores (systemd: kubepods-<qos>-pod<uid>.slice). */
static bool pod_of_component(const char *c, size_t n, struct cgroup_name *out)
{
	const char *p = NULL;
	char uid[CGROUP_NAME_POD_LEN + 1];

	if (n == 3 + CGROUP_NAME_POD_LEN && !memcmp(c, "pod", 3)) {
		p = c + 3;
	} else if (ends_with(c, n, ".slice") && !memcmp(c, "kubepods-", 9)) {
		size_t body = n - strlen(".slice");

		if (body >= 8 + 4 + CGROUP_NAME_POD_LEN && !memcmp(c + body - CGROUP_NAME_POD_LEN - 4, "-pod", 4))
			p = c + body - CGROUP_NAME_POD_LEN;
	}
	if (!p)
		return false;
	for (int i = 0; i < CGROUP_NAME_POD_LEN; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		uid[i] = p[i] == '_' ? '-' : p[i];
		if (dash ? uid[i] != '-' : !is_hex(&uid[i], 1))
			return false;
	}
	uid[CGROUP_NAME_POD_LEN] = 0;
	memcpy(out->pod, uid, sizeof(uid));
	return true;
}

int cgroup_name__parse(const char *path, struct cgroup_name *out)
{
	const char *comp[64], *parent = "";
	size_t len[64], ncomp = 0, pn = 0;
	bool unit = false, container = false, pod = false;

	memset(out, 0, sizeof(*out));
	if (!path || path[0] != '/')
		return -EINVAL;
	for (const char *p = path; *p;) {
		const char *s;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		s = p;
		while (*p && *p != '/')
			p++;
		/* Deeper than this is nested delegation; the outer components name the workload. */
		if (ncomp < sizeof(comp) / sizeof(comp[0])) {
			comp[ncomp] = s;
			len[ncomp++] = (size_t)(p - s);
		}
	}
	/* Innermost first: a unit or container nested in another names the processes more closely. */
	for (size_t i = ncomp; i-- > 0;) {
		parent = i ? comp[i - 1] : "";
		pn = i ? len[i - 1] : 0;
		if (!unit && is_unit(comp[i], len[i]) && len[i] < sizeof(out->unit)) {
			memcpy(out->unit, comp[i], len[i]);
			out->unit[len[i]] = 0;
			unit = true;
		}
		if (!container)
			container = container_of_component(comp[i], len[i], parent, pn, out);
		if (!pod)
			pod = pod_of_component(comp[i], len[i], out);
	}
	return 0;
}

int cgroup_name__match(const char *path, const char *want)
{
	struct cgroup_name cn;
	size_t n = strlen(want);

	if (!path || !n || want[0] == '/' || cgroup_name__parse(path, &cn))
		return 0;
	for (const char *c = path; (c = strstr(c, want)); c++)
		if (c[-1] == '/' && (c[n] == 0 || c[n] == '/'))
			return 1;
	if (cn.container[0] && n >= 12 && n <= CGROUP_NAME_ID_LEN && !strncmp(cn.container, want, n))
		return 1;
	return cn.pod[0] && !strcmp(cn.pod, want);
}
