#!/usr/bin/env python3
# Holds BPF run-time statistics on (BPF_ENABLE_STATS) until it is signalled.
# The kernel keeps statistics on while any such descriptor is open, so
# benchmark runs that overlap never turn them off under each other, and none
# can leave kernel.bpf_stats_enabled set behind it. Writes READY_FILE once on.
# Usage: stats_hold.py READY_FILE
import ctypes, os, signal, struct, sys

SYS_BPF, BPF_ENABLE_STATS, BPF_STATS_RUN_TIME = 321, 32, 0
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
signal.signal(signal.SIGINT, lambda *_: sys.exit(0))
libc = ctypes.CDLL(None, use_errno=True)
attr = ctypes.create_string_buffer(struct.pack("I", BPF_STATS_RUN_TIME), 64)
fd = libc.syscall(SYS_BPF, BPF_ENABLE_STATS, attr, 64)
if fd < 0:
    sys.exit("stats_hold: BPF_ENABLE_STATS failed: %s" % os.strerror(ctypes.get_errno()))
with open(sys.argv[1], "w") as f:
    f.write("%d\n" % os.getpid())
while True:
    signal.pause()
