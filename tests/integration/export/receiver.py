#!/usr/bin/python3
"""A stand-in for Pyroscope's push endpoint, for the export tests.

Decodes each POST /push.v1.PusherService/Push with protoc-generated modules
(push.proto beside this file, pprof's profile.proto from Debian), checks what
Pyroscope's distributor checks, and appends one JSON line per request to
--log: headers, and per series its labels, times and folded samples
("pid;frame;...;leaf" -> values). A request that fails a check gets a 400
with Connect's JSON error and is logged with "invalid".

The answer comes from --mode-file, read at each request: "ok", "429",
"500", "400", "stall" (hold the request without answering), or "down"
(close the connection at once), "slow" (answer after 1.5 s).
"""
import argparse
import gzip
import json
import os
import re
import ssl
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ap = argparse.ArgumentParser()
ap.add_argument("--port-file", required=True)
ap.add_argument("--port", type=int, default=0)
ap.add_argument("--gen", required=True, help="directory with push_pb2.py and profile_pb2.py")
ap.add_argument("--log", required=True)
ap.add_argument("--mode-file", required=True)
ap.add_argument("--cert")
ap.add_argument("--key")
args = ap.parse_args()
sys.path.insert(0, args.gen)
import profile_pb2  # noqa: E402
import push_pb2  # noqa: E402

KNOWN = {
    "process_cpu": [("samples", "count"), ("cpu", "nanoseconds")],
    "off_cpu": [("off_cpu", "nanoseconds")],
    "wall": [("wall", "nanoseconds")],
}
METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
lock = threading.Lock()
active = 0
stats = {"max_active": 0, "requests": 0}


def check_profile(p, name):
    st = p.string_table
    if not st or st[0] != "":
        return "string_table[0] is not empty"
    n = len(st)

    def s(i):
        if i < 0 or i >= n:
            raise ValueError("string index %d out of range" % i)
        return st[i]

    for kind, items in (("mapping", p.mapping), ("location", p.location), ("function", p.function)):
        for i, it in enumerate(items):
            if it.id != i + 1:
                return "%s %d has id %d, not index + 1" % (kind, i, it.id)
    types = [(s(t.type), s(t.unit)) for t in p.sample_type]
    if types != KNOWN[name]:
        return "sample types %s for %s, expected %s" % (types, name, KNOWN[name])
    if any("-" in t for t, _ in types):
        return "sample type contains -"
    if p.time_nanos <= 0 or p.duration_nanos <= 0:
        return "time_nanos %d, duration_nanos %d" % (p.time_nanos, p.duration_nanos)
    for loc in p.location:
        if loc.mapping_id > len(p.mapping):
            return "location %d: mapping %d missing" % (loc.id, loc.mapping_id)
        for ln in loc.line:
            if not 1 <= ln.function_id <= len(p.function):
                return "location %d: function %d missing" % (loc.id, ln.function_id)
    for f in p.function:
        s(f.name)
        s(f.filename)
    for sm in p.sample:
        if len(sm.value) != len(types):
            return "sample with %d values for %d sample types" % (len(sm.value), len(types))
        for lid in sm.location_id:
            if not 1 <= lid <= len(p.location):
                return "sample: location %d missing" % lid
        for lb in sm.label:
            s(lb.key)
            s(lb.str)
    return None


def fold(p):
    st = p.string_table
    fn = {f.id: st[f.name] for f in p.function}
    loc = {}
    for l in p.location:
        loc[l.id] = fn.get(l.line[0].function_id, "?") if l.line else "[0x%x]" % l.address
    out = {}
    for sm in p.sample:
        labels = {st[lb.key]: (st[lb.str] if lb.str else lb.num) for lb in sm.label}
        frames = [loc[i] for i in reversed(sm.location_id)]  # root first
        key = "%s;%s" % (labels.get("pid", "?"), ";".join(frames))
        v = out.setdefault(key, [0] * len(sm.value))
        for i, x in enumerate(sm.value):
            v[i] += x
    labels_seen = sorted({st[lb.key] for sm in p.sample for lb in sm.label})
    return out, labels_seen


