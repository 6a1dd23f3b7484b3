#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""inspector-report at the edges of its rules (tools/report/late.c, align.c, parse.c; docs/report.md),
where tools/dev/mutate.py's mutants survived the job-level tests:
  lateness.others-exec  2 ranks in one process, rank 1 late by 500 us on every AllReduce
                        (inspector-replay --synthetic --late-rank 1 --late-us 500): rank 1 is
                        the straggler, and the evidence beside it compares its kernel time with
                        the OTHER rank's: others_median_exec_us - median_exec_us is the 500 us
                        the other rank waited (the model's exec is the same for both otherwise)
  lateness.noise-floor  logs written here: 4 ranks on 4 hosts, 200 AllReduces whose ends
                        disagree by up to +-60 us (clocks no alignment can bring closer), rank 3
                        starting late by L. The threshold is the larger of --late-us (100 us)
                        and 3 x the alignment's residual p95 (which the report prints): L = 120
                        us is below it (no straggler, whatever the 100 us default says), L = 600
                        us above it (rank 3 named)
  lateness.ties         logs written here: 5 ranks on 5 hosts (one clock), 40 AllReduces that
                        end together; ranks 0-3 start at the same ns, rank 4 300 us later:
                        rank 4 is the one straggler, late by 300 us, its kernel 300 us shorter
                        than the others' (equal values at the middle of a median: the report
                        takes the middle of each op's starts by selection, not by a sort)
  lateness.others-median  logs written here: 4 ranks on 4 hosts (one clock), 32 AllReduces that
                        end together, each rank starting 0-40 us into the op (seeded, 200 ns
                        steps), rank 3 250 us later from op 16 on: every rank's late_ops,
                        median_late_us, mean_late_us, median_exec_us and others_median_exec_us
                        are those computed here from the rule (lateness: its start less the
                        median of the 3 others' starts; the others' kernel time: the median of
                        theirs), and rank 3, the one straggler, has its onset at the boundary
                        of the third of 4 windows (an op's time: the median of its 4 starts),
                        to the ns
  lateness.others-share-zero  logs written here: 8 ranks, rank 5 300 us late in all of 40
                        AllReduces: it alone named, late in all 40, and the other ranks' late
                        share beside it exactly 0 (none of them is late: not even counting it)
  lateness.third-named  logs written here: 2 ranks, rank 1 300 us late in every third of 30
                        AllReduces (10): named, from the start, late share 1/3, the other rank's
                        share 0, confidence medium (the 95% lower bound of 10 in 30, 0.19, is
                        below --late-share)
  align.overlapping     logs written here: 3 hosts whose clocks are off by +300, 0 and -200 us,
                        two communicators of 2 ranks that share only the middle host ({0, 1} and
                        {1, 2}): the offsets found are the planted ones up to one constant, the
                        residual p95 small. (Within 10 and 5 us: through such a chain each round
                        closes half of an offset's gap, and the rounds end at 10, so about 1/1000
                        of it is left, 0.25 us here; a wrong sign in the rounds leaves a third of
                        it, and a residual of ~80 us.)
  parse.peer-range      a P2P record whose peer is n_ranks (outside its communicator) is a
                        rejected line, named in the report's count; peer n_ranks - 1 is a record
  parse.job-id          logs written here (4 ranks, 40 AllReduces, rank 3 late), three times at
                        the same paths: without metadata.job_id, with "4242", with one that must
                        be escaped (quotes, a backslash, control characters, non-ASCII): every
                        output of the report (text, JSON, CSV, HTML, trace) the same, byte for
                        byte but the size of the files read, no line rejected
"""
import json
import math
import os
import random
import re
import statistics
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402


def report_json(a, path):
    exe = os.path.join(os.path.dirname(os.path.abspath(a.replay)), "inspector-report")
    p = subprocess.run([exe, "--json", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=300, universal_newlines=True)
    try:
        return json.loads(p.stdout), ""
    except ValueError:
        return None, "report rc %d: %s" % (p.returncode, (p.stdout + p.stderr)[-2000:])


def others_exec_case(a):
    name = "lateness.others-exec"
    with harness.Workdir(a.keep, "report-edges") as wd:
        os.makedirs(wd.dump)
        job = ["--ranks", "2", "--seed", "1", "--colls", "AllReduce", "--sizes", "1M:1M", "--iters", "20",
               "--late-rank", "1", "--late-us", "500"]
        cmd = harness.replay_cmd(a.replay, a.plugin, synthetic=["--quiet"] + job)
        r = harness.run(cmd, harness.make_env({}, dump_dir=wd.dump), wd.cwd, a.timeout)
        rep, err = report_json(a, wd.dump) if r.rc == 0 else (None, "replay rc %s" % r.rc)
        if rep is None:
            wd.failed = True
            return False, "FAIL %s: %s" % (name, err)
        st = rep["stragglers"]
        problems = []
        if [s["rank"] for s in st] != [1]:
            problems.append("stragglers %s, planted rank 1" % [s["rank"] for s in st])
        else:
            s = st[0]
            waited = s["others_median_exec_us"] - s["median_exec_us"]
            if abs(waited - 500) > 1:
                problems.append("others' median exec - its own %.3f us, 500 planted (median exec %.3f, "
                                "others' %.3f)" % (waited, s["median_exec_us"], s["others_median_exec_us"]))
            if abs(s["median_late_us"] - 500) > 1:
                problems.append("median lateness %.3f us, 500 planted" % s["median_late_us"])
        if problems:
            wd.failed = True
            return False, "FAIL %s: %s" % (name, "; ".join(problems))
        return True, "OK %s: rank 1 late 500 us; the other rank's kernel 500 us longer" % name


NRANKS, NOPS, NOISE_NS, EXEC_NS, BYTES = 4, 200, 60_000, 800_000, 1 << 20
T0 = 1_700_000_000_000_000_000


def record(comm, rank, nranks, host, pid, sn, start, ex, t_dump, p2p_peer=None, job_id=None):
    """One JSON line as the plugin writes it (docs/reference.md, the record format); job_id:
    metadata.job_id, None for none."""
    algbw = BYTES / ex
    kind, pfx = ("p2p_perf", "p2p_") if p2p_peer is not None else ("coll_perf", "coll_")
    perf = {pfx[:-1]: "Send" if p2p_peer is not None else "AllReduce", pfx + "sn": sn}
    if p2p_peer is not None:
        perf[pfx + "peer"] = p2p_peer
    perf.update({pfx + "msg_size_bytes": BYTES, pfx + "exec_time_us": ex // 1000,
                 pfx + "timing_source": "kernel_gpu", pfx + "algobw_gbs": round(algbw, 6),
                 pfx + "busbw_gbs": round(algbw if p2p_peer is not None else algbw * 2 * (nranks - 1) / nranks, 6),
                 pfx + "exec_time_ns": ex, pfx + "start_ts_ns": start, pfx + "datatype": "ncclFloat32",
                 pfx + "count": BYTES // 4, pfx + "nchannels": 1, pfx + "stale_channels": 0})
    if p2p_peer is None:
        perf.update({"coll_algo": "RING", "coll_proto": "SIMPLE"})
    rec = {"header": {"id": comm, "comm_name": "edge", "rank": rank, "n_ranks": nranks, "nnodes": nranks},
           "metadata": {"inspector_output_format_version": "v4.0", "git_rev": "test",
                        "rec_mechanism": "nccl_profiler_interface", "dump_timestamp_us": t_dump // 1000,
                        "hostname": host, "pid": pid},
           kind: perf}
    if job_id is not None:
        rec["metadata"]["job_id"] = job_id
    return json.dumps(rec, separators=(",", ":"), ensure_ascii=False) + "\n"


def write_logs(d, late_ns, seed):
    """One log per rank (its own host and process): AllReduce i starts at t0(i) (rank 3: +
    late_ns) and ends at t0(i) + 800 us + U[-60, 60] us, on every rank's clock alike."""
    rnd = random.Random(seed)
    files = [open(os.path.join(d, "node-%03d-pid%d.log" % (r, 1000 + r)), "w") for r in range(NRANKS)]
    for i in range(NOPS):
        t0 = T0 + i * 2_000_000
        for r in range(NRANKS):
            start = t0 + (late_ns if r == NRANKS - 1 else 0)
            end = t0 + EXEC_NS + rnd.randint(-NOISE_NS, NOISE_NS)
            files[r].write(record("0x5eed", r, NRANKS, "node-%03d" % r, 1000 + r, i, start, end - start,
                                  t0 + 5_000_000))
    for f in files:
        f.close()


def ties_case(a):
    name = "lateness.ties"
    n, late_ns = 5, 300_000
    with harness.Workdir(a.keep, "report-edges") as wd:
        os.makedirs(wd.dump)
        files = [open(os.path.join(wd.dump, "node-%03d-pid%d.log" % (r, 1000 + r)), "w") for r in range(n)]
        for i in range(40):
            t0 = T0 + i * 2_000_000
            for r in range(n):
                start = t0 + (late_ns if r == n - 1 else 0)
                files[r].write(record("0x71e5", r, n, "node-%03d" % r, 1000 + r, i, start, t0 + EXEC_NS - start,
                                      t0 + 5_000_000))
        for f in files:
            f.close()
        rep, err = report_json(a, wd.dump)
        if rep is None:
            wd.failed = True
            return False, "FAIL %s: %s" % (name, err)
        st = rep["stragglers"]
        problems = []
        if [s["rank"] for s in st] != [n - 1]:
            problems.append("stragglers %s, planted rank %d" % ([s["rank"] for s in st], n - 1))
        else:
            s = st[0]
            if abs(s["median_late_us"] - 300) > 0.5:
                problems.append("median lateness %.3f us, 300 planted" % s["median_late_us"])
            if abs(s["others_median_exec_us"] - s["median_exec_us"] - 300) > 0.5:
                problems.append("others' median exec - its own %.3f us, 300 planted"
                                % (s["others_median_exec_us"] - s["median_exec_us"]))
        if problems:
            wd.failed = True
            return False, "FAIL %s: %s" % (name, "; ".join(problems))
        return True, "OK %s: rank 4 late 300 us among 4 ranks that start together" % name


def write_job(d, comm, starts, ends):
    """One log per rank (its own host and process, one true clock): op i's record of rank r starts
    at starts[i][r] and ends at ends[i]."""
    n = len(starts[0])
    files = [open(os.path.join(d, "node-%03d-pid%d.log" % (r, 1000 + r)), "w") for r in range(n)]
    for i, (st, end) in enumerate(zip(starts, ends)):
        for r in range(n):
            files[r].write(record(comm, r, n, "node-%03d" % r, 1000 + r, i, st[r], end - st[r], end + 5_000_000))
    for f in files:
        f.close()


def llround(x):
    """C's llround: halves away from zero (Python's round() takes them to even)."""
    return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))


