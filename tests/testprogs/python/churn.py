# Code objects churn: each round compiles a new function f_N, runs it for a
# few ms and drops it, so its code object is freed and the next one is
# likely to get the same address. f_N is always called from run_mod{N % 3}:
# a profile naming f_N under any other caller misnamed a frame.
# Then three functions g in a row, the same name, file and first line,
# whose body starts 10 * J lines lower (another line table), called from
# run_gJ: under run_gJ its lines are 2 (the def) and 3-6 + 10 * J, and a
# line read with another one's table is 10 or 20 lines off.
# Then three functions k_N in a row, compiled alike but each with a name of
# its own, called from run_k{N % 3}: on some interpreters each gets the
# last one's code object, name string, file string and line table
# addresses, so only the contents tell them apart.
import sys
import time

SRC = """
def f_{n}():
    x = 0
    for i in range(3000):
        x += i
    return x
"""

KSRC = """
def {name}():
    x = 0
    for i in range(3000):
        x += i
    return x
"""

GSRC = """
def g():
{pad}    x = 0
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


def run_g0(f):
    f()


def run_g1(f):
    f()


def run_g2(f):
    f()


def run_k0(f):
    f()


def run_k1(f):
    f()


def run_k2(f):
    f()


CALLERS = (run_mod0, run_mod1, run_mod2)
KCALLERS = (run_k0, run_k1, run_k2)
GCALLERS = (run_g0, run_g1, run_g2)


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
        # The function and its globals hold each other: cleared, they go now, not at a collection.
        ns.clear()
        del ns, f
        # Three g in a row: each one's code object and line table get the last one's addresses.
        for j in range(3):
            ns = {}
            exec(compile(GSRC.format(pad="\n" * (10 * j)), "churn_gen.py", "exec"), ns)
            f = ns["g"]
            t = time.monotonic() + 0.001
            while time.monotonic() < t:
                GCALLERS[j](f)
            ns.clear()
            del ns, f
        for j in range(3):
            name = "k_%07d" % (3 * n + j)
            ns = {}
            exec(compile(KSRC.format(name=name), "churn_gen.py", "exec"), ns)
            f = ns[name]
            t = time.monotonic() + 0.001
            while time.monotonic() < t:
                KCALLERS[j](f)
            ns.clear()
            del ns, f, name
        n += 1
    print("functions", n)


churn(float(sys.argv[1]))
