# Code objects churn: each round compiles a new function f_N, runs it for a
# few ms and drops it, so its code object is freed and the next one is
# likely to get the same address. f_N is always called from run_mod{N % 3}:
# a profile naming f_N under any other caller misnamed a frame.
import sys
import time

SRC = """
def f_{n}():
    x = 0
    for i in range(3000):
        x += i
    return x
"""


def run_mod0(f):
    f()


def run_mod1(f):
    f()


def run_mod2(f):
    f()


CALLERS = (run_mod0, run_mod1, run_mod2)


def churn(secs):
    end = time.monotonic() + secs
    n = 0
    while time.monotonic() < end:
        ns = {}
        exec(compile(SRC.format(n=n), "churn_gen.py", "exec"), ns)
        f = ns["f_%d" % n]
        t = time.monotonic() + 0.002
        while time.monotonic() < t:
            CALLERS[n % 3](f)
        del ns, f
        n += 1
    print("functions", n)


churn(float(sys.argv[1]))