def same_printed(got, want):
    """The report prints its figures with 6 significant digits (%.6g)."""
    return got is not None and float("%.6g" % want) == got


def judge_job(a, name, comm, starts, ends, check):
    """The case named name over a hand-made job (write_job's starts and ends): the report's
    JSON held by check(rep) -> (problems, what it found)."""
    with harness.Workdir(a.keep, "report-edges") as wd:
        os.makedirs(wd.dump)
        write_job(wd.dump, comm, starts, ends)
        rep, err = report_json(a, wd.dump)
        if rep is None:
            wd.failed = True
            return False, "FAIL %s: %s" % (name, err)
        problems, found = check(rep)
        if problems:
            wd.failed = True
            return False, "FAIL %s: %s" % (name, "; ".join(problems))
        return True, "OK %s: %s" % (name, found)


def others_median_case(a):
    name = "lateness.others-median"
    n, nops, gap, dur, late_from, late_ns = 4, 32, 2_000_000, 800_000, 16, 250_000
    rnd = random.Random(14)
    starts = [[T0 + i * gap + 200 * rnd.randrange(200) + (late_ns if r == 3 and i >= late_from else 0)
               for r in range(n)] for i in range(nops)]
    ends = [T0 + i * gap + dur for i in range(nops)]
    # the rule, computed here: per op and rank, against the median of the other three
    want = {}
    for r in range(n):
        late = [st[r] - statistics.median(st[:r] + st[r + 1:]) for st in starts]
        ex = [end - st[r] for st, end in zip(starts, ends)]
        oex = [statistics.median([end - x for k, x in enumerate(st) if k != r]) for st, end in zip(starts, ends)]
        want[r] = {"late_ops": sum(x >= 100_000 for x in late), "median_late_us": statistics.median(late) / 1e3,
                   "mean_late_us": sum(late) / nops / 1e3, "median_exec_us": statistics.median(ex) / 1e3,
                   "others_median_exec_us": statistics.median(oex) / 1e3}
    # windows: an op's time is the median of its starts, from the first op's to the last's, cut
    # in nops / 8 windows; times relative to the earliest end (the alignment's reference)
    ref = min(ends)
    t = [statistics.median([x - ref for x in st]) for st in starts]
    nw = nops // 8
    width = (t[-1] - t[0]) / nw
    onset_window = late_from * nw // nops
    want_onset = ref + llround(t[0] + onset_window * width)
    def check(rep):
        problems = []
        if rep["alignment"]["late_threshold_us"] != 100:
            problems.append("lateness threshold %s us, not --late-us (ends agree exactly)"
                            % rep["alignment"]["late_threshold_us"])
        ranks = {x["rank"]: x for c in rep["communicators"] for x in c["ranks"]}
        if sorted(ranks) != list(range(n)):
            problems.append("ranks %s in the communicator's table" % sorted(ranks))
        for r in sorted(ranks):
            for k, v in sorted(want[r].items()):
                got = ranks[r].get(k)
                if not (got == v if k == "late_ops" else same_printed(got, v)):
                    problems.append("rank %d: %s %s, %s expected" % (r, k, got, "%.6g" % v))
        st = rep["stragglers"]
        if [x["rank"] for x in st] != [3]:
            problems.append("stragglers %s, rank 3 planted" % [x["rank"] for x in st])
        else:
            s = st[0]
            got = (s["onset_ns"], s["from_start"], s["windows"], s["onset_window"], s["window_ns"],
                   s["evidence"]["ops"], s["evidence"]["late_ops"], s["evidence"]["others_late_share"])
            exp = (want_onset, False, nw, onset_window, llround(width), nops - late_from, nops - late_from, 0)
            if got != exp:
                problems.append("rank 3's onset_ns, from_start, windows, onset_window, window_ns, ops, late "
                                "ops and others' late share since %s, expected %s" % (got, exp))
            for k in ("median_late_us", "mean_late_us", "others_median_exec_us"):
                if not same_printed(s.get(k), want[3][k]):
                    problems.append("straggler rank 3: %s %s, %.6g expected" % (k, s.get(k), want[3][k]))
        return problems, "4 ranks' figures as computed, rank 3 late since %d (window %d of %d)" % (
            want_onset, onset_window, nw)
    return judge_job(a, name, "0x4e4", starts, ends, check)