def check_request(body):
    req = push_pb2.PushRequest()
    req.ParseFromString(body)
    if not req.series:
        return None, "no series"
    series = []
    for sr in req.series:
        names = [l.name for l in sr.labels]
        if not names:
            return None, "a series without labels"
        if len(set(names)) != len(names):
            return None, "duplicate label names %s" % names
        for nm in names:
            if not LABEL_NAME.match(nm) and nm != "__name__":
                return None, "invalid label name %r" % nm
        lab = {l.name: l.value for l in sr.labels}
        name = lab.get("__name__", "")
        if not METRIC_NAME.match(name) or name not in KNOWN:
            return None, "__name__ %r is not a known profile type" % name
        if not lab.get("service_name"):
            return None, "service name is not provided"
        if not lab.get("host"):
            return None, "no host label"
        if len(sr.samples) != 1:
            return None, "%d raw samples in a series" % len(sr.samples)
        rs = sr.samples[0]
        uuid.UUID(rs.ID)
        raw = rs.raw_profile
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        p = profile_pb2.Profile()
        p.ParseFromString(raw)
        err = check_profile(p, name)
        if err:
            return None, "%s: %s" % (lab, err)
        folded, sample_labels = fold(p)
        series.append({"labels": lab, "id": rs.ID, "time_nanos": p.time_nanos,
                       "duration_nanos": p.duration_nanos, "period": p.period,
                       "sample_labels": sample_labels, "folded": folded})
    return series, None


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, code, body=b"", ctype="application/proto", extra=()):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        global active
        with lock:
            active += 1
            stats["requests"] += 1
            stats["max_active"] = max(stats["max_active"], active)
        try:
            self.handle_post()
        finally:
            with lock:
                active -= 1

    def handle_post(self):
        try:
            mode = open(args.mode_file).read().strip()
        except OSError:
            mode = "ok"
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        enc = self.headers.get("Content-Encoding", "identity")
        rec = {"t": time.time(), "path": self.path, "mode": mode, "bytes": len(body),
               "headers": {k.lower(): v for k, v in self.headers.items()}}
        if mode == "down":
            self.close_connection = True
            self.connection.close()
            return
        if mode == "stall":
            self.log(dict(rec, stalled=True))
            time.sleep(10)
            return
        if mode == "slow":
            self.log(dict(rec, slow=True))
            time.sleep(1.5)
        if mode in ("429", "500", "400"):
            self.log(dict(rec, status=int(mode)))
            msg = json.dumps({"code": "resource_exhausted" if mode == "429" else "invalid_argument",
                              "message": "test receiver says %s" % mode}).encode()
            self.reply(int(mode), msg, "application/json", [("Retry-After", "1")] if mode == "429" else [])
            return
        if self.path != "/push.v1.PusherService/Push":
            self.log(dict(rec, status=404))
            self.reply(404, b'{"code":"not_found","message":"no such path"}', "application/json")
            return
        if self.headers.get("Content-Type") != "application/proto":
            self.log(dict(rec, status=415, invalid="content type"))
            self.reply(415)
            return
        if enc not in ("identity", "gzip"):  # what connect-go accepts by default
            self.log(dict(rec, status=400, invalid="content encoding %s" % enc))
            self.reply(400)
            return
        try:
            series, err = check_request(gzip.decompress(body) if enc == "gzip" else body)
        except Exception as e:  # a parse error is what the test looks for
            series, err = None, "cannot decode: %r" % e
        if err:
            self.log(dict(rec, status=400, invalid=err))
            self.reply(400, json.dumps({"code": "invalid_argument", "message": err}).encode(),
                       "application/json")
            return
        self.log(dict(rec, status=200, series=series))
        self.reply(200, b"")  # an empty PushResponse

    def log(self, rec):
        rec["max_active"] = stats["max_active"]
        with lock:
            with open(args.log, "a") as f:
                f.write(json.dumps(rec) + "\n")


srv = ThreadingHTTPServer(("127.0.0.1", args.port), H)
srv.daemon_threads = True
if args.cert:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.cert, args.key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
with open(args.port_file + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(args.port_file + ".tmp", args.port_file)
srv.serve_forever()
