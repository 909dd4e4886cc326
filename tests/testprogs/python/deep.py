# A Python stack of a given depth for cost benchmarks: DEPTH nested calls,
# then a busy loop in the innermost one for SECS seconds.
# Usage: deep.py DEPTH SECS
import sys
import time


def spin(end):
    x = 0
    while time.monotonic() < end:
        for _ in range(10000):
            x = (x + 7) & 1023


def nest(depth, end):
    if depth > 1:
        nest(depth - 1, end)
    else:
        spin(end)


nest(int(sys.argv[1]), time.monotonic() + float(sys.argv[2]))
