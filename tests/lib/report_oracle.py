# SPDX-License-Identifier: Apache-2.0
"""What inspector-report must find in a set of logs, computed here from the logs alone by the
rules docs/report.md states (an independent implementation in Python, for the tests):

  clock offsets   per process (hostname, pid): alternately, each collective's common end is the
                  median over its ranks of (end - offset), and each process's offset is the median
                  over its ops of (end - common end); zero is the median process; 8 rounds
                  (the tests' jobs have fewer than 64 collectives per process: the report fits
                  no rate below that, a constant offset on every one of them); times are taken
                  less the earliest end, exact in a float (1.8e18 ns is good to 256 ns)
  lateness        per rank and collective: aligned start - median aligned start of the other ranks
  straggler       late (>= threshold) in >= late_share of its collectives, median lateness >=
                  threshold; threshold = max(late_us, 3 x residual p95)
"""
import collections
import glob
import gzip
import json
import os


def median(v):
    v = sorted(v)
    n = len(v)
    if not n:
        return 0.0
    return float(v[n // 2]) if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2.0


def read_logs(path):
    """Every coll_perf / p2p_perf record under path (recursive), as dicts."""
    recs = []
    files = [f for f in glob.glob(os.path.join(path, "**", "*"), recursive=True)
             if f.endswith((".log", ".jsonl", ".log.gz", ".jsonl.gz"))]
    for f in sorted(files):
        op = gzip.open if f.endswith(".gz") else open
        with op(f, "rt") as fi:
            for line in fi:
                o = json.loads(line)
                kind = "coll" if "coll_perf" in o else "p2p" if "p2p_perf" in o else None
                if not kind:
                    continue
                p = o[kind + "_perf"]
                recs.append({
                    "comm": o["header"]["id"], "rank": o["header"]["rank"],
                    "nranks": o["header"]["n_ranks"], "kind": kind, "op": p[kind],
                    "sn": p[kind + "_sn"], "bytes": p[kind + "_msg_size_bytes"],
                    "start": p.get(kind + "_start_ts_ns", 0), "exec": p.get(kind + "_exec_time_ns", 0),
                    "exec_us": p[kind + "_exec_time_us"],
                    "busbw": p[kind + "_busbw_gbs"], "peer": p.get("p2p_peer", -1),
                    "stale": p.get(kind + "_stale_channels", 0),
                    "timing": p.get(kind + "_timing_source"),
                    "clock": (o["metadata"]["hostname"], o["metadata"]["pid"])})
    return recs


def kept(r, max_busbw=900.0):
    return not r["stale"] and r["timing"] == "kernel_gpu" and r["busbw"] <= max_busbw


def instances(recs):
    """Collectives seen on two or more ranks: {(comm, op, sn): [records]}."""
    by = collections.defaultdict(list)
    for r in recs:
        if r["kind"] == "coll" and kept(r) and r["start"]:
            by[(r["comm"], r["op"], r["sn"])].append(r)
    return {k: v for k, v in by.items() if len(v) >= 2}


def align(inst, rounds=8):
    """{clock: offset_ns}, [abs residuals ns]."""
    clocks = sorted({r["clock"] for v in inst.values() for r in v})
    off = {c: 0.0 for c in clocks}
    for _ in range(rounds):
        res = collections.defaultdict(list)
        for v in inst.values():
            common = median([r["start"] + r["exec"] - off[r["clock"]] for r in v])
            for r in v:
                res[r["clock"]].append(r["start"] + r["exec"] - common)
        off = {c: median(res[c]) for c in clocks}
        z = median(list(off.values()))  # one connected set assumed by the tests
        off = {c: o - z for c, o in off.items()}
    resid = []
    for v in inst.values():
        common = median([r["start"] + r["exec"] - off[r["clock"]] for r in v])
        resid += [abs(r["start"] + r["exec"] - off[r["clock"]] - common) for r in v]
    return off, resid


def pct(v, q):
    v = sorted(v)
    return v[min(int(q * len(v)), len(v) - 1)] if v else 0.0


def stragglers(recs, late_us=100.0, late_share=0.5):
    """[(comm, rank, median lateness us, late share)], and the alignment residual p95 in us."""
    inst = instances(recs)
    ref = min((r["start"] + r["exec"] for v in inst.values() for r in v), default=0)
    inst = {k: [dict(r, start=r["start"] - ref) for r in v] for k, v in inst.items()}
    off, resid = align(inst)
    thr = max(late_us * 1e3, 3 * pct(resid, 0.95))
    late = collections.defaultdict(list)
    for v in inst.values():
        a = [(r["start"] - off[r["clock"]], r) for r in v]
        for i, (s, r) in enumerate(a):
            others = [x for k, (x, _) in enumerate(a) if k != i]
            late[(r["comm"], r["rank"])].append(s - median(others))
    out = []
    for (comm, rank), v in sorted(late.items()):
        share = sum(1 for x in v if x >= thr) / float(len(v))
        if share >= late_share and median(v) >= thr:
            out.append((comm, rank, median(v) / 1e3, share))
    return out, pct(resid, 0.95) / 1e3, off