def late_share_case(name, n, late_rank, late_ops, nops):
    """Logs of n ranks (one clock, 40 us jitter, ends together), late_rank 300 us late in the
    ops late_ops; the report's JSON, or None and why."""
    rnd = random.Random(11 + n)
    starts = [[T0 + i * 2_000_000 + 100 * rnd.randrange(400) + (300_000 if r == late_rank and i in late_ops else 0)
               for r in range(n)] for i in range(nops)]
    ends = [T0 + i * 2_000_000 + EXEC_NS for i in range(nops)]
    return starts, ends


def wilson_lo(k, n, z=1.959964):
    """The 95% lower bound of k / n (Wilson score interval), docs/report.md "Evidence and confidence"."""
    p = k / n
    return max(0.0, (p + z * z / (2 * n) - z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))) / (1 + z * z / n))


def share_zero_case(a):
    name = "lateness.others-share-zero"
    n, nops = 8, 40
    starts, ends = late_share_case(name, n, 5, set(range(nops)), nops)
    def check(rep):
        st, problems = rep["stragglers"], []
        late = {x["rank"]: x["late_ops"] for c in rep["communicators"] for x in c["ranks"]}
        if late != {r: nops if r == 5 else 0 for r in range(n)}:
            problems.append("late ops per rank %s; rank 5 in all %d, the others in none" % (late, nops))
        if [x["rank"] for x in st] != [5]:
            problems.append("stragglers %s, rank 5 planted" % [x["rank"] for x in st])
        else:
            ev = st[0]["evidence"]
            got = (ev["ops"], ev["late_ops"], ev["late_share"], ev["others_late_share"])
            if got != (nops, nops, 1, 0):
                problems.append("evidence: ops, late ops, late share, others' late share %s; (%d, %d, 1, 0) "
                                "expected" % (got, nops, nops))
        return problems, "rank 5 late in %d of %d, the others' share 0" % (nops, nops)
    return judge_job(a, name, "0x5a0", starts, ends, check)


