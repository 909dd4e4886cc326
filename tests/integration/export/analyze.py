#!/usr/bin/python3
"""Reads the test receiver's log (receiver.py) and prints what the export tests compare.

  analyze.py pid LOG PID        samples, phase shares, services and sample labels of one process
  analyze.py windows LOG SINCE  accepted windows since SINCE (unix seconds): how many, how many
                                twice, gaps between consecutive ones
  analyze.py headers LOG        the headers of the last request
"""
import collections
import json
import sys


def records(path):
    with open(path) as f:
        for line in f:
            yield json.loads(line)


def accepted(path):
    for r in records(path):
        if r.get("status") == 200:
            yield r


cmd, log = sys.argv[1], sys.argv[2]
if cmd == "pid":
    pid = sys.argv[3]
    total = 0
    phase = collections.Counter()
    services, labels, names = collections.Counter(), set(), set()
    for r in accepted(log):
        for s in r["series"]:
            names.add(s["labels"]["__name__"])
            for key, v in s["folded"].items():
                if key.split(";", 1)[0] != pid:
                    continue
                labels.update(s["sample_labels"])
                if s["labels"]["__name__"] != "process_cpu":
                    continue
                services[s["labels"]["service_name"]] += v[0]
                total += v[0]
                for ph in ("phase_a", "phase_b", "phase_c"):
                    if ";%s;" % ph in key + ";":
                        phase[ph] += v[0]
    print("total", total)
    for ph in ("phase_a", "phase_b", "phase_c"):
        print(ph, "%.2f" % (100.0 * phase[ph] / total if total else 0))
    print("services", ",".join("%s=%d" % kv for kv in services.most_common()))
    top = services.most_common(1)
    print("top_service", top[0][0] if top else "")
    print("top_service_pct", "%.2f" % (100.0 * top[0][1] / total if top else 0))
    print("sample_labels", ",".join(sorted(labels)))
    print("types", ",".join(sorted(names)))
elif cmd == "windows":
    since = float(sys.argv[3])
    seen = collections.Counter()
    span = {}
    for r in accepted(log):
        starts = {s["time_nanos"] for s in r["series"]}
        span.update((s["time_nanos"], s["duration_nanos"]) for s in r["series"])
        if len(starts) != 1:
            print("mixed", len(starts))
        for t in starts:
            if t / 1e9 >= since:
                seen[t] += 1
    twice = sum(1 for n in seen.values() if n > 1)
    print("windows", len(seen))
    print("twice", twice)
    print("first", min(seen) if seen else 0)
    print("last", max(seen) if seen else 0)
    # Windows follow each other: the next starts where one ends, give or take
    # profd's write between two clock reads.
    ts = sorted(t for t in span if t / 1e9 >= since)
    print("gaps", sum(1 for a, b in zip(ts, ts[1:]) if not 0 <= b - (a + span[a]) <= 100e6))
    print("durations_ms", ",".join(str(round(span[t] / 1e6)) for t in ts[:3]))
elif cmd == "headers":
    last = None
    for r in records(log):
        last = r
    for k, v in sorted((last or {}).get("headers", {}).items()):
        print("%s: %s" % (k, v))
