/* cgroup_name: units, container ids and pod UIDs from the cgroup path shapes real hosts have. */
#include <errno.h>

#include "cgroup_name.h"
#include "query.h"
#include "t.h"

#define ID "3f5a1c0de9b24e7f8a6d2c1b0e9f8d7c6b5a4e3d2c1b0a9f8e7d6c5b4a3e2d1f"
#define ID2 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define POD "0f3e4e0a-5bc1-4c56-9d2e-1234567890ab"
#define POD_ "0f3e4e0a_5bc1_4c56_9d2e_1234567890ab"

struct shape {
	const char *path, *unit, *container, *runtime, *pod;
};

static const struct shape shapes[] = {
	{ "/", "", "", NULL, "" },
	{ "/init.scope", "init.scope", "", NULL, "" },
	{ "/system.slice/nginx.service", "nginx.service", "", NULL, "" },
	{ "/system.slice/system-getty.slice/getty@tty1.service", "getty@tty1.service", "", NULL, "" },
	/* a delegated service that made its own sub-cgroups */
	{ "/system.slice/containerd.service/worker", "containerd.service", "", NULL, "" },
	{ "/user.slice/user-1000.slice/session-3.scope", "session-3.scope", "", NULL, "" },
	{ "/user.slice/user-1000.slice/user@1000.service/app.slice/app-gnome-firefox-4242.scope",
	  "app-gnome-firefox-4242.scope", "", NULL, "" },
	{ "/user.slice", "", "", NULL, "" },
	/* docker, systemd driver and cgroupfs driver */
	{ "/system.slice/docker-" ID ".scope", "docker-" ID ".scope", ID, "docker", "" },
	{ "/docker/" ID, "", ID, "docker", "" },
	/* podman */
	{ "/machine.slice/libpod-" ID ".scope", "libpod-" ID ".scope", ID, "podman", "" },
	{ "/machine.slice/libpod-" ID ".scope/container", "libpod-" ID ".scope", ID, "podman", "" },
	/* Kubernetes with containerd, systemd driver */
	{ "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" POD_ ".slice/cri-containerd-" ID ".scope",
	  "cri-containerd-" ID ".scope", ID, "containerd", POD },
	/* guaranteed QoS: no QoS slice */
	{ "/kubepods.slice/kubepods-pod" POD_ ".slice/cri-containerd-" ID ".scope",
	  "cri-containerd-" ID ".scope", ID, "containerd", POD },
	/* Kubernetes with CRI-O, and its conmon monitor, which is no container */
	{ "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" POD_ ".slice/crio-" ID ".scope",
	  "crio-" ID ".scope", ID, "cri-o", POD },
	{ "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" POD_ ".slice/crio-conmon-" ID ".scope",
	  "crio-conmon-" ID ".scope", "", NULL, POD },
	/* Kubernetes, cgroupfs driver: runtime not in the path */
	{ "/kubepods/burstable/pod" POD "/" ID, "", ID, NULL, POD },
	{ "/kubepods/pod" POD "/" ID, "", ID, NULL, POD },
	/* containerd without Kubernetes (a namespace directory) */
	{ "/default/" ID, "", ID, NULL, "" },
	/* docker in docker: the inner container names the processes */
	{ "/system.slice/docker-" ID ".scope/docker/" ID2, "docker-" ID ".scope", ID2, "docker", "" },
	/* look-alikes that are not containers or pods */
	{ "/system.slice/docker-3f5a1c0de9b2.scope", "docker-3f5a1c0de9b2.scope", "", NULL, "" },
	{ "/system.slice/docker-" ID "x.scope", "docker-" ID "x.scope", "", NULL, "" },
	{ "/kubepods/podnot-a-uid-at-all-but-36-chars-longxxxx/x", "", "", NULL, "" },
	{ "/system.slice/.service", "", "", NULL, "" },
	{ "/a//b/", "", "", NULL, "" },
};

int main(void)
{
	struct cgroup_name cn;

	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		const struct shape *s = &shapes[i];

		CHECK_EQ_INT(cgroup_name__parse(s->path, &cn), 0);
		CHECK_EQ_STR(cn.unit, s->unit);
		CHECK_EQ_STR(cn.container, s->container);
		CHECK(cn.runtime == s->runtime || (cn.runtime && s->runtime && !strcmp(cn.runtime, s->runtime)));
		if (!(cn.runtime == s->runtime || (cn.runtime && s->runtime && !strcmp(cn.runtime, s->runtime))))
			fprintf(stderr, "  runtime of %s: %s\n", s->path, cn.runtime ? cn.runtime : "(none)");
		CHECK_EQ_STR(cn.pod, s->pod);
	}
	CHECK_EQ_INT(cgroup_name__parse("system.slice/x.service", &cn), -EINVAL);
	CHECK_EQ_INT(cgroup_name__parse(NULL, &cn), -EINVAL);

	/* --cgroup: unit, path prefix, container id and its short form, pod UID */
	CHECK(query__cgroup_match("/system.slice/nginx.service", "nginx.service"));
	CHECK(!query__cgroup_match("/system.slice/nginx.service", "nginx"));
	CHECK(!query__cgroup_match("/system.slice/nginx.service2", "nginx.service"));
	CHECK(query__cgroup_match("/system.slice/nginx.service", "/system.slice"));
	CHECK(!query__cgroup_match("/system.slice2/nginx.service", "/system.slice"));
	CHECK(query__cgroup_match("/system.slice/docker-" ID ".scope", ID));
	CHECK(query__cgroup_match("/system.slice/docker-" ID ".scope", "3f5a1c0de9b2"));
	CHECK(query__cgroup_match("/docker/" ID, "3f5a1c0de9b2"));
	CHECK(!query__cgroup_match("/system.slice/docker-" ID ".scope", "3f5a1c0de9b")); /* too short to be sure */
	CHECK(!query__cgroup_match("/system.slice/docker-" ID ".scope", "3f5a1c0de9b3"));
	CHECK(!query__cgroup_match("/system.slice/docker-" ID ".scope", ID2));
	CHECK(query__cgroup_match("/kubepods.slice/kubepods-pod" POD_ ".slice/cri-containerd-" ID ".scope", POD));
	CHECK(query__cgroup_match("/kubepods/burstable/pod" POD "/" ID, POD));
	CHECK(!query__cgroup_match("/kubepods/burstable/pod" POD "/" ID, "0f3e4e0a"));
	CHECK(!query__cgroup_match(NULL, "nginx.service"));
	T_DONE();
}