def third_named_case(a):
    name = "lateness.third-named"
    nops = 30
    late_ops = set(range(0, nops, 3))
    starts, ends = late_share_case(name, 2, 1, late_ops, nops)
    def check(rep):
        st, problems = rep["stragglers"], []
        k = len(late_ops)
        lo = wilson_lo(k, nops)
        conf = "high" if lo >= rep["options"]["late_share"] else "medium"
        if [x["rank"] for x in st] != [1]:
            problems.append("stragglers %s (not enough data: %s); rank 1 planted, late in %d of %d" % (
                [x["rank"] for x in st], [x["rank"] for x in rep["not_enough_data"]["stragglers"]], k, nops))
        else:
            s, ev = st[0], st[0]["evidence"]
            got = (s["late_ops"], s["ops"], s["from_start"], ev["ops"], ev["late_ops"], ev["others_late_share"],
                   s["confidence"])
            if got != (k, nops, True, nops, k, 0, conf) or not same_printed(ev["late_share_low"], lo):
                problems.append("late ops, ops, from_start, since: ops, late ops, others' share, confidence %s, "
                                "lower bound %s; %s and %.6g expected" % (got, ev["late_share_low"],
                                                                          (k, nops, True, nops, k, 0, conf), lo))
        return problems, "rank 1 late in %d of %d, named (lower bound %.3f: %s)" % (k, nops, lo, conf)
    return judge_job(a, name, "0x3d0", starts, ends, check)


