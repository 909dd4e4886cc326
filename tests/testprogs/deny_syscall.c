/*
 * deny_syscall NAME[,NAME...] ERRNO PROG [ARGS...]: runs PROG with the named
 * system calls failing with ERRNO (a seccomp filter), so tests can see how
 * profd reports a kernel that refuses perf_event_open or bpf while it still
 * runs as root.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#else
#error "add this architecture's AUDIT_ARCH"
#endif

static long nr_of(const char *name)
{
	if (!strcmp(name, "perf_event_open"))
		return SYS_perf_event_open;
	if (!strcmp(name, "bpf"))
		return SYS_bpf;
	return -1;
}

int main(int argc, char **argv)
{
	struct sock_filter f[32];
	struct sock_fprog prog;
	char *names, *tok, *save = NULL;
	long nrs[8];
	int n = 0, k = 0, err;
	char *end;

	if (argc < 4) {
		fprintf(stderr, "usage: deny_syscall perf_event_open|bpf[,...] ERRNO PROG [ARGS...]\n");
		return 2;
	}
	err = (int)strtol(argv[2], &end, 10);
	if (*end || err <= 0 || err > 4095) {
		fprintf(stderr, "deny_syscall: bad errno '%s'\n", argv[2]);
		return 2;
	}
	names = strdup(argv[1]);
	for (tok = strtok_r(names, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == 8 || (nrs[n] = nr_of(tok)) < 0) {
			fprintf(stderr, "deny_syscall: unknown or too many system calls '%s'\n", tok);
			return 2;
		}
		n++;
	}
	f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
	f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
	for (int i = 0; i < n; i++) {
		f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nrs[i], 0, 1);
		f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (err & SECCOMP_RET_DATA));
	}
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	prog = (struct sock_fprog){ .len = (unsigned short)k, .filter = f };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		perror("deny_syscall: seccomp");
		return 1;
	}
	execvp(argv[3], argv + 3);
	perror("deny_syscall: exec");
	return 127;
}
