#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The OTLP sink end to end: fixtures replayed through the plugin with NCCL_INSPECTOR_OTLP_EXPORT=1
against a local receiver (tests/lib/otlp_receiver.py on 127.0.0.1) that stores every request body.
Every protobuf body must decode with `protoc --decode` against the official schema
(tests/data/otlp-proto); every JSON body must parse. The LAST export of each process (cumulative
metrics: it holds everything) is decoded here by a small wire-format reader written from the
.proto files, independent of the encoder, and must equal the records the same replay wrote as
JSON: per (communicator, rank, operation, size bucket) the operation count, the bytes, the
histograms' counts; records with stale channels counted as excluded, not aggregated.
  otlp.protobuf        torch-1735 (2 processes) over http/protobuf
  otlp.json            the same over http/json
  otlp.gzip            the same, gzip-compressed (the receiver gunzips)
  otlp.split           the body limit lowered to 2000 bytes (a test hook): each export arrives as
                       several bodies, which together equal the log
  otlp.stale           va2a-r0 (stale channels): excluded == the oracle's stale records
  otlp.synonym         NCCL_INSPECTOR_OTEL_EXPORT=1 (the vendors' name) and JSON_DUMP=0: OTLP
                       alone, no log written, the same totals
  otlp.bounds          a busy GPU-truth recording (many ops left out, bounded: core/judge.h): the
                       records as above, the bounds apart in nccl.bound_operations and
                       nccl.bound_time, per series as many as the log's bound lines; with
                       NCCL_INSPECTOR_BOUNDS=mix in nccl.operations with the records instead
  otlp.collector-down  no receiver at all: the job's replay still succeeds, one warning, no hang
  otlp.comes-back      the receiver away at start and back later: the last export arrives with
                       every count, and nccl.inspector.otlp.exports_dropped is exported (the
                       bodies that waited are kept, not dropped: its value is what was lost)
  otlp.two-processes   two replays at once into one receiver with a path in the endpoint and
                       headers with '=' and ',' in their values: both processes' totals arrive,
                       headers intact
  otlp.silent-dns      the endpoint a name, the resolver one that never answers (a network and
                       mount namespace of the test's own: loopback only, a private resolv.conf
                       naming a UDP socket that reads nothing, 30 s x 2 attempts x 3 names): the
                       job exits within the exporter's 3 s bound, not after the resolver's
                       minutes (skipped, with the reason, where namespaces cannot be made)
  otlp.endless-interim a server answering "HTTP/1.1 100 Continue" without end, as fast as it is
                       read: the job exits within the bound, one warning naming the interim answers
  otlp.endless-body    a 200 whose chunked body never ends: each request ends at its 2 s timeout,
                       the job exits within the bound
  otlp.redacted-urls   endpoints with user:password@ and ?token=...: every warning shows them
                       redacted, no secret on stderr
  otlp.reserved-headers  Host, Content-Length, Transfer-Encoding and Connection in
                       OTEL_EXPORTER_OTLP_HEADERS: one warning naming them (no value), the
                       receiver sees one Host and one Content-Length, ours, and the totals arrive
"""
import collections
import glob
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402
import oracle  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO = os.path.join(HERE, "data", "otlp-proto")
REQ = "opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest"
SVC = "opentelemetry/proto/collector/metrics/v1/metrics_service.proto"


# ---- the wire format, from the .proto files ---------------------------------------------------

def fields(buf):
    """{field number: [values]}: varints as ints, fixed64 as 8 raw bytes, bytes as bytes."""
    out = collections.defaultdict(list)
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(buf, i)
        elif wt == 1:
            v, i = buf[i:i + 8], i + 8
        elif wt == 2:
            n, i = varint(buf, i)
            v, i = buf[i:i + n], i + n
        elif wt == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % wt)
        out[num].append(v)
    return out


def varint(b, i):
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if not c & 0x80:
            return v, i


def kvs(raw_list):
    """KeyValue (key 1, value 2: AnyValue string 1 / int 3) -> dict."""
    d = {}
    for raw in raw_list:
        f = fields(raw)
        av = fields(f[2][0]) if f.get(2) else {}
        d[f[1][0].decode()] = av[1][0].decode() if av.get(1) else av.get(3, [0])[0]
    return d


def decode_pb(body):
    """{"resource": {...}, "metrics": {name: [(attrs, value or histogram dict)]}}"""
    req = fields(body)
    out = {"resource": {}, "metrics": collections.defaultdict(list), "time": 0}
    for rm_raw in req[1]:
        rm = fields(rm_raw)
        out["resource"] = kvs(fields(rm[1][0]).get(1, [])) if rm.get(1) else {}
        for sm_raw in rm[2]:
            for m_raw in fields(sm_raw)[2]:
                m = fields(m_raw)
                name = m[1][0].decode()
                if m.get(7):  # Sum
                    s = fields(m[7][0])
                    assert s[2][0] == 2 and s[3][0] == 1, "cumulative, monotonic"
                    for p_raw in s.get(1, []):
                        p = fields(p_raw)
                        out["time"] = struct.unpack("<Q", p[3][0])[0]
                        v = struct.unpack("<q", p[6][0])[0]
                        out["metrics"][name].append((kvs(p.get(7, [])), v))
                elif m.get(5):  # Gauge (hang detection's): as_double (4) or as_int (6)
                    for p_raw in fields(m[5][0]).get(1, []):
                        p = fields(p_raw)
                        v = (struct.unpack("<d", p[4][0])[0] if p.get(4) else
                             struct.unpack("<q", p[6][0])[0])
                        out["metrics"][name].append((kvs(p.get(7, [])), v))
                elif m.get(10):  # ExponentialHistogram
                    h = fields(m[10][0])
                    assert h[2][0] == 2, "cumulative"
                    for p_raw in h.get(1, []):
                        p = fields(p_raw)
                        pos = fields(p[8][0]) if p.get(8) else {}
                        counts = []
                        for packed in pos.get(2, []):
                            j = 0
                            while j < len(packed):
                                c, j = varint(packed, j)
                                counts.append(c)
                        out["metrics"][name].append((kvs(p.get(1, [])), {
                            "count": struct.unpack("<Q", p[4][0])[0],
                            "zero_count": struct.unpack("<Q", p[7][0])[0] if p.get(7) else 0,
                            "buckets": counts}))
    return out


def decode_json(body):
    req = json.loads(body)
    out = {"resource": {}, "metrics": collections.defaultdict(list)}

    def attrs(lst):
        return {a["key"]: (a["value"].get("stringValue") if "stringValue" in a["value"]
                           else int(a["value"]["intValue"])) for a in lst or []}
    for rm in req["resourceMetrics"]:
        out["resource"] = attrs(rm["resource"]["attributes"])
        for sm in rm["scopeMetrics"]:
            for m in sm["metrics"]:
                if "sum" in m:
                    for p in m["sum"].get("dataPoints", []):
                        out["metrics"][m["name"]].append((attrs(p.get("attributes")), int(p["asInt"])))
                elif "gauge" in m:  # hang detection's: asDouble or asInt
                    for p in m["gauge"].get("dataPoints", []):
                        v = float(p["asDouble"]) if "asDouble" in p else int(p["asInt"])
                        out["metrics"][m["name"]].append((attrs(p.get("attributes")), v))
                else:
                    for p in m["exponentialHistogram"].get("dataPoints", []):
                        out["metrics"][m["name"]].append((attrs(p.get("attributes")), {
                            "count": int(p["count"]), "zero_count": int(p.get("zeroCount", 0)),
                            "buckets": [int(c) for c in p.get("positive", {}).get("bucketCounts", [])]}))
    return out


# ---- the receiver ---------------------------------------------------------------------------

class Receiver:
    """otlp_receiver.py in directory d; tls: https, on a certificate made here for 127.0.0.1
    (needs the openssl tool)."""

    def __init__(self, d, control=None, tls=False):
        self.dir = d
        os.makedirs(d)
        if control is not None:
            with open(os.path.join(d, "control.json"), "w") as f:
                json.dump(control, f)
        extra = []
        if tls:
            cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
            subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                            "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, timeout=60)
            extra = ["--tls-cert", cert, "--tls-key", key]
        self.p = subprocess.Popen([sys.executable, "-B", os.path.join(HERE, "lib", "otlp_receiver.py"),
                                   "--dir", d] + extra, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port = os.path.join(d, "port")
        for _ in range(500):
            if os.path.exists(port) and open(port).read().strip():
                break
            time.sleep(0.02)
        self.port = int(open(port).read())

    def control(self, c):
        tmp = os.path.join(self.dir, "control.tmp")
        with open(tmp, "w") as f:
            json.dump(c, f)
        os.replace(tmp, os.path.join(self.dir, "control.json"))
        applied = os.path.join(self.dir, "applied")
        want = json.dumps(c)
        for _ in range(500):
            if os.path.exists(applied) and open(applied).read().strip() == want.strip():
                return
            time.sleep(0.02)

    def requests(self):
        rows = []
        path = os.path.join(self.dir, "requests.tsv")
        if os.path.exists(path):
            for line in open(path):
                f = line.rstrip("\n").split("\t")
                rows.append({"seq": int(f[0]), "conn": int(f[1]), "path": f[4],
                             "ctype": f[8], "encoding": f[7], "action": f[9]})
        return rows

    def body(self, seq):
        with open(os.path.join(self.dir, "%d.body" % seq), "rb") as f:
            return f.read()

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        try:
            self.p.wait(10)
        except subprocess.TimeoutExpired:
            self.p.kill()


# ---- what the JSON log says -----------------------------------------------------------------

def bucket(nbytes):
    units = ["B", "KB", "MB", "GB", "TB", "PB", "EB"]
    u = 0
    while u < 6 and nbytes >> (10 * (u + 1)):
        u += 1
    lo = nbytes >> (10 * u)
    return "%d-%d%s" % (lo, lo + 1, units[u])


def log_totals(dump):
    """{pid: {(comm, rank, op, bucket, peer): [ops, bytes]}}, {pid: {kind: stale}},
    {pid: {kind: dropped}} (peer: a P2P record's, None for a collective)"""
    tot = collections.defaultdict(lambda: collections.defaultdict(lambda: [0, 0]))
    stale = collections.defaultdict(collections.Counter)
    dropped = collections.defaultdict(dict)
    for f in glob.glob(os.path.join(dump, "*.log")):
        for line in open(f):
            o = json.loads(line)
            pid, h = o["metadata"]["pid"], o["header"]
            if "dump_stats" in o:
                for kind in ("coll", "p2p"):
                    dropped[pid][(h["id"], h["rank"], kind)] = o["dump_stats"][kind + "_dropped_total"]
                continue
            if "coll_perf" not in o and "p2p_perf" not in o:
                continue  # a bound (or unverified) line: not a record
            kind = "coll" if "coll_perf" in o else "p2p"
            p = o[kind + "_perf"]
            if p.get(kind + "_stale_channels", 0):
                stale[pid][kind] += 1
                continue
            peer = str(p["p2p_peer"]) if kind == "p2p" else None
            t = tot[pid][(h["id"], str(h["rank"]), p[kind], bucket(p[kind + "_msg_size_bytes"]), peer)]
            t[0] += 1
            t[1] += p[kind + "_msg_size_bytes"]
    return tot, stale, dropped


def otlp_totals(dec):
    """Per (communicator, rank, operation, size, peer: P2P's nccl.peer, None for a collective)
    the operations and bytes (summed over a collective's algorithms), the exec_time histograms;
    and the keys of P2P points that share one (a P2P series is one per peer: two of one key
    are peers merged, nccl.peer missing)."""
    def key(a):
        return (a["nccl.comm.id"], a["nccl.rank"], a["nccl.operation"], a["nccl.message_size"],
                a.get("nccl.peer"))
    ops, byt, hist, dup = collections.Counter(), collections.Counter(), {}, []
    for a, v in dec["metrics"]["nccl.operations"]:
        if key(a) in ops and a["nccl.operation.kind"] == "p2p":
            dup.append(key(a))
        ops[key(a)] += v
    for a, v in dec["metrics"]["nccl.bytes"]:
        byt[key(a)] += v
    for a, h in dec["metrics"]["nccl.exec_time"]:
        hist.setdefault(key(a), []).append(h)
    return dict(ops), dict(byt), hist, dup


def last_exports(rec, json_mode):
    """{pid: the last export, decoded}; every body checked (protoc / JSON) on the way. An export
    (a turn of the sink's series) split into several bodies is put back together: its first
    body holds the per-GPU and exporter counters (nccl.inspector.otlp.exports_dropped, one
    point always), the others join the pid's export before them. Each body has its own
    time_unix_nano (that of its values), so the time does not tell."""
    out, problems = {}, []
    for r in rec.requests():
        if r["action"] not in ("200",):
            continue
        body = rec.body(r["seq"])
        if json_mode:
            dec = decode_json(body)
        else:
            p = subprocess.run(["protoc", "-I", PROTO, "--decode=" + REQ, SVC], input=body,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
            if p.returncode:
                problems.append("body %d: protoc: %s" % (r["seq"], p.stderr.decode()[:200]))
                continue
            dec = decode_pb(body)
        pid = dec["resource"]["process.pid"]
        prev = out.get(pid)
        if prev and "nccl.inspector.otlp.exports_dropped" not in dec["metrics"]:
            for name, pts in dec["metrics"].items():  # another body of the same export
                prev["metrics"][name] += pts
            prev["bodies"] += 1
        else:
            dec["bodies"] = 1
            out[pid] = dec  # a later export of a pid replaces the earlier one
    return out, problems


def compare(dump, exports, expect_log=True):
    tot, stale, dropped = log_totals(dump)
    problems = []
    if expect_log and not tot:
        problems.append("no JSON log")
    pids = set(exports) if not expect_log else set(tot)
    for pid in pids:
        dec = exports.get(pid)
        if not dec:
            problems.append("pid %s: no export" % pid)
            continue
        ops, byt, hist, dup = otlp_totals(dec)
        if dup:
            problems.append("pid %s: points of one (comm, rank, op, size, peer): %s" % (pid, dup[:4]))
        if expect_log:
            want = {k: v[0] for k, v in tot[pid].items()}
            if ops != want:
                problems.append("pid %s: operations %s, log %s" % (pid, sorted(ops.items())[:4],
                                                                   sorted(want.items())[:4]))
            if byt != {k: v[1] for k, v in tot[pid].items()}:
                problems.append("pid %s: bytes differ from the log" % pid)
            ex = {a["nccl.operation.kind"]: v for a, v in dec["metrics"]["nccl.records.excluded"]}
            want_ex = {"collective": stale[pid]["coll"], "p2p": stale[pid]["p2p"]}
            if ex != want_ex:
                problems.append("pid %s: excluded %s, log's stale %s" % (pid, ex, want_ex))
        for k, hs in hist.items():
            count, in_buckets = sum(h["count"] for h in hs), sum(h["zero_count"] + sum(h["buckets"]) for h in hs)
            if count != ops.get(k) or in_buckets != count:
                problems.append("pid %s %s: histogram count %d, buckets %d, ops %s" % (
                    pid, k, count, in_buckets, ops.get(k)))
    return problems, sum(v for d in exports.values() for _, v in d["metrics"]["nccl.operations"])


def env_for(port, extra):
    e = {"NCCL_INSPECTOR_OTLP_EXPORT": "1",
         "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:%d" % port,
         "OTEL_METRIC_EXPORT_INTERVAL": "200"}
    # the default request timeout (10 s): the last export at exit then has the sink's whole
    # 3 s to arrive, so a slow machine cannot lose it and fail a comparison
    e.update(extra)
    return e


def replay_case(name, traces, extra, json_mode=False, expect_log=True, labels=()):
    def fn(a):
        if not shutil.which("protoc") and not json_mode:
            return True, "SKIP %s: protoc not installed (Debian: protobuf-compiler)" % name
        with harness.Workdir(a.keep, "otlp") as wd:
            os.makedirs(wd.dump)
            rec = Receiver(os.path.join(wd.path, "recv"))
            try:
                env = harness.make_env(env_for(rec.port, extra), dump_dir=wd.dump)
                cmd = harness.replay_cmd(a.replay, a.plugin, [harness.fixture(t) for t in traces],
                                         abi="trace")
                r = harness.run(cmd, env, wd.cwd, a.timeout)
            finally:
                rec.stop()
            exports, problems = last_exports(rec, json_mode)
            if r.rc:
                problems.append("replay rc %s: %s" % (r.rc, r.stderr[-500:]))
            p2, n = compare(wd.dump, exports, expect_log)
            problems += p2
            if not expect_log and glob.glob(os.path.join(wd.dump, "*.log")):
                problems.append("a JSON log was written with NCCL_INSPECTOR_JSON_DUMP=0")
            ctypes = {q["ctype"] for q in rec.requests()}
            want_ct = "application/json" if json_mode else "application/x-protobuf"
            if ctypes != {want_ct}:
                problems.append("content types %s" % ctypes)
            if extra.get("OTEL_EXPORTER_OTLP_COMPRESSION") == "gzip" and \
                    {q["encoding"] for q in rec.requests()} != {"gzip"}:
                problems.append("not gzip: %s" % {q["encoding"] for q in rec.requests()})
            if extra.get("INSPECTOR_OTLP_MAX_BODY_BYTES") and \
                    not any(d["bodies"] > 1 for d in exports.values()):
                problems.append("no export was split: %s" % [d["bodies"] for d in exports.values()])
            if problems:
                wd.failed = True
                return False, "FAIL %s: %s" % (name, "; ".join(problems[:6]))
            return True, "OK %s: %d requests, %d operations in the last exports (%s bodies), equal to " \
                "the log" % (name, len(rec.requests()), n, [d["bodies"] for d in exports.values()])
    return harness.Case(name, fn, labels=["otlp"] + list(labels), timeout=120)


TORCH = ["2.28.9/torch-1735"]
BUSY = os.path.join(harness.DATA, "gpu-truth", "live-mix-b2b-busy", "trace.jsonl.gz")


def bound_totals(dump):
    """The log's bound lines per (communicator, rank, operation, size, peer), as otlp_totals keys."""
    tot = collections.Counter()
    for f in glob.glob(os.path.join(dump, "*.log")):
        for line in open(f):
            o = json.loads(line)
            for kind in ("coll", "p2p"):
                b = o.get(kind + "_bound")
                if b:
                    h = o["header"]
                    tot[(h["id"], str(h["rank"]), b[kind], bucket(b[kind + "_msg_size_bytes"]),
                         str(b["p2p_peer"]) if kind == "p2p" else None)] += 1
    return tot


def bounds_case():
    """The bounds of the ops left out: apart from the records, or (mix) among them."""
    name = "otlp.bounds"

    def one(a, wd, mode):
        dump = os.path.join(wd.path, mode)
        os.makedirs(dump)
        rec = Receiver(os.path.join(wd.path, "recv-" + mode))
        try:
            env = harness.make_env(env_for(rec.port, {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json",
                                                      "NCCL_INSPECTOR_BOUNDS": mode}), dump_dir=dump)
            r = harness.run(harness.replay_cmd(a.replay, a.plugin, [BUSY]) + ["--recorded-clock"],
                            env, wd.cwd, a.timeout)
        finally:
            rec.stop()
        exports, problems = last_exports(rec, True)
        if r.rc:
            problems.append("%s: replay rc %s" % (mode, r.rc))
        tot, _, _ = log_totals(dump)
        bounds = bound_totals(dump)
        ops, bops, btime = collections.Counter(), collections.Counter(), collections.Counter()
        for dec in exports.values():
            for a, v in dec["metrics"].get("nccl.operations", []):
                ops[(a["nccl.comm.id"], a["nccl.rank"], a["nccl.operation"], a["nccl.message_size"],
                     a.get("nccl.peer"))] += v
            for metric, c in (("nccl.bound_operations", bops), ("nccl.bound_time", btime)):
                for a, v in dec["metrics"].get(metric, []):
                    c[(a["nccl.comm.id"], a["nccl.rank"], a["nccl.operation"], a["nccl.message_size"],
                       a.get("nccl.peer"))] += v if metric == "nccl.bound_operations" else v["count"]
        recs = collections.Counter({k: v[0] for d in tot.values() for k, v in d.items()})
        if not bounds:
            problems.append("%s: no bound lines" % mode)
        want_ops = recs + bounds if mode == "mix" else recs
        want_b = collections.Counter() if mode == "mix" else bounds
        if ops != want_ops:
            problems.append("%s: nccl.operations %d, want %d" % (mode, sum(ops.values()), sum(want_ops.values())))
        if bops != want_b or btime != want_b:
            problems.append("%s: bound operations %d, histogram counts %d, log's bound lines %d" % (
                mode, sum(bops.values()), sum(btime.values()), sum(want_b.values())))
        return problems, sum(bounds.values())

    def fn(a):
        with harness.Workdir(a.keep, "otlp") as wd:
            problems, n = one(a, wd, "apart")
            p2, _ = one(a, wd, "mix")
            problems += p2
            if problems:
                wd.failed = True
                return False, "FAIL %s: %s" % (name, "; ".join(problems[:6]))
            return True, "OK %s: %d bounds apart from the records, and among them with mix" % (name, n)
    return harness.Case(name, fn, labels=["otlp"], timeout=120)


def collector_down_case():
    def fn(a):
        with harness.Workdir(a.keep, "otlp") as wd:
            os.makedirs(wd.dump)
            import socket
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
            s.close()  # nothing listens there now
            env = harness.make_env(env_for(port, {}), dump_dir=wd.dump)
            cmd = harness.replay_cmd(a.replay, a.plugin, [harness.fixture(t) for t in TORCH], abi="trace")
            r = harness.run(cmd, env, wd.cwd, a.timeout)
            tot, _, _ = log_totals(wd.dump)
            warns = [l for l in (r.stdout + r.stderr).splitlines() if "WARN" in l and "OTLP" in l.upper()]
            if r.rc or not tot or len(warns) > 2:
                wd.failed = True
                return False, "FAIL otlp.collector-down: rc %s, log %d, OTLP warnings %d:\n%s" % (
                    r.rc, len(tot), len(warns), "\n".join(warns[:6]))
            return True, "OK otlp.collector-down: the job ran, its log complete, %d OTLP warning(s)" % len(warns)
    return harness.Case("otlp.collector-down", fn, labels=["otlp"], timeout=120)


def comes_back_case():
    """The receiver away at start (not listening), back after the job has run a while: the
    replay is paced (40 rounds, about 5 s) so that exports fail for the first second. What is
    judged is the outcome, not the timing: the last export holds every count, and the
    exports_dropped metric is there (its value depends on how fast the machine is)."""
    def fn(a):
        if not shutil.which("protoc"):
            return True, "SKIP otlp.comes-back: protoc not installed"
        with harness.Workdir(a.keep, "otlp") as wd:
            os.makedirs(wd.dump)
            rec = Receiver(os.path.join(wd.path, "recv"), control={"listen": False})
            try:
                env = harness.make_env(env_for(rec.port, {"OTEL_METRIC_EXPORT_INTERVAL": "50"}),
                                       dump_dir=wd.dump)
                cmd = harness.replay_cmd(a.replay, a.plugin, [harness.fixture(t) for t in TORCH],
                                         abi="trace") + ["--repeat", "40", "--pace-us", "1000"]
                p = subprocess.Popen(cmd, env=env, cwd=wd.cwd, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, universal_newlines=True)
                time.sleep(1.0)  # the job runs about 5 s: exports fail for the first second
                rec.control({"listen": True})
                out, err = p.communicate(timeout=a.timeout)
            finally:
                rec.stop()
            exports, problems = last_exports(rec, False)
            if p.returncode:
                problems.append("replay rc %s" % p.returncode)
            p2, n = compare(wd.dump, exports)
            problems += p2
            dropped = [v for d in exports.values() for _, v in d["metrics"]["nccl.inspector.otlp.exports_dropped"]]
            if not dropped:
                problems.append("no exports_dropped metric")
            if problems:
                wd.failed = True
                return False, "FAIL otlp.comes-back: %s" % "; ".join(problems[:6])
            return True, "OK otlp.comes-back: totals complete after the collector came back; exports " \
                "dropped meanwhile, as exported: %s" % dropped
    return harness.Case("otlp.comes-back", fn, labels=["otlp"], timeout=180)


def two_processes_case():
    def fn(a):
        if not shutil.which("protoc"):
            return True, "SKIP otlp.two-processes: protoc not installed"
        with harness.Workdir(a.keep, "otlp") as wd:
            rec = Receiver(os.path.join(wd.path, "recv"))
            procs, dumps = [], []
            try:
                for i in range(2):
                    d = os.path.join(wd.path, "dump%d" % i)
                    os.makedirs(d)
                    dumps.append(d)
                    env = harness.make_env({
                        "NCCL_INSPECTOR_OTLP_EXPORT": "1", "OTEL_METRIC_EXPORT_INTERVAL": "100",
                        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://127.0.0.1:%d/otlp/prefix/v1/metrics" % rec.port,
                        "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20a=b%2Cc,x-scope=team%3Done"},
                        dump_dir=d)
                    cmd = harness.replay_cmd(a.replay, a.plugin, [harness.fixture("2.28.9/ar")], abi="trace")
                    procs.append(subprocess.Popen(cmd, env=env, cwd=wd.cwd, stdout=subprocess.DEVNULL,
                                                  stderr=subprocess.DEVNULL))
                rcs = [p.wait(a.timeout) for p in procs]
            finally:
                rec.stop()
            exports, problems = last_exports(rec, False)
            if any(rcs):
                problems.append("replay rc %s" % rcs)
            for d in dumps:
                problems += compare(d, exports)[0]
            paths = {q["path"] for q in rec.requests()}
            if paths != {"/otlp/prefix/v1/metrics"}:
                problems.append("paths %s" % paths)
            for q in rec.requests():
                hdr = open(os.path.join(rec.dir, "%d.headers" % q["seq"])).read()
                if "authorization: Bearer a=b,c" not in hdr.lower().replace("authorization: bearer",
                                                                             "authorization: Bearer") \
                        or "x-scope: team=one" not in hdr.lower():
                    problems.append("headers of request %d: %r" % (q["seq"], hdr[:300]))
                    break
            if len(exports) != 2:
                problems.append("%d processes exported" % len(exports))
            if problems:
                wd.failed = True
                return False, "FAIL otlp.two-processes: %s" % "; ".join(problems[:6])
            return True, "OK otlp.two-processes: 2 processes, %d requests, path and headers intact" % len(
                rec.requests())
    return harness.Case("otlp.two-processes", fn, labels=["otlp"], timeout=120)


# ---- hardening: a resolver that never answers, answers that never end, secrets, headers ------

# The exporter's whole say at exit (src/sink/otlp/otlp.c STOP_DEADLINE_MS) and slack for a slow or
# sanitized machine; without the bounds each of these runs is held for minutes (killed at
# HELD_S). The job itself replays in about a second.
EXIT_BOUND_S = 3 + 9
HELD_S = 40

# Run inside `unshare --net --mount`: loopback up, the private resolv.conf bound over
# /etc/resolv.conf, a UDP (and TCP) socket on 127.0.0.1:53 that nobody reads, handed to the
# job (inheritable): the resolver's queries go there and are never answered. A first lookup
# that has not come back after 1.5 s proves it; exit 77 (skip) with the reason otherwise.
NS_HELPER = r"""
import ctypes, fcntl, os, socket, struct, sys, threading
resolv, name, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
def skip(why):
    print("SKIP-REASON: " + why, flush=True)
    sys.exit(77)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    ifr = fcntl.ioctl(u, 0x8913, struct.pack("16sH22x", b"lo", 0))  # SIOCGIFFLAGS
    flags = struct.unpack("16sH22x", ifr)[1]
    fcntl.ioctl(u, 0x8914, struct.pack("16sH22x", b"lo", flags | 1))  # SIOCSIFFLAGS, IFF_UP
except OSError as e:
    skip("cannot bring up loopback in the namespace: %s" % e)
libc = ctypes.CDLL(None, use_errno=True)
if libc.mount(resolv.encode(), b"/etc/resolv.conf", None, 4096, None) != 0:  # MS_BIND
    skip("cannot bind a private /etc/resolv.conf: %s" % os.strerror(ctypes.get_errno()))
try:
    u.bind(("127.0.0.1", 53))
    t = socket.socket()
    t.bind(("127.0.0.1", 53))
    t.listen(64)
except OSError as e:
    skip("cannot bind 127.0.0.1:53 in the namespace: %s" % e)
done = []
def probe():
    try:
        socket.getaddrinfo(name, 4318)
    except OSError:
        pass
    done.append(1)
th = threading.Thread(target=probe, daemon=True)
th.start()
th.join(1.5)
if done:
    skip("a lookup of %s came back at once: this machine's resolver does not wait on DNS "
         "(/etc/nsswitch.conf without dns?)" % name)
os.set_inheritable(u.fileno(), True)
os.set_inheritable(t.fileno(), True)
os.execv(argv[0], argv)
"""


def silent_dns_case():
    def fn(a):
        unshare = shutil.which("unshare")
        if not unshare:
            return True, "SKIP otlp.silent-dns: no unshare(1) (util-linux) to make a namespace"
        name = "collector.otlp-test.example"
        with harness.Workdir(a.keep, "otlp") as wd:
            os.makedirs(wd.dump)
            resolv = os.path.join(wd.path, "resolv.conf")
            with open(resolv, "w") as f:  # glibc's longest waits: minutes per lookup
                f.write("nameserver 127.0.0.1\noptions timeout:30 attempts:2\n"
                        "search a.otlp-test.example b.otlp-test.example\n")
            env = harness.make_env(env_for(0, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://%s:4318" % name}),
                                   dump_dir=wd.dump)
            env.pop("LOCALDOMAIN", None)
            env.pop("RES_OPTIONS", None)
            cmd = [unshare, "--net", "--mount", sys.executable, "-B", "-c", NS_HELPER, resolv, name] + \
                harness.replay_cmd(a.replay, a.plugin, [harness.fixture(t) for t in TORCH], abi="trace")
            t0 = time.monotonic()
            r = harness.run(cmd, env, wd.cwd, HELD_S)
            took = time.monotonic() - t0
            if r.rc == 77 or (r.rc and "SKIP-REASON" not in r.stdout and
                              re.search(r"unshare: .*(Operation not permitted|Permission denied)", r.stderr)):
                reason = [l for l in (r.stdout + r.stderr).splitlines() if "SKIP-REASON" in l or "unshare" in l]
                return True, "SKIP otlp.silent-dns: %s" % (reason[0] if reason else "no namespace")
            problems = []
            if r.timed_out:
                problems.append("the job was held past %d s by a resolver that never answers" % HELD_S)
            elif r.rc:
                problems.append("replay rc %s: %s" % (r.rc, r.stderr[-500:]))
            if took > EXIT_BOUND_S:
                problems.append("the job took %.1f s (bound %d s)" % (took, EXIT_BOUND_S))
            tot, _, _ = log_totals(wd.dump)
            if not tot:
                problems.append("no JSON log: the job itself did not run")
            problems += harness.sanitizer_reports(r.stderr)
            if problems:
                wd.failed = True
                return False, "FAIL otlp.silent-dns: %s" % "; ".join(problems)
            return True, "OK otlp.silent-dns: the job exited after %.1f s with a resolver that never " \
                "answers (each lookup would wait minutes)" % took
    return harness.Case("otlp.silent-dns", fn, labels=["otlp"], timeout=HELD_S + 30)


class EndlessServer:
    """On 127.0.0.1: reads each request's head, then sends `head` once and `unit` over and over
    (1 MiB at a time, as fast as the client reads) until the client goes, stop(), or HELD_S + 20 s
    (a bound only a client that never gives up reaches)."""

    def __init__(self, head, unit):
        self.head, self.block = head, unit * ((1 << 20) // len(unit))
        self.lsock = socket.socket()
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(16)
        self.lsock.settimeout(0.1)
        self.port = self.lsock.getsockname()[1]
        self.done = False
        self.conns = 0
        self.end = time.monotonic() + HELD_S + 20
        self.t = threading.Thread(target=self.serve, daemon=True)
        self.t.start()

    def serve(self):
        while not self.done and time.monotonic() < self.end:
            try:
                c, _ = self.lsock.accept()
            except socket.timeout:
                continue
            self.conns += 1
            threading.Thread(target=self.one, args=(c,), daemon=True).start()

    def one(self, c):
        c.settimeout(0.5)
        try:
            got = b""
            while b"\r\n\r\n" not in got and not self.done:
                try:
                    b = c.recv(65536)
                except socket.timeout:
                    continue
                if not b:
                    return
                got += b
            c.sendall(self.head)
            off = 0  # a send cut short goes on where it stopped: the stream stays whole
            while not self.done and time.monotonic() < self.end:
                try:
                    off = (off + c.send(self.block[off:] if off else self.block)) % len(self.block)
                except socket.timeout:
                    continue
        except OSError:
            pass  # the client went away: what a bounded client does
        finally:
            c.close()

    def stop(self):
        self.done = True
        self.t.join(5)
        self.lsock.close()


def endless_case(name, head, unit, want_warn):
    def fn(a):
        with harness.Workdir(a.keep, "otlp") as wd:
            os.makedirs(wd.dump)
            srv = EndlessServer(head, unit)
            try:
                env = harness.make_env(env_for(srv.port, {"OTEL_EXPORTER_OTLP_TIMEOUT": "2000"}),
                                       dump_dir=wd.dump)
                cmd = harness.replay_cmd(a.replay, a.plugin, [harness.fixture(t) for t in TORCH], abi="trace") \
                    + ["--repeat", "40", "--pace-us", "1000"]  # about 5 s: a request times out in it
                # the same job without OTLP first: how long the job itself takes on this machine
                t0 = time.monotonic()
                base = harness.run(cmd, dict(env, NCCL_INSPECTOR_OTLP_EXPORT="0"), wd.cwd, HELD_S)
                job = time.monotonic() - t0
                shutil.rmtree(wd.dump)
                os.makedirs(wd.dump)
                t0 = time.monotonic()
                r = harness.run(cmd, env, wd.cwd, HELD_S)
                took = time.monotonic() - t0
            finally:
                srv.stop()
            problems = []
            if base.rc:
                problems.append("the job without OTLP: rc %s" % base.rc)
            if r.timed_out:
                problems.append("the job was held past %d s by an answer that never ends" % HELD_S)
            elif r.rc:
                problems.append("replay rc %s: %s" % (r.rc, r.stderr[-500:]))
            if took > job + EXIT_BOUND_S:
                problems.append("the job took %.1f s, %.1f s without OTLP (bound: %d s more)" % (
                    took, job, EXIT_BOUND_S))
            if not srv.conns:
                problems.append("the exporter never connected")
            warns = [l for l in r.stderr.splitlines() if "cannot deliver metrics" in l]
            if len(warns) != 1 or want_warn not in warns[0]:
                problems.append("expected one 'cannot deliver' warning saying %r: %s" % (want_warn, warns[:3]))
            problems += harness.sanitizer_reports(r.stderr)
            if problems:
                wd.failed = True
                return False, "FAIL %s: %s" % (name, "; ".join(problems))
            return True, "OK %s: the job exited after %.1f s (%.1f s without OTLP); %s" % (
                name, took, job, warns[0].split("OTLP")[-1][:160])
    return harness.Case(name, fn, labels=["otlp"], timeout=HELD_S + 30)


SECRETS = ("PASSWORD", "TOKEN", "s3cr3t")


def redacted_urls_case():
    """Three runs, one warning each: a URL the exporter cannot use (user:password@), a wrong
    scheme (METRICS_ENDPOINT), a base too long; each shows the URL redacted, no secret."""
    runs = [({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://user:PASSWORD@127.0.0.1:4318?token=TOKEN"},
             "http://***@127.0.0.1:4318/v1/metrics?***"),
            ({"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "grpc://u:PASSWORD@collector:4317/?token=TOKEN&k=s3cr3t"},
             "'grpc://***@collector:4317/?***'"),
            ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector/" + "p" * 2100 + "?token=TOKEN"},
             "'http://collector/***?***'")]

    def fn(a):
        problems, shown = [], []
        for extra, want in runs:
            with harness.Workdir(a.keep, "otlp") as wd:
                os.makedirs(wd.dump)
                env = harness.make_env(dict({"NCCL_INSPECTOR_OTLP_EXPORT": "1",
                                             "OTEL_METRIC_EXPORT_INTERVAL": "200"}, **extra), dump_dir=wd.dump)
                cmd = harness.replay_cmd(a.replay, a.plugin, [harness.fixture("2.28.9/ar")], abi="trace")
                r = harness.run(cmd, env, wd.cwd, a.timeout)
                out = r.stdout + r.stderr
                if r.rc:
                    problems.append("replay rc %s" % r.rc)
                leaks = [s for s in SECRETS if s in out]
                if leaks:
                    problems.append("%s printed: %s" % (leaks, [l for l in out.splitlines()
                                                                if any(s in l for s in leaks)][:2]))
                hits = [l for l in out.splitlines() if want in l]
                if not hits:
                    problems.append("no warning shows %r" % want)
                else:
                    shown.append(hits[0][hits[0].find(want):][:90])
                problems += harness.sanitizer_reports(r.stderr)
        if problems:
            return False, "FAIL otlp.redacted-urls: %s" % "; ".join(problems)
        return True, "OK otlp.redacted-urls: shown as %s" % shown
    return harness.Case("otlp.redacted-urls", fn, labels=["otlp"], timeout=120)


def reserved_headers_case():
    def fn(a):
        if not shutil.which("protoc"):
            return True, "SKIP otlp.reserved-headers: protoc not installed"
        with harness.Workdir(a.keep, "otlp") as wd:
            os.makedirs(wd.dump)
            rec = Receiver(os.path.join(wd.path, "recv"))
            try:
                env = harness.make_env(env_for(rec.port, {
                    "OTEL_EXPORTER_OTLP_HEADERS": "Host=evil.example,Content-Length=7,x-scope=team%3Done,"
                                                  "Transfer-Encoding=chunked,connection=close"}),
                    dump_dir=wd.dump)
                cmd = harness.replay_cmd(a.replay, a.plugin, [harness.fixture(t) for t in TORCH], abi="trace")
                r = harness.run(cmd, env, wd.cwd, a.timeout)
            finally:
                rec.stop()
            exports, problems = last_exports(rec, False)
            if r.rc:
                problems.append("replay rc %s: %s" % (r.rc, r.stderr[-500:]))
            problems += compare(wd.dump, exports)[0]
            reqs = rec.requests()
            if not reqs:
                problems.append("no request arrived")
            for q in reqs:
                lines = open(os.path.join(rec.dir, "%d.headers" % q["seq"])).read().splitlines()
                names = [l.split(":", 1)[0].lower() for l in lines]
                host = [l for l in lines if l.lower().startswith("host:")]
                if names.count("host") != 1 or names.count("content-length") != 1 or \
                        "transfer-encoding" in names or "connection" in names or \
                        host != ["Host: 127.0.0.1:%d" % rec.port] or "x-scope: team=one" not in \
                        [l.lower() for l in lines]:
                    problems.append("request %d's headers: %s" % (q["seq"], lines))
                    break
            warns = [l for l in r.stderr.splitlines() if "OTEL_EXPORTER_OTLP_HEADERS" in l]
            if len(warns) != 1 or not all(n in warns[0] for n in
                                          ("Host", "Content-Length", "Transfer-Encoding", "connection")):
                problems.append("expected one warning naming the four headers: %s" % warns)
            if "evil.example" in r.stderr or "chunked" in r.stderr:
                problems.append("a dropped header's value was printed")
            problems += harness.sanitizer_reports(r.stderr)
            if problems:
                wd.failed = True
                return False, "FAIL otlp.reserved-headers: %s" % "; ".join(problems[:6])
            return True, "OK otlp.reserved-headers: %d requests, one Host and one Content-Length each, " \
                "totals equal to the log; %s" % (len(reqs), warns[0].split("Inspector:")[-1][:150])
    return harness.Case("otlp.reserved-headers", fn, labels=["otlp"], timeout=120)


def cases():
    return [replay_case("otlp.protobuf", TORCH, {}),
            replay_case("otlp.json", TORCH, {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, json_mode=True),
            replay_case("otlp.gzip", TORCH, {"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"}),
            replay_case("otlp.stale", ["2.28.9/va2a-r0"], {}),
            replay_case("otlp.split", TORCH, {"INSPECTOR_OTLP_MAX_BODY_BYTES": "2000"}),
            replay_case("otlp.synonym", TORCH, {"NCCL_INSPECTOR_OTLP_EXPORT": "0",
                                                "NCCL_INSPECTOR_OTEL_EXPORT": "1",
                                                "NCCL_INSPECTOR_JSON_DUMP": "0"}, expect_log=False),
            bounds_case(), collector_down_case(), comes_back_case(), two_processes_case(),
            silent_dns_case(),
            endless_case("otlp.endless-interim", b"HTTP/1.1 100 Continue\r\n\r\n",
                         b"HTTP/1.1 100 Continue\r\n\r\n", "interim"),
            endless_case("otlp.endless-body", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
                         b"1\r\nx\r\n", "did not complete within the timeout"),
            redacted_urls_case(), reserved_headers_case()]


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))