def noise_floor_case(a):
    name = "lateness.noise-floor"
    out, problems = [], []
    for late_us, named in ((120, False), (600, True)):
        with harness.Workdir(a.keep, "report-edges") as wd:
            os.makedirs(wd.dump)
            write_logs(wd.dump, late_us * 1000, seed=late_us)
            rep, err = report_json(a, wd.dump)
            if rep is None:
                wd.failed = True
                return False, "FAIL %s: late %d us: %s" % (name, late_us, err)
            resid = rep["alignment"]["residual_p95_us"]
            thr = max(100.0, 3 * resid)
            got = [s["rank"] for s in rep["stragglers"]]
            # the planted noise must be what sets the threshold here, for the case to test it
            noise_decides = late_us < 3 * resid if not named else late_us > 3 * resid
            if not noise_decides:
                problems.append("late %d us: residual p95 %.1f us does not put the threshold (%.1f us) "
                                "where this case needs it" % (late_us, resid, thr))
            if got != ([NRANKS - 1] if named else []):
                problems.append("late %d us, threshold max(100, 3 x %.1f) = %.1f us: stragglers %s, "
                                "expected %s" % (late_us, resid, thr, got, [NRANKS - 1] if named else []))
                wd.failed = True
            out.append("late %d us: residual p95 %.1f us, threshold %.1f us, stragglers %s" % (
                late_us, resid, thr, got))
    if problems:
        return False, "FAIL %s: %s" % (name, "; ".join(problems))
    return True, "OK %s: %s" % (name, "; ".join(out))


