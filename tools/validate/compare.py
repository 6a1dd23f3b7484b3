#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Join the validation workload's CUDA-event timings with the plugin's records, and report
coverage and accuracy per operation and size (standard library only, so CI runs it).

    compare.py --ops DIR --logs DIR [--min-size 8192] [--ref cuda|nccl] [--json OUT]

DIR of ops: the workload's ops-rank<r>.json. DIR of logs: the plugin's *.log files.

Joining. Per rank, each NCCL communicator the plugin saw is assigned to the workload group
("default", "second") whose issued ops it matches best. Within a (rank, communicator,
function), collectives are joined by sequence number: NCCL's coll_sn counts that function's
ops on that communicator, so the i-th issued op has sn = base + i for one base (found as the
base matching the most sizes; PyTorch may issue ops of its own first). Point-to-point records
are joined in p2p_sn order, Send and Recv separately, at the offset matching the most sizes.

Coverage = records joined / ops issued at or above the minimum size (warm-ups included).
Accuracy = |plugin exec_time_ns - reference| / reference over the timed ops. The reference is
the workload's CUDA events around the op on its own stream ("cuda", the default), or with
--ref nccl the events PyTorch records on its NCCL stream right around the NCCL call
("nccl_ns", present when the workload ran with TORCH_NCCL_ENABLE_TIMING=1): the tighter one,
without the cross-stream waits; with --ref kernel the NCCL kernel's own duration as CUPTI
reports it ("kernel_ns", present when the workload ran with --cupti): the tightest.

--sampled: the plugin timed only some groups (NCCL_INSPECTOR_SAMPLE_*): coverage is reported
but not judged (ops of unsampled groups have no record by design); accuracy is judged on the
records found. Collectives only: P2P records are joined by order, which sampling breaks.
Bus bandwidth from the CUDA-event time uses nccl-tests' factors, as the plugin does.
"""
import argparse
import glob
import json
import os
import statistics
import sys
from collections import defaultdict

P2P = ("Send", "Recv")
REF_FIELD = {"cuda": "cuda_ns", "nccl": "nccl_ns", "kernel": "kernel_ns"}


def busbw_factor(func, n):
    if func == "AllReduce":
        return 2.0 * (n - 1) / n
    if func in ("AllGather", "ReduceScatter", "AllToAll"):
        return (n - 1) / n
    return 1.0


def bw_bytes(func, size, n):
    return size * n if func in ("AllGather", "ReduceScatter") else size


def load_ops(ops_dir):
    """{rank: {"world": n, "ops": [...]}} from the workload's files."""
    out = {}
    for path in sorted(glob.glob(os.path.join(ops_dir, "ops-rank*.json"))):
        with open(path) as f:
            d = json.load(f)
        out[d["rank"]] = d
    if not out:
        raise SystemExit("no ops-rank*.json in %s" % ops_dir)
    return out


def load_records(log_dir):
    """{(rank, comm_id): {func: [record dict sorted by sn]}} from the plugin's logs."""
    recs = defaultdict(lambda: defaultdict(list))
    bad = 0
    for path in sorted(glob.glob(os.path.join(log_dir, "*.log"))):
        with open(path) as f:
            for line in f:
                try:
                    o = json.loads(line)
                except ValueError:
                    bad += 1
                    continue
                perf = o.get("coll_perf") or o.get("p2p_perf")
                if not perf:
                    continue
                p = "coll_" if "coll_perf" in o else "p2p_"
                h = o["header"]
                r = {"func": perf["coll" if p == "coll_" else "p2p"], "sn": perf[p + "sn"],
                     "size": perf[p + "msg_size_bytes"], "ns": perf[p + "exec_time_ns"],
                     "busbw": perf[p + "busbw_gbs"], "source": perf[p + "timing_source"],
                     "nranks": h["n_ranks"]}
                recs[(h["rank"], h["id"])][r["func"]].append(r)
    for by_func in recs.values():
        for lst in by_func.values():
            lst.sort(key=lambda r: r["sn"])
    return recs, bad


def expected_streams(ops, group, min_size):
    """{func: [(index into ops, size)]} of the records the group's issued ops should give."""
    out = defaultdict(list)
    for i, op in enumerate(ops):
        if op["group"] != group:
            continue
        for func, size in op["expect"]:
            if size >= min_size:
                out[func].append((i, size))
    return out


