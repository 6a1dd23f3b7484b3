#!/usr/bin/env python3
"""The OTLP sink end to end: fixtures replayed through the plugin with NCCL_INSPECTOR_OTLP_EXPORT=1
against a local receiver (tests/otlp_receiver.py on 127.0.0.1) that stores every request body.
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
  otlp.collector-down  no receiver at all: the job's replay still succeeds, one warning, no hang
  otlp.comes-back      the receiver away at start and back later: the last export arrives with
                       every count, and the exports dropped meanwhile are counted in
                       nccl.inspector.otlp.exports_dropped
  otlp.two-processes   two replays at once into one receiver with a path in the endpoint and
                       headers with '=' and ',' in their values: both processes' totals arrive,
                       headers intact
"""
import collections
import glob
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
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
                else:
                    for p in m["exponentialHistogram"].get("dataPoints", []):
                        out["metrics"][m["name"]].append((attrs(p.get("attributes")), {
                            "count": int(p["count"]), "zero_count": int(p.get("zeroCount", 0)),
                            "buckets": [int(c) for c in p.get("positive", {}).get("bucketCounts", [])]}))
    return out


# ---- the receiver ---------------------------------------------------------------------------

class Receiver:
    def __init__(self, d, control=None):
        self.dir = d
        os.makedirs(d)
        if control is not None:
            with open(os.path.join(d, "control.json"), "w") as f:
                json.dump(control, f)
        self.p = subprocess.Popen([sys.executable, "-B", os.path.join(HERE, "otlp_receiver.py"),
                                   "--dir", d], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
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
    """{pid: {(comm, rank, op, bucket): [ops, bytes]}}, {pid: {kind: stale}}, {pid: {kind: dropped}}"""
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
            kind = "coll" if "coll_perf" in o else "p2p"
            p = o[kind + "_perf"]
            if p.get(kind + "_stale_channels", 0):
                stale[pid][kind] += 1
                continue
            t = tot[pid][(h["id"], str(h["rank"]), p[kind], bucket(p[kind + "_msg_size_bytes"]))]
            t[0] += 1
            t[1] += p[kind + "_msg_size_bytes"]
    return tot, stale, dropped


def otlp_totals(dec):
    ops = {(a["nccl.comm.id"], a["nccl.rank"], a["nccl.operation"], a["nccl.message_size"]): v
           for a, v in dec["metrics"]["nccl.operations"]}
    byt = {(a["nccl.comm.id"], a["nccl.rank"], a["nccl.operation"], a["nccl.message_size"]): v
           for a, v in dec["metrics"]["nccl.bytes"]}
    hist = {(a["nccl.comm.id"], a["nccl.rank"], a["nccl.operation"], a["nccl.message_size"]): h
            for a, h in dec["metrics"]["nccl.exec_time"]}
    return ops, byt, hist


def last_exports(rec, json_mode):
    """{pid: the last export, decoded}; every body checked (protoc / JSON) on the way. An export
    split into several bodies (same time_unix_nano) is put back together."""
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
        if prev and prev.get("time") and prev.get("time") == dec.get("time"):
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
        ops, byt, hist = otlp_totals(dec)
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
        for k, h in hist.items():
            if h["count"] != ops.get(k) or h["zero_count"] + sum(h["buckets"]) != h["count"]:
                problems.append("pid %s %s: histogram count %d, buckets %d, ops %s" % (
                    pid, k, h["count"], sum(h["buckets"]), ops.get(k)))
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


def cases():
    return [replay_case("otlp.protobuf", TORCH, {}),
            replay_case("otlp.json", TORCH, {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, json_mode=True),
            replay_case("otlp.gzip", TORCH, {"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"}),
            replay_case("otlp.stale", ["2.28.9/va2a-r0"], {}),
            replay_case("otlp.split", TORCH, {"INSPECTOR_OTLP_MAX_BODY_BYTES": "2000"}),
            replay_case("otlp.synonym", TORCH, {"NCCL_INSPECTOR_OTLP_EXPORT": "0",
                                                "NCCL_INSPECTOR_OTEL_EXPORT": "1",
                                                "NCCL_INSPECTOR_JSON_DUMP": "0"}, expect_log=False),
            collector_down_case(), comes_back_case(), two_processes_case()]


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))
