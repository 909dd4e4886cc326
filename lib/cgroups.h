/* cgroup v2 ids (what BPF sees) to paths (what users filter by). */
#ifndef PROFD_CGROUPS_H
#define PROFD_CGROUPS_H

#include <stdint.h>

struct cgroups;

/* Where the cgroup v2 hierarchy is mounted (found in mountinfo on hybrid hosts); free() it. */
char *cgroups__mount(void);
/* root: the cgroup2 mount, "/sys/fs/cgroup" unless a test says otherwise. */
int cgroups__new(const char *root, struct cgroups **out);
void cgroups__free(struct cgroups *c);
/*
 * Path relative to the mount ("/system.slice/nginx.service"), or NULL when
 * unknown. A miss rescans the tree, at most once per second. The string
 * stays valid until the next call.
 */
const char *cgroups__path(struct cgroups *c, uint64_t id, int64_t now_ns);
/* Heap bytes held by the names: up to 4 MiB found one by one, or what a walk of the tree found. */
uint64_t cgroups__mem_bytes(const struct cgroups *c);

#endif
