#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Judge a profiler plugin's records against CUPTI's kernel times (the GPU truth harness,
tools/validate/truth/run.sh), and print one table.

    compare.py [--json OUT] [--detail] RUN_DIR...

A run directory holds what truth_driver.cu wrote (kernels.csv, ops.csv, clock.csv), the
plugin's logs (logs/*.log, plain or gzip) and, for a traced run, trace/*.trace.jsonl[.gz]
(run.json says which plugin and settings). The directories of tests/data/gpu-truth are read
too: their clock offset is in meta.json, their ops in events.csv, their trace in
trace.jsonl.gz, their rank markers named marker_r<R>.

Matching: the k-th kernel on a rank's stream is that rank's k-th op (ops.csv); a collective
record is the k-th op of its function on its rank (coll_sn), a P2P record the
(p2p_sn // 2)-th Send/Recv group (each group has one Send and one Recv per rank). GPU
timer = CUPTI clock + the offset the clock markers measured (per rank).

Verdicts, for a collective record with true kernel time T:
  off   its duration is off by more than max(10% of T, 5 us), or (plugins that give one)
        its start by more than that
  wild  off, and its duration is more than 1.5 T or less than 0.5 T, or its start is off by
        more than max(T, the tolerance)
A P2P record is off when its interval is not inside its group's kernel (+- 5 us).
With a trace, the ops NCCL gave right are known: every kernel-channel interval it handed the
op lies inside the op's own kernel (+- 3 us). "Recall" is the share of those collectives
that have a record that is not off. The JSON also has, per run, `shortfall_ns`: the kernel's
time less the record's, over the records not off (10th percentile, median, 90th): the part of
the kernel NCCL's channel timers do not see.

Bounds (NCCL_INSPECTOR_BOUNDS: coll_bound / p2p_bound lines, the ops left out bracketed by
their right neighbours on the stream): each must hold its op's kernel, [start, end] within
+- 3 us (CH_TOL_NS, the clock mapping's error); `bounds` in the JSON counts them, those that
do not ("outside"), and for the brackets of one op the ratio of the bracket to the kernel
time (median, 90th percentile, most). Standard library only.
"""
import argparse
import bisect
import collections
import csv
import glob
import gzip
import json
import os
import re
import statistics
import sys

TOL_NS = 5000        # the absolute part of "off"
CH_TOL_NS = 3000     # a channel interval "inside" its kernel


def opener(path):
    return gzip.open(path, "rt") if path.endswith(".gz") else open(path)


def first(d, *names):
    for n in names:
        for p in (os.path.join(d, n), os.path.join(d, n + ".gz")):
            if os.path.exists(p):
                return p
    return None


class Run:
    """One run: its truth (kernels per rank, matched to ops) and what the plugin wrote."""

    def __init__(self, d):
        self.dir = d
        self.name = os.path.basename(os.path.normpath(d))
        self.info = {}
        if os.path.exists(os.path.join(d, "run.json")):
            self.info = json.load(open(os.path.join(d, "run.json")))
        meta = os.path.join(d, "meta.json")
        self.meta = json.load(open(meta)) if os.path.exists(meta) else {}
        self._kernels()
        self._ops()
        self.records, self.stats = self._logs()
        self.trace = first(d, "trace.jsonl") or (sorted(glob.glob(os.path.join(d, "trace", "*.trace.jsonl*"))) or [None])[0]

    # -- truth --------------------------------------------------------------------------
    def _kernels(self):
        streams = collections.defaultdict(list)
        rank_stream, clock = {}, collections.defaultdict(list)
        for row in csv.reader(opener(first(self.dir, "kernels.csv"))):
            if len(row) < 4:
                continue
            st, s, e, name = int(row[0]), int(row[1]), int(row[2]), row[3]
            m = re.search(r"truth_rankILi(\d+)E|marker_r(\d+)", name)
            if m:
                rank_stream[int(m.group(1) or m.group(2))] = st
                continue
            if "truth_compute" in name:  # the ddp workload's training step
                continue
            if "truth_clock" in name:
                clock[st].append(s)
                continue
            streams[st].append((s, e, name))
        self.rank_stream = rank_stream
        self.kernels = {r: sorted(streams[st]) for r, st in rank_stream.items()}
        # globaltimer - CUPTI, per rank, as (CUPTI time, offset) samples: CUPTI's clock
        # drifts from the GPU's (by 8 us over a one-second run with a busy CPU), so each
        # kernel gets the offset interpolated between the clock marks around it
        self.clock = {}
        if "offset_ns" in self.meta:
            self.clock = {r: [(0, self.meta["offset_ns"])] for r in rank_stream}
        else:
            gpu = collections.defaultdict(list)
            for row in csv.reader(open(os.path.join(self.dir, "clock.csv"))):
                gpu[int(row[0])].append(int(row[1]))
            for r, st in rank_stream.items():
                cs = sorted(clock[st])
                self.clock[r] = [(c, g - c) for g, c in zip(gpu[r], cs)]
        self.offset = {r: statistics.median(o for _, o in v) if v else 0 for r, v in self.clock.items()}

    def gpu_time(self, r, t):
        """CUPTI time t on rank r's GPU, in its globaltimer."""
        v = self.clock.get(r) or [(0, 0)]
        i = bisect.bisect_right(v, (t, float("inf")))
        if i == 0:
            return t + v[0][1]
        if i == len(v):
            return t + v[-1][1]
        (t0, o0), (t1, o1) = v[i - 1], v[i]
        return t + o0 + (o1 - o0) * (t - t0) / (t1 - t0) if t1 > t0 else t + o0

    def _ops(self):
        names = collections.defaultdict(list)
        path = first(self.dir, "ops.csv", "events.csv")
        for row in csv.reader(opener(path)):
            names[int(row[0])].append(row[2])
        self.truth = {}        # (rank, func, k) -> (start, end) in GPU time
        self.issued = collections.Counter()
        for r, ks in self.kernels.items():
            if len(ks) != len(names[r]):
                raise SystemExit("%s: rank %d has %d kernels for %d ops" % (self.dir, r, len(ks), len(names[r])))
            cnt = collections.Counter()
            for n, (s, e, _) in zip(names[r], ks):
                iv = (self.gpu_time(r, s), self.gpu_time(r, e))
                if n == "SendRecv":
                    for f in ("Send", "Recv"):
                        self.truth[(r, f, cnt[f])] = iv
                        cnt[f] += 1
                    cnt["group"] += 1
                else:
                    self.truth[(r, n, cnt[n])] = iv
                    cnt[n] += 1
                    self.issued[n] += 1

    # -- what the plugin wrote -----------------------------------------------------------
    def _logs(self):
        recs, stats = [], []
        self.unverified = []  # with NCCL_INSPECTOR_DUMP_UNVERIFIED=1: ops the plugin left out
        self.bounds = []      # coll_bound / p2p_bound lines (NCCL_INSPECTOR_BOUNDS)
        for p in sorted(glob.glob(os.path.join(self.dir, "logs", "*.log*")) +
                        glob.glob(os.path.join(self.dir, "live.log*"))):
            for line in opener(p):
                line = line.strip()
                if not line:
                    continue
                try:
                    j = json.loads(line)
                except ValueError:
                    continue
                if "dump_stats" in j:
                    stats.append(j)
                elif "coll_perf" in j or "p2p_perf" in j:
                    recs.append(j)
                elif "coll_unverified" in j:
                    self.unverified.append(j)
                elif "coll_bound" in j or "p2p_bound" in j:
                    self.bounds.append(j)
        return recs, stats

    def nccl_right(self):
        """{(rank, func, k): all of NCCL's intervals inside the op's kernel}: from the trace,
        or else from the plugin's own lines when it wrote the unverified ops too (a record or
        unverified line with no channel left out, its span inside the kernel); None when
        neither tells."""
        if not self.trace:
            return self._right_from_lines()
        ctx_rank, byid, chans, out = {}, {}, {}, {}
        count = collections.defaultdict(collections.Counter)
        for line in opener(self.trace):
            j = json.loads(line)
            cb = j.get("cb")
            if cb == "init":
                ctx_rank[j["ctx"]] = j["rank"]
            elif cb == "start" and j.get("type") == 2:
                r = ctx_rank[j["ctx"]]
                k = count[r][j["func"]]
                count[r][j["func"]] += 1
                byid[j["id"]] = (r, j["func"], k)
                out[(r, j["func"], k)] = []
            elif cb == "start" and j.get("type") == 64 and j.get("parent") in byid:
                iv = [j.get("ptimer", 0), 0]
                chans[j["id"]] = iv
                out[byid[j["parent"]]].append(iv)
            elif cb == "record" and j.get("state") == 22 and j.get("id") in chans:
                chans[j["id"]][1] = j.get("ptimer", 0)
        right = {}
        for key, ivs in out.items():
            t = self.truth.get(key)
            right[key] = bool(ivs) and t is not None and all(
                t[0] - CH_TOL_NS <= s and e <= t[1] + CH_TOL_NS and s <= e for s, e in ivs)
        return right


    def _right_from_lines(self):
        if not self.unverified and not any(
                k.endswith("unverified") and v for s in self.stats
                for k, v in s["dump_stats"].get("coll_untimed", {}).items()):
            if not self.info.get("dump_unverified"):
                return None
        right = {k: False for k in self.truth if k[1] not in ("Send", "Recv", "Broadcast")}
        for j in self.records + self.unverified:
            c = j.get("coll_perf") or j.get("coll_unverified")
            if not c:
                continue
            key = (j["header"]["rank"], c["coll"], c["coll_sn"])
            t = self.truth.get(key)
            if t is None:
                continue
            s, e = c["coll_start_ts_ns"], c["coll_start_ts_ns"] + c["coll_exec_time_ns"]
            right[key] = c.get("coll_stale_channels", 0) == 0 and \
                t[0] - CH_TOL_NS <= s and e <= t[1] + CH_TOL_NS
        return right


def judge(run):
    st = collections.Counter()
    ratios = []
    short = []  # kernel time - record's time, records not off: what NCCL's channel timers miss
    good = set()
    for j in run.records:
        r = j["header"]["rank"]
        if "coll_perf" in j:
            c = j["coll_perf"]
            key = (r, c["coll"], c["coll_sn"])
            t = run.truth.get(key)
            if t is None:
                st["unmatched"] += 1
                continue
            true = t[1] - t[0]
            dur = c.get("coll_exec_time_ns", c.get("coll_exec_time_us", 0) * 1000)
            tol = max(0.1 * true, TOL_NS + (1000 if "coll_exec_time_ns" not in c else 0))
            start = c.get("coll_start_ts_ns")
            off = abs(dur - true) > tol or (start is not None and abs(start - t[0]) > tol)
            # wild is a kind of off: a 6 us kernel whose channels ran for 3 us of it is
            # neither (NCCL's launch and teardown inside the kernel)
            wild = off and (dur > 1.5 * true or dur < 0.5 * true or
                            (start is not None and abs(start - t[0]) > max(true, tol)))
            st["colls"] += 1
            st["off"] += off
            st["wild"] += wild
            if true:
                ratios.append(dur / true)
            if not off:
                good.add(key)
                short.append(true - dur)
        else:
            c = j["p2p_perf"]
            g = c["p2p_sn"] // 2
            t = run.truth.get((r, c["p2p"], g))
            st["p2p"] += 1
            if t is None:
                st["p2p_unmatched"] += 1
                continue
            s = c.get("p2p_start_ts_ns")
            e = s + c.get("p2p_exec_time_ns", 0) if s is not None else None
            if s is not None and not (t[0] - TOL_NS <= s and e <= t[1] + TOL_NS):
                st["p2p_off"] += 1
    right = run.nccl_right()
    res = {"run": run.name, "plugin": run.info.get("plugin", "ours"), "cpu": run.info.get("cpu", "?"),
           "trace": bool(run.info.get("trace", run.trace is not None)),
           "issued": sum(run.issued[f] for f in run.issued if f not in ("Broadcast",)),
           "broadcasts": run.issued["Broadcast"], "records": st["colls"], "off": st["off"],
           "wild": st["wild"], "max_ratio": max(ratios) if ratios else 0,
           "p2p": st["p2p"], "p2p_off": st["p2p_off"], "unmatched": st["unmatched"]}
    if short:
        short.sort()
        q = lambda f: short[min(len(short) - 1, int(f * len(short)))]
        res["shortfall_ns"] = {"p10": q(0.1), "median": q(0.5), "p90": q(0.9)}
    bc = sum(1 for k in run.truth if k[1] == "Broadcast")
    res["broadcast_records"] = sum(1 for j in run.records if j.get("coll_perf", {}).get("coll") == "Broadcast")
    res["issued"] += res["broadcast_records"] and run.issued["Broadcast"]  # reported: judged too
    if right is not None:
        ok = [k for k, v in right.items() if v]
        res["nccl_right"] = len(ok)
        res["nccl_reported"] = len(right)
        res["right_published"] = sum(1 for k in ok if k in good)
    if run.bounds:
        res["bounds"] = judge_bounds(run)
    if run.stats:
        last = {}
        for s in run.stats:  # the latest per context
            last[(s["header"]["id"], s["header"]["rank"])] = s["dump_stats"]
        agg = collections.Counter()
        for d in last.values():
            for k, v in d.items():
                if isinstance(v, (int, float)) and k.endswith("_total"):
                    agg[k] += v
                elif isinstance(v, dict) and k.endswith(("_untimed", "_unreported")):
                    for kk, vv in v.items():
                        agg["%s.%s" % (k, kk)] += vv
        res["dump_stats"] = dict(agg)
    return res


def judge_bounds(run):
    """The bound lines against the kernels: {n, one_op, outside, unmatched, ratio_one_op}."""
    st = collections.Counter()
    ratios = []
    for j in run.bounds:
        r = j["header"]["rank"]
        if "coll_bound" in j:
            c, key = j["coll_bound"], None
            key = (r, c["coll"], c["coll_sn"])
            pfx = "coll_"
        else:
            c = j["p2p_bound"]
            key = (r, c["p2p"], c["p2p_sn"] // 2)
            pfx = "p2p_"
        st["n"] += 1
        t = run.truth.get(key)
        if t is None:
            st["unmatched"] += 1
            continue
        s, e = c[pfx + "start_ts_ns"], c[pfx + "end_ts_ns"]
        if not (s - CH_TOL_NS <= t[0] and t[1] <= e + CH_TOL_NS):
            st["outside"] += 1
        if c[pfx + "bound_ops"] == 1:
            st["one_op"] += 1
            if t[1] > t[0]:
                ratios.append((e - s) / (t[1] - t[0]))
    res = {"n": st["n"], "one_op": st["one_op"], "outside": st["outside"], "unmatched": st["unmatched"]}
    if ratios:
        ratios.sort()
        q = lambda f: round(ratios[min(len(ratios) - 1, int(f * len(ratios)))], 4)
        res["ratio_one_op"] = {"median": q(0.5), "p90": q(0.9), "max": round(ratios[-1], 4)}
    return res


def pct(a, b):
    return "-" if not b else "%.1f%%" % (100.0 * a / b)


def left_out(r):
    d = r.get("dump_stats", {})
    if "coll_untimed_total" not in d:
        return "-"
    other = d["coll_untimed_total"] - d.get("coll_untimed.unverified", 0) - d.get("coll_untimed.handed_over", 0)
    s = "%d / %d / %d" % (d.get("coll_untimed.unverified", 0), d.get("coll_untimed.handed_over", 0), other)
    if d.get("coll_unreported.Broadcast"):
        s += "; %d Broadcast unreported" % d["coll_unreported.Broadcast"]
    return s


def table(results):
    rows = ["| run | plugin | CPU | traced | collectives issued | records | off | wild (max x) | "
            "NCCL gave right | of those, published right | left out: unverified / handed over / other |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in results:
        rows.append("| %s | %s | %s | %s | %d | %d | %s | %s (%.1fx) | %s | %s | %s |" % (
            r["run"], r["plugin"], r["cpu"], "yes" if r["trace"] else "no", r["issued"], r["records"],
            pct(r["off"], r["records"]), pct(r["wild"], r["records"]), r["max_ratio"],
            "%d / %d" % (r["nccl_right"], r["nccl_reported"]) if "nccl_right" in r else "-",
            pct(r["right_published"], r["nccl_right"]) if "nccl_right" in r else
            "(%s of all)" % pct(r["records"] - r["off"], r["issued"]), left_out(r)))
    if any("bounds" in r for r in results):  # a second table: the bounds of the ops left out
        rows += ["", "| run | left out unverified | bounded | outside their kernel | brackets of one op | "
                 "bracket / kernel, one op: median / p90 / max |", "| --- | --- | --- | --- | --- | --- |"]
        for r in results:
            b, d = r.get("bounds", {}), r.get("dump_stats", {})
            q = b.get("ratio_one_op")
            rows.append("| %s | %d | %d | %d | %d | %s |" % (
                r["run"], d.get("coll_untimed.unverified", 0) + d.get("p2p_untimed.unverified", 0),
                b.get("n", 0), b.get("outside", 0), b.get("one_op", 0),
                "%.3f / %.3f / %.3f" % (q["median"], q["p90"], q["max"]) if q else "-"))
    return "\n".join(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--json")
    a = ap.parse_args()
    results = []
    for d in a.runs:
        try:
            results.append(judge(Run(d)))
        except (OSError, SystemExit, ValueError, KeyError) as e:
            print("compare: %s: %s" % (d, e), file=sys.stderr)
    print(table(results))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