def coll_base(pairs):
    """The base sn of a communicator's function: the i-th issued op has sn = base + i. Chosen
    over all ranks together (they share the communicator, so the base), as the base matching
    the most sizes; a tie goes to the base under which the first issued op is found."""
    best, best_base = None, None
    for records, want in pairs:
        for base in {r["sn"] - k for r in records[:8] for k in range(min(8, len(want)))}:
            score = 0.0
            for recs2, want2 in pairs:
                sn2 = {r["sn"]: r for r in recs2}
                score += sum(1 for k, (_, size) in enumerate(want2)
                             if sn2.get(base + k, {}).get("size") == size)
                score += 0.5 * bool(want2 and sn2.get(base, {}).get("size") == want2[0][1])
            if best is None or score > best or (score == best and base < best_base):
                best, best_base = score, base
    return best_base


def align_coll(records, want, base):
    """Join by sequence number: {k: record} for want[k] found at sn base + k."""
    if base is None:
        return {}
    by_sn = {r["sn"]: r for r in records}
    return {k: by_sn[base + k] for k, (_, size) in enumerate(want)
            if by_sn.get(base + k, {}).get("size") == size}


def align_p2p(records, want, _base=None):
    """Join in order at the offset maximising size matches."""
    best, best_off = -1, 0
    for off in range(0, max(1, len(records) - len(want) + 1)):
        m = sum(1 for k, (_, size) in enumerate(want)
                if off + k < len(records) and records[off + k]["size"] == size)
        if m > best:
            best, best_off = m, off
    return {k: records[best_off + k] for k, (_, size) in enumerate(want)
            if best_off + k < len(records) and records[best_off + k]["size"] == size}


def assign_comms(ops, recs, rank, min_size):
    """{group: comm id} for one rank: each group gets the communicator matching most of its
    expected records (sizes in order, per function)."""
    groups = sorted({op["group"] for op in ops})
    comms = [c for (r, c) in recs if r == rank]
    scored = []
    for g in groups:
        want = expected_streams(ops, g, min_size)
        for c in comms:
            got = recs[(rank, c)]
            score = sum(len(align_p2p(got.get(f, []), w)) if f in P2P else
                        len(align_coll(got.get(f, []), w, coll_base([(got.get(f, []), w)])))
                        for f, w in want.items())
            scored.append((score, g, c))
    assignment, used = {}, set()
    for score, g, c in sorted(scored, reverse=True):
        if g not in assignment and c not in used and score > 0:
            assignment[g] = c
            used.add(c)
    return assignment


def join(ops_by_rank, recs, min_size=8192, ref="cuda"):
    """Rows of (rank, group, op, func, size, warmup, cuda_ns (the reference), record or None)."""
    assign = {rank: assign_comms(d["ops"], recs, rank, min_size)
              for rank, d in ops_by_rank.items()}
    groups = sorted({op["group"] for d in ops_by_rank.values() for op in d["ops"]})
    rows = []
    for g in groups:
        wants = {rank: expected_streams(d["ops"], g, min_size) for rank, d in ops_by_rank.items()}
        funcs = sorted({f for w in wants.values() for f in w})
        for func in funcs:
            pairs = {rank: (recs.get((rank, assign[rank].get(g)), {}).get(func, []),
                            wants[rank].get(func, [])) for rank in ops_by_rank}
            base = None if func in P2P else coll_base(list(pairs.values()))
            for rank, (got, want) in sorted(pairs.items()):
                joined = (align_p2p if func in P2P else align_coll)(got, want, base)
                d = ops_by_rank[rank]
                for k, (i, size) in enumerate(want):
                    op = d["ops"][i]
                    rows.append({"rank": rank, "group": g, "op": op["op"], "func": func,
                                 "size": size, "warmup": op["warmup"],
                                 "cuda_ns": op.get(REF_FIELD[ref]),
                                 "world": d["world"], "rec": joined.get(k)})
    return rows


def pct(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, int(q * len(v)))] if v else float("nan")


