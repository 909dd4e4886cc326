/*
 * What a cgroup v2 path says about its processes: the systemd unit and the
 * container (docker, containerd, CRI-O, podman; Kubernetes pod UID), under
 * both the systemd and the cgroupfs cgroup drivers. Pure string work.
 */
#ifndef PROFD_CGROUP_NAME_H
#define PROFD_CGROUP_NAME_H

#include <stddef.h>

#define CGROUP_NAME_ID_LEN 64  /* a container id: 64 lower-case hex digits */
#define CGROUP_NAME_POD_LEN 36 /* a pod UID: 8-4-4-4-12 hex digits */

struct cgroup_name {
	char unit[256];                          /* innermost non-slice unit: "nginx.service"; "" */
	char container[CGROUP_NAME_ID_LEN + 1];  /* innermost container id; "" */
	const char *runtime;                     /* "docker", "containerd", "cri-o", "podman"; NULL: not known */
	char pod[CGROUP_NAME_POD_LEN + 1];       /* Kubernetes pod UID, with dashes; "" */
};

/* Fills out from path ("/system.slice/nginx.service"); 0, or -EINVAL when path is not absolute. */
int cgroup_name__parse(const char *path, struct cgroup_name *out);

/*
 * Whether a user's --cgroup names this path: a unit or any other path
 * component, a container id or a prefix of it of at least 12 digits (as
 * `docker ps` prints), or a pod UID. Paths (starting with '/') are not
 * handled here.
 */
int cgroup_name__match(const char *path, const char *want);

#endif
