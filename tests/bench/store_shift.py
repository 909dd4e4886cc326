#!/usr/bin/env python3
"""A week from a day: copies a store's segments and segment summaries N times,
shifted back by 0..N-1 whole days (file names and record headers moved,
payloads as they are), for the query benchmarks of tests/bench/store_queries.sh.
Usage: store_shift.py SRC DST N"""
import os, struct, sys
POLY = 0x82F63B78
T = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ POLY if c & 1 else c >> 1
    T.append(c)
def crc32c(b):
    c = 0xFFFFFFFF
    for x in b:
        c = T[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF
assert crc32c(b"123456789") == 0xE3069283
src, dst, days = sys.argv[1], sys.argv[2], int(sys.argv[3])
D = 86400 * 10**9
os.makedirs(dst, exist_ok=True)
for name in sorted(os.listdir(src)):
    if not (name.startswith('seg-') or name.startswith('sum-')) or len(name) != 47:
        continue
    b = bytearray(open(os.path.join(src, name), 'rb').read())
    for k in range(0, days):
        sh = k * D
        out = bytearray(b)
        off = 0
        while off + 64 <= len(out):
            s, e = struct.unpack_from('<qq', out, off + 24)
            struct.pack_into('<qq', out, off + 24, s - sh, e - sh)
            struct.pack_into('<I', out, off + 60, crc32c(bytes(out[off:off + 60])))
            comp = struct.unpack_from('<I', out, off + 12)[0]
            off += 64 + comp
        S, E = int(name[4:23]), int(name[24:43])
        nn = '%s%019d-%019d.pfd' % (name[:4], S - sh, E - sh)
        open(os.path.join(dst, nn), 'wb').write(out)
