# A C extension under a Python caller: compress_loop spends its time in
# zlib's C code. A first call and a pause come before: the DWARF walker
# learns of the zlib module (dlopen'ed by the import) from a sample in it
# and profd loads its tables, as a long-running service's would be.
import sys
import time
import zlib

DATA = bytes(range(256)) * 4096


def compress_loop(secs):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        zlib.compress(DATA, 6)


zlib.compress(DATA * 8, 6)
time.sleep(2)
compress_loop(float(sys.argv[1]))
