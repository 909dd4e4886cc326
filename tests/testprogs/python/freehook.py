# A long-lived CPython process for profd's per-process free hook, driven
# by files in DIR (each step waits for its file, up to 120 s):
#   go1: print whether code_dealloc holds a breakpoint (the hook's int3),
#        then fork a child that runs churn.py for 3 s (the parent waits);
#   go2: make and drop code objects in two threads for 2 s, and print how
#        many (two a round: the module's and the function's);
#   go3: print whether the breakpoint is there, and exit.
# Until go1 it also writes DIR/hooked, holding its age in seconds (from
# its start time in /proc, as profd reckons it), once the breakpoint
# appears. Between steps it burns CPU in steady() (two threads, no code object
# made or freed), so that it is sampled without freeing anything.
# A free hook is per process: the byte at code_dealloc, read by the
# process itself, is 0xcc while a uprobe is in its memory.
import ctypes
import os
import runpy
import sys
import threading
import time
import types

DIR = sys.argv[1]
CHURN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "churn.py")
# PyTypeObject: refcount, type, size, tp_name, tp_basicsize, tp_itemsize, then tp_dealloc.
DEALLOC = ctypes.c_void_p.from_address(id(types.CodeType) + 48).value


def age():
    with open("/proc/self/stat") as f:
        start = int(f.read().rsplit(")", 1)[1].split()[19])
    return time.clock_gettime(time.CLOCK_BOOTTIME) - start / os.sysconf("SC_CLK_TCK")


def breakpoint_in():
    return ctypes.string_at(DEALLOC, 1) == b"\xcc"


def steady_loop(n):
    x = 0
    for i in range(n):
        x = (x + i) & 1023
    return x


def steady(name, watch=False):
    end = time.monotonic() + 120
    path = os.path.join(DIR, name)
    stop = []

    def spin():
        while not stop:
            steady_loop(20000)

    t = threading.Thread(target=spin)
    t.start()
    while not os.path.exists(path) and time.monotonic() < end:
        steady_loop(20000)
        if watch and breakpoint_in():
            with open(os.path.join(DIR, "hooked.tmp"), "w") as f:
                f.write("%.2f\n" % age())
            os.rename(os.path.join(DIR, "hooked.tmp"), os.path.join(DIR, "hooked"))
            watch = False
    stop.append(1)
    t.join()


def make_codes(secs, out, k):
    end = time.monotonic() + secs
    n = 0
    while time.monotonic() < end:
        ns = {}
        exec(compile("def h_%d(x):\n    return x + %d\n" % (n % 50, n), "<freehook>", "exec"), ns)
        ns.clear()
        n += 1
    out[k] = 2 * n


steady("go1", watch=True)
print("hooked", breakpoint_in(), flush=True)
pid = os.fork()
if pid == 0:
    print("child", os.getpid(), flush=True)
    sys.argv = [CHURN, "3"]
    runpy.run_path(CHURN, run_name="__main__")
    os._exit(0)
os.waitpid(pid, 0)
steady("go2")
made = [0, 0]
t = threading.Thread(target=make_codes, args=(2.0, made, 1))
t.start()
make_codes(2.0, made, 0)
t.join()
print("made", made[0] + made[1], flush=True)
steady("go3")
print("hooked", breakpoint_in(), flush=True)