def summarize(rows):
    """Per (op, func, size): coverage and accuracy figures."""
    table = defaultdict(lambda: {"issued": 0, "found": 0, "err": [], "busbw": [],
                                 "busbw_cuda": [], "sources": set()})
    for r in rows:
        t = table[(r["op"], r["func"], r["size"])]
        t["issued"] += 1
        if r["rec"] is None:
            continue
        t["found"] += 1
        t["sources"].add(r["rec"]["source"])
        if r["warmup"] or not r["cuda_ns"]:
            continue
        t["err"].append(abs(r["rec"]["ns"] - r["cuda_ns"]) / r["cuda_ns"])
        t["busbw"].append(r["rec"]["busbw"])
        n = r["world"]
        t["busbw_cuda"].append(bw_bytes(r["func"], r["size"], n) / r["cuda_ns"] *
                               busbw_factor(r["func"], n))
    out = []
    for (op, func, size), t in sorted(table.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])):
        out.append({"op": op, "func": func, "size": size, "issued": t["issued"],
                    "found": t["found"], "coverage": t["found"] / t["issued"],
                    "err_median": statistics.median(t["err"]) if t["err"] else None,
                    "err_p95": pct(t["err"], 0.95) if t["err"] else None,
                    "busbw_median": statistics.median(t["busbw"]) if t["busbw"] else None,
                    "busbw_cuda_median": statistics.median(t["busbw_cuda"]) if t["busbw_cuda"] else None,
                    "sources": sorted(t["sources"])})
    return out


def human(n):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div:
            return "%g %s" % (n / div, unit)
    return "%d B" % n


def targets(summary, judge_coverage=True):
    """The issue's targets: 100% coverage; median error <= 5% from 1 MiB, <= 2% from 64 MiB."""
    fails = []
    for s in summary:
        if judge_coverage and s["coverage"] < 1.0:
            fails.append("%s %s %s: coverage %.1f%%" % (s["op"], s["func"], human(s["size"]),
                                                        100 * s["coverage"]))
        lim = 0.02 if s["size"] >= 64 << 20 else 0.05 if s["size"] >= 1 << 20 else None
        if lim is not None and s["err_median"] is not None and s["err_median"] > lim:
            fails.append("%s %s %s: median error %.2f%% > %.0f%%" % (
                s["op"], s["func"], human(s["size"]), 100 * s["err_median"], 100 * lim))
    return fails


def markdown(summary):
    lines = ["| op | NCCL func | size | records / issued | median err | p95 err | "
             "busbw plugin (GB/s) | busbw CUDA events (GB/s) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    f = lambda v, s="%.2f%%", k=100: "-" if v is None else s % (v * k)
    for s in summary:
        lines.append("| %s | %s | %s | %d / %d | %s | %s | %s | %s |" % (
            s["op"], s["func"], human(s["size"]), s["found"], s["issued"],
            f(s["err_median"]), f(s["err_p95"]), f(s["busbw_median"], "%.1f", 1),
            f(s["busbw_cuda_median"], "%.1f", 1)))
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", required=True)
    ap.add_argument("--logs", required=True)
    ap.add_argument("--min-size", type=int, default=8192)
    ap.add_argument("--ref", choices=sorted(REF_FIELD), default="cuda",
                    help="reference time: events on the workload's stream (cuda), on NCCL's (nccl), "
                    "or the kernel's CUPTI duration (kernel)")
    ap.add_argument("--sampled", action="store_true",
                    help="sampled timing: coverage reported, not judged")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    ops = load_ops(a.ops)
    recs, bad = load_records(a.logs)
    rows = join(ops, recs, a.min_size, a.ref)
    if not any(r["cuda_ns"] for r in rows if not r["warmup"]):
        raise SystemExit("no %s in the ops files: run the workload with %s" % (
            REF_FIELD[a.ref], {"nccl": "TORCH_NCCL_ENABLE_TIMING=1", "kernel": "--cupti"}.get(a.ref, "")))
    summary = summarize(rows)
    print(markdown(summary))
    issued = sum(s["issued"] for s in summary)
    found = sum(s["found"] for s in summary)
    print("\ncoverage: %d / %d records (%.2f%%); unparsable log lines: %d" % (
        found, issued, 100.0 * found / max(1, issued), bad))
    fails = targets(summary, judge_coverage=not a.sampled)
    print("targets: " + ("all met" if not fails else "%d missed:\n  " % len(fails) +
                         "\n  ".join(fails)))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"summary": summary, "issued": issued, "found": found,
                       "unparsable": bad, "missed_targets": fails}, f, indent=1)
    return 0 if not fails else 1


if __name__ == "__main__":
    sys.exit(main())