OFFSETS_NS = [300_000, 0, -200_000]  # each host's clock: true time + this


def overlapping_case(a):
    """Two communicators, {host 0, host 1} and {host 1, host 2}, alternating: each op ends at
    the same true time on its two ranks; every timestamp is read on its host's clock."""
    name = "align.overlapping"
    with harness.Workdir(a.keep, "report-edges") as wd:
        os.makedirs(wd.dump)
        files = [open(os.path.join(wd.dump, "host-%d-pid%d.log" % (h, 2000 + h)), "w") for h in range(3)]
        for i in range(NOPS):
            t = T0 + i * 2_000_000
            comm, hosts = ("0xa01", (0, 1)) if i % 2 == 0 else ("0xb12", (1, 2))
            for rank, h in enumerate(hosts):
                start = t + rank * 50_000 + OFFSETS_NS[h]  # rank 1 arrives 50 us later
                ex = EXEC_NS - rank * 50_000               # both end at t + 800 us
                files[h].write(record(comm, rank, 2, "host-%d" % h, 2000 + h, i // 2, start, ex, t + 5_000_000))
        for f in files:
            f.close()
        rep, err = report_json(a, wd.dump)
        if rep is None:
            wd.failed = True
            return False, "FAIL %s: %s" % (name, err)
        al = rep["alignment"]
        found = {c["hostname"]: c["offset_ns"] for c in al["clocks"]}
        problems = []
        if sorted(found) != ["host-0", "host-1", "host-2"]:
            problems.append("clocks %s" % sorted(found))
        else:
            diff = [found["host-%d" % h] - OFFSETS_NS[h] for h in range(3)]
            if max(diff) - min(diff) > 10_000:
                problems.append("offsets found %s, planted %s: found - planted spreads %.1f us" % (
                    [found["host-%d" % h] for h in range(3)], OFFSETS_NS, (max(diff) - min(diff)) / 1e3))
        if al["residual_p95_us"] > 5:
            problems.append("residual p95 %.3f us" % al["residual_p95_us"])
        if problems:
            wd.failed = True
            return False, "FAIL %s: %s" % (name, "; ".join(problems))
        return True, "OK %s: offsets %s (planted %s), residual p95 %.3f us" % (
            name, [found["host-%d" % h] for h in range(3)], OFFSETS_NS, al["residual_p95_us"])


def peer_range_case(a):
    name = "parse.peer-range"
    with harness.Workdir(a.keep, "report-edges") as wd:
        os.makedirs(wd.dump)
        with open(os.path.join(wd.dump, "node-000-pid3000.log"), "w") as f:
            for sn, peer in enumerate((1, 3, 4)):  # a communicator of 4 ranks: 4 is none of them
                f.write(record("0xc4", 0, 4, "node-000", 3000, sn, T0 + sn * 2_000_000, EXEC_NS,
                               T0 + 9_000_000, p2p_peer=peer))
        rep, err = report_json(a, wd.dump)
        if rep is None:
            wd.failed = True
            return False, "FAIL %s: %s" % (name, err)
        got = (rep["inputs"]["records"], rep["inputs"]["p2p"], rep["inputs"]["lines_rejected"])
        if got != (2, 2, 1):
            wd.failed = True
            return False, "FAIL %s: records, P2P records, rejected lines %s; (2, 2, 1) expected" % (name, got)
        return True, "OK %s: peer 4 of 4 ranks rejected, peers 1 and 3 kept" % name


def _sizes_read_out(name, data):
    """A report output without the size of the files it read (the one figure a key it ignores
    changes): inputs.bytes in --json, "N read (SIZE)" in the HTML page."""
    if name == "json":
        rep = json.loads(data)
        rep["inputs"].pop("bytes", None)
        return json.dumps(rep, sort_keys=True).encode()
    if name.endswith(".html"):
        return re.sub(rb" read \([^)]*\)", b" read (SIZE)", data)
    return data


def job_id_case(a):
    name = "parse.job-id"
    exe = os.path.join(os.path.dirname(os.path.abspath(a.replay)), "inspector-report")
    n, late_ns = 4, 300_000
    got = {}
    with harness.Workdir(a.keep, "report-edges") as wd:
        os.makedirs(wd.dump)
        paths = [os.path.join(wd.dump, "node-%03d-pid%d.log" % (r, 1000 + r)) for r in range(n)]
        for job in (None, "4242", 'a"b\\c\x01\n\u00e9\u20ac'):
            for r, path in enumerate(paths):
                with open(path, "w", encoding="utf-8") as f:
                    for i in range(40):
                        t0 = T0 + i * 2_000_000
                        start = t0 + (late_ns if r == n - 1 else 0)
                        f.write(record("0x10b", r, n, "node-%03d" % r, 1000 + r, i, start, t0 + EXEC_NS - start,
                                       t0 + 5_000_000, job_id=job))
            if job and job != "4242":
                with open(paths[0], encoding="utf-8") as f:
                    line = f.readline()
                if '\\"b\\\\c\\u0001\\n' not in line:  # the escapes the case is about
                    wd.failed = True
                    return False, "FAIL %s: the escaped job id is not escaped in %s" % (name, line[:400])
            out, err = harness.report_outputs(exe, os.path.join(wd.path, "out"), paths)
            if out is None:
                wd.failed = True
                return False, "FAIL %s: job id %r: %s" % (name, job, err)
            got[job] = {k: _sizes_read_out(k, v) for k, v in out.items()}
        base = got.pop(None)
        rep = json.loads(base["json"])
        problems = []
        if (rep["inputs"]["records"], rep["inputs"]["lines_rejected"]) != (n * 40, 0):
            problems.append("records, rejected lines %s; (%d, 0) expected" % (
                (rep["inputs"]["records"], rep["inputs"]["lines_rejected"]), n * 40))
        if [s["rank"] for s in rep["stragglers"]] != [n - 1]:
            problems.append("stragglers %s, rank %d planted" % ([s["rank"] for s in rep["stragglers"]], n - 1))
        for job, out in got.items():
            diff = sorted(k for k in set(out) | set(base) if out.get(k) != base.get(k))
            if diff:
                problems.append("job id %r: outputs %s differ from those without one" % (job, diff))
        if problems:
            wd.failed = True
            return False, "FAIL %s: %s" % (name, "; ".join(problems))
        return True, "OK %s: %d outputs the same with no job id, a plain one and an escaped one" % (name, len(base))


def cases():
    return [harness.Case("lateness.others-exec", others_exec_case, labels=["report"], timeout=120),
            harness.Case("lateness.noise-floor", noise_floor_case, labels=["report"], timeout=120),
            harness.Case("lateness.ties", ties_case, labels=["report"], timeout=120),
            harness.Case("lateness.others-median", others_median_case, labels=["report"], timeout=120),
            harness.Case("lateness.others-share-zero", share_zero_case, labels=["report"], timeout=120),
            harness.Case("lateness.third-named", third_named_case, labels=["report"], timeout=120),
            harness.Case("align.overlapping", overlapping_case, labels=["report"], timeout=120),
            harness.Case("parse.peer-range", peer_range_case, labels=["report"], timeout=120),
            harness.Case("parse.job-id", job_id_case, labels=["report"], timeout=120)]


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))
