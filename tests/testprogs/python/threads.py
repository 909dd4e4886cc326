# Two busy threads with their own functions (spin_alpha, spin_beta) and one
# thread blocked in time.sleep inside wait_for_job; prints how long
# wait_for_job slept, in microseconds.
import sys
import threading
import time

SECS = float(sys.argv[1])
slept = []


def spin(n):
    x = 0
    for i in range(n):
        x += i
    return x


def spin_alpha(end):
    while time.monotonic() < end:
        spin(1000)


def spin_beta(end):
    while time.monotonic() < end:
        spin(1000)


def wait_for_job(end):
    t0 = time.monotonic()
    time.sleep(max(0.0, end - t0))
    slept.append(time.monotonic() - t0)


end = time.monotonic() + SECS
ts = [threading.Thread(target=f, args=(end,)) for f in (spin_alpha, spin_beta, wait_for_job)]
for t in ts:
    t.start()
for t in ts:
    t.join()
print("wait_for_job_us", int(slept[0] * 1e6))
