/*
 * A static program without libc: it never sets its thread pointer
 * (arch_prctl ARCH_SET_FS), the sign that profd's exec events wait for.
 * Spins MS milliseconds of CPU in nolibc_spin, then exits. Usage: spin_nolibc MS
 */
struct ts {
	long sec, nsec;
};

static volatile unsigned long sink;

static long sys2(long n, long a, long b)
{
	long r;

	__asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b) : "rcx", "r11", "memory");
	return r;
}

static long cpu_ns(void)
{
	struct ts t = { 0, 0 };

	sys2(228 /* clock_gettime */, 2 /* CLOCK_PROCESS_CPUTIME_ID */, (long)&t);
	return t.sec * 1000000000L + t.nsec;
}

__attribute__((noinline)) void nolibc_spin(long ms)
{
	long end = cpu_ns() + ms * 1000000L;
	unsigned long x = sink;

	while (cpu_ns() < end)
		for (int i = 0; i < 20000; i++)
			x = x * 6364136223846793005UL + 1;
	sink = x;
}

static long parse(const char *s)
{
	long v = 0;

	while (s && *s >= '0' && *s <= '9')
		v = v * 10 + (*s++ - '0');
	return v;
}

__attribute__((used, noinline)) void start_c(long *sp)
{
	long argc = sp[0];
	char **argv = (char **)(sp + 1);

	nolibc_spin(argc > 1 ? parse(argv[1]) : 60);
	sys2(231 /* exit_group */, 0, 0);
}

__asm__(".globl _start\n"
	".type _start, @function\n"
	"_start:\n"
	"	xor %rbp, %rbp\n"
	"	mov %rsp, %rdi\n"
	"	and $-16, %rsp\n"
	"	call start_c\n"
	"	hlt\n"
	".size _start, . - _start\n");
