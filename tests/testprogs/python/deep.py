# A Python stack of a given depth for cost benchmarks: DEPTH nested calls of
# distinct functions (level0, level1, ...: no two frames share a code
# object, as in recursion), then a busy loop in the innermost one for SECS
# seconds. Usage: deep.py DEPTH SECS
import sys
import time

SRC = """
def level{i}(depth, end):
    if depth > 1:
        LEVELS[{i} + 1](depth - 1, end)
    else:
        spin(end)
"""


def spin(end):
    x = 0
    while time.monotonic() < end:
        for _ in range(10000):
            x = (x + 7) & 1023


LEVELS = []
for i in range(64):
    exec(compile(SRC.format(i=i), __file__, "exec"), globals())
    LEVELS.append(globals()["level%d" % i])

LEVELS[0](int(sys.argv[1]), time.monotonic() + float(sys.argv[2]))
