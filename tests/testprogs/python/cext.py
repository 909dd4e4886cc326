# A C extension under a Python caller: compress_loop spends its time in
# zlib's C code.
import sys
import time
import zlib

DATA = bytes(range(256)) * 4096


def compress_loop(secs):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        zlib.compress(DATA, 6)


compress_loop(float(sys.argv[1]))
