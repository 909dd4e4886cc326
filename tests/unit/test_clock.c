/* clock: the planned-time timerfd, on a real CLOCK_MONOTONIC timerfd. */
#include "clock.h"
#include "t.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <sys/timerfd.h>
#include <unistd.h>

static bool set_for(int tfd)
{
	struct itimerspec its;

	return !timerfd_gettime(tfd, &its) && (its.it_value.tv_sec || its.it_value.tv_nsec);
}

static bool readable(int tfd, int ms)
{
	struct pollfd p = { .fd = tfd, .events = POLLIN };

	return poll(&p, 1, ms) == 1;
}

static void test_arm_take(void)
{
	int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	int64_t armed = 0, at;

	CHECK(tfd >= 0);
	if (tfd < 0)
		return;
	at = clock__mono_ns() + 30 * 1000000LL;
	CHECK_EQ_INT(clock__timer_arm(tfd, at, &armed), 0);
	CHECK(armed == at);
	CHECK(set_for(tfd));
	/* The same time again makes no system call: a closed fd goes unnoticed. */
	CHECK_EQ_INT(clock__timer_arm(-1, at, &armed), 0);
	CHECK_EQ_INT(clock__timer_arm(-1, at + 1, &armed), -EBADF);
	CHECK(armed == at);
	/* Not due yet: nothing is read, the plan stands. */
	CHECK_EQ_INT(clock__timer_take(tfd, at - 1, &armed), 0);
	CHECK(armed == at);
	CHECK(readable(tfd, 5000));
	CHECK_EQ_INT(clock__timer_take(tfd, clock__mono_ns(), &armed), 1);
	CHECK(armed == 0);
	CHECK(!readable(tfd, 0));
	CHECK_EQ_INT(clock__timer_take(tfd, clock__mono_ns(), &armed), 0);

	/* A time passed already fires at once; 0 calls a plan off. */
	CHECK_EQ_INT(clock__timer_arm(tfd, 1, &armed), 0);
	CHECK(readable(tfd, 5000));
	CHECK_EQ_INT(clock__timer_take(tfd, clock__mono_ns(), &armed), 1);
	CHECK_EQ_INT(clock__timer_arm(tfd, clock__mono_ns() + 3600 * 1000000000LL, &armed), 0);
	CHECK(set_for(tfd));
	CHECK_EQ_INT(clock__timer_arm(tfd, 0, &armed), 0);
	CHECK(armed == 0);
	CHECK(!set_for(tfd));
	close(tfd);
}

int main(void)
{
	test_arm_take();
	T_DONE();
}
