#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Recordings of real NCCL traffic on an H200 with CUPTI's kernel times beside them
(tests/data/gpu-truth), replayed through the plugin; every record is judged against CUPTI,
never against the plugin's own rules (tools/validate/truth/compare.py does the judging):

  no record is wild (a time more than 1.5x or less than 0.5x its kernel's, or a start off by
  more than the kernel's length), at most 1% are off (by more than 10% or 5 us), and of the
  collectives whose kernel-channel timestamps NCCL gave right (all inside the op's own
  kernel), at least RECALL are written right. Each case says what it holds:

  gt.<name>      the five shared recordings (NCCL 2.30.7 built from source, two ranks on one
                 GPU, the old trace mode slowing NCCL's proxy thread: most ops were handed
                 another op's timestamps) and six of the harness's own, recorded in trace mode
                 (live-*: busy and quiet CPU, back to back, sync every 20, mixed with
                 Send/Recv, Broadcast and AllGather, and data-parallel training steps; the
                 busy ones with NCCL's proxy thread hundreds of works behind the GPU, where
                 the right ops are known only when later ops vouch for them, core/judge.c),
                 and live-fsdp2-quiet: a PyTorch FSDP2 job (200 steps, AllGather and
                 ReduceScatter, 4 channels) whose host never waits for the GPU, so that each
                 op is proven only by the next, back from the end of the job, 6,600 ops later.
  gt.<name>.threads  the same on the recorded threads, concurrently (label threads)
  gt.unverified  NCCL_INSPECTOR_DUMP_UNVERIFIED=1: the ops left out are written, marked, and
                 are exactly those dump_stats counts as unverified; every record is unchanged
  gt.counts      dump_stats: records + ops left out by reason = the collectives NCCL
                 reported, and the Broadcasts it never reported (AllGatherV path) counted
  gt.bounds      the ops left out, bounded (NCCL_INSPECTOR_BOUNDS, core/judge.h): each bound
                 is what the recording's own order and the written records make it (the end
                 of the last right op of an earlier NCCL group, the start of the first of a
                 later one, the ops and unreported calls between), every unverified op with
                 such neighbours has one, CUPTI's kernel lies inside each, and the records
                 are those written without bounds
"""
import collections
import gzip
import json
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "lib"))  # harness, oracles, receivers
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tools", "validate", "truth"))
import compare  # noqa: E402
import harness  # noqa: E402

DIR = os.path.join(harness.DATA, "gpu-truth")
RECALL = 0.90
MAX_OFF = 0.01


def replay_dir(a, name, wd, env_extra=None, threads=False):
    """A run directory for compare.py: the recording's truth, and the replay's logs."""
    src = os.path.join(DIR, name)
    run = os.path.join(wd.path, name)
    os.makedirs(os.path.join(run, "logs"))
    for f in os.listdir(src):
        os.symlink(os.path.join(src, f), os.path.join(run, f))
    env = harness.make_env(env_extra, dump_dir=os.path.join(run, "logs"))
    cmd = harness.replay_cmd(a.replay, a.plugin, [os.path.join(src, "trace.jsonl.gz")],
                             threads=threads) + ["--recorded-clock"]
    r = harness.run(cmd, env, wd.cwd, a.timeout)
    problems = []
    if r.timed_out or r.rc != 0:
        problems.append("replay failed: rc %s%s" % (r.rc, " (timed out)" if r.timed_out else ""))
    problems += harness.sanitizer_reports(r.stderr)
    return run, problems


def judge(name, run):
    res = compare.judge(compare.Run(run))
    problems = []
    n = res["records"]
    if res["wild"]:
        problems.append("%d of %d records wild (max %.1fx its kernel)" % (res["wild"], n,
                                                                        res["max_ratio"]))
    if n and res["off"] > MAX_OFF * n:
        problems.append("%d of %d records off (more than %.0f%%)" % (res["off"], n, 100 * MAX_OFF))
    if res["p2p_off"]:
        problems.append("%d P2P records outside their kernel" % res["p2p_off"])
    want = RECALL
    right, pub = res.get("nccl_right", 0), res.get("right_published", 0)
    if not right or pub < want * right:
        problems.append("of %d collectives NCCL gave right, %d written right (%.1f%%, at least "
                        "%.0f%% wanted)" % (right, pub, 100.0 * pub / max(1, right), 100 * want))
    return res, problems


# A replay runs far faster than the job did: a recording with more ops a communicator than
# the ring holds (4096) gets a ring that holds them all, so that a dump thread slowed by a
# busy machine cannot let it fill (records dropped, the ops around them unverified).
RING_FOR_ALL = {"live-fsdp2-quiet": {"NCCL_INSPECTOR_DUMP_COLL_RING_SIZE": "8192"}}


def truth_case(name, threads=False):
    case = "gt.%s%s" % (name, ".threads" if threads else "")

    def fn(a):
        with harness.Workdir(a.keep, "gpu-truth") as wd:
            run, problems = replay_dir(a, name, wd, RING_FOR_ALL.get(name), threads=threads)
            res, probs = judge(name, run)
            problems += probs
            if problems:
                wd.failed = True
                return False, "FAIL %s: %s\n  %s" % (case, "\n  ".join(problems), json.dumps(res))
            return True, "OK %s: %d records, %d off, %d of %d right ones written" % (
                case, res["records"], res["off"], res["right_published"], res["nccl_right"])
    return harness.Case(case, fn, labels=["gpu-truth"] + (["threads"] if threads else []),
                        timeout=120)


def lines(run):
    out = []
    for f in sorted(os.listdir(os.path.join(run, "logs"))):
        with open(os.path.join(run, "logs", f)) as fh:
            out += [json.loads(l) for l in fh if l.strip()]
    return out


def last_stats(ls):
    last = {}
    for j in ls:
        if "dump_stats" in j:
            last[(j["header"]["id"], j["header"]["rank"])] = j["dump_stats"]
    return last


def unverified_case():
    """The ops the plugin leaves out, written on request: marked, not records, and exactly
    those counted as unverified; the records themselves do not change."""
    name = "ar4m-b2b"

    def fn(a):
        with harness.Workdir(a.keep, "gpu-truth") as wd:
            plain, problems = replay_dir(a, name, wd)
            os.rename(plain, plain + ".plain")
            marked, probs = replay_dir(a, name, wd, {"NCCL_INSPECTOR_DUMP_UNVERIFIED": "1"})
            problems += probs
            p, m = lines(plain + ".plain"), lines(marked)
            recs = lambda ls: sorted(json.dumps(j["coll_perf"], sort_keys=True) for j in ls
                                     if "coll_perf" in j)
            if recs(p) != recs(m):
                problems.append("the records differ with NCCL_INSPECTOR_DUMP_UNVERIFIED=1")
            unv = [j for j in m if "coll_unverified" in j]
            counted = sum(s["coll_untimed"]["unverified"] for s in last_stats(m).values())
            if not unv or len(unv) != counted:
                problems.append("%d unverified lines, dump_stats counts %d" % (len(unv), counted))
            if any(j["coll_unverified"]["coll_timing_source"] != "unverified" for j in unv):
                problems.append("an unverified line not marked so")
            if any("coll_unverified" in j for j in p):
                problems.append("unverified lines without NCCL_INSPECTOR_DUMP_UNVERIFIED")
            if problems:
                wd.failed = True
                return False, "FAIL gt.unverified: " + "; ".join(problems)
            return True, "OK gt.unverified: %d ops left out, written marked on request" % len(unv)
    return harness.Case("gt.unverified", fn, labels=["gpu-truth"], timeout=120)


def counts_case():
    """Every collective NCCL reported is a record or counted left out, by reason; those it
    never reported (Broadcast on the AllGatherV path, NCCL 2.30) are counted as such."""
    name = "ar256k-p2p-bc-b2b"

    def fn(a):
        with harness.Workdir(a.keep, "gpu-truth") as wd:
            run, problems = replay_dir(a, name, wd)
            ls = lines(run)
            n_coll = 0
            ctx_rank = {}
            with gzip.open(os.path.join(DIR, name, "trace.jsonl.gz"), "rt") as f:
                api_bc = 0
                for l in f:
                    j = json.loads(l)
                    if j["cb"] == "init":
                        ctx_rank[j["ctx"]] = j["rank"]
                    elif j["cb"] == "start" and j["type"] == 2:
                        n_coll += 1
                    elif j["cb"] == "start" and j["type"] == 512 and j["func"] == "Broadcast":
                        api_bc += 1
            st = last_stats(ls).values()
            recs = sum(s["coll_records_total"] for s in st)
            left = sum(s["coll_untimed_total"] for s in st)
            if recs + left != n_coll:
                problems.append("%d records + %d left out, %d collectives reported"
                                % (recs, left, n_coll))
            bc = sum(s.get("coll_unreported", {}).get("Broadcast", 0) for s in st)
            if bc != api_bc:  # none of this recording's Broadcasts has a Coll event
                problems.append("%d Broadcasts counted unreported, %d called" % (bc, api_bc))
            if problems:
                wd.failed = True
                return False, "FAIL gt.counts: " + "; ".join(problems)
            return True, "OK gt.counts: %d records + %d left out = %d; %d Broadcasts unreported" % (
                recs, left, n_coll, bc)
    return harness.Case("gt.counts", fn, labels=["gpu-truth"], timeout=120)


def expected_bounds(trace, recs, unverified):
    """{(rank, kind, function, sn): (start, end, ops)} from the recording alone: its ops in issue order
    per context (Coll and P2p starts), their NCCL groups (pgroup), the API calls that can make
    work (CollApi starts, and P2p starts: core/comm.h api_seq), and the written records. P: the
    last op of an earlier group with a record timed on the GPU from all its channels; N: the
    first such op of a later group; the ops between, or the calls between less one (the
    more). recs, unverified: {(rank, kind, function, sn): line object} (a collective's sn is
    NCCL's, counted per function)."""
    ctx_rank, ops = {}, collections.defaultdict(list)
    api, p2p_sn = collections.Counter(), collections.Counter()
    with gzip.open(trace, "rt") as f:
        for l in f:
            j = json.loads(l)
            if j["cb"] == "init":
                ctx_rank[j["ctx"]] = j["rank"]
            elif j["cb"] != "start":
                continue
            elif j["type"] == 512:
                api[j["ctx"]] += 1
            elif j["type"] in (2, 4):
                c = j["ctx"]
                if j["type"] == 4:
                    api[c] += 1
                    sn, kind = p2p_sn[c], "p2p"
                    p2p_sn[c] += 1
                else:
                    sn, kind = j["seq"], "coll"
                ops[c].append(((ctx_rank[c], kind, j["func"], sn), j["pgroup"], api[c]))
    right = {k for k, o in recs.items()
             if o["%s_timing_source" % k[1]] == "kernel_gpu" and o["%s_stale_channels" % k[1]] == 0}
    out = {}
    for seq in ops.values():
        for i, (key, grp, _) in enumerate(seq):
            if key not in unverified:
                continue
            p = next((k for k in range(i - 1, -1, -1) if seq[k][1] != grp and seq[k][0] in right), None)
            n = next((k for k in range(i + 1, len(seq)) if seq[k][1] != grp and seq[k][0] in right), None)
            if p is None or n is None:
                continue
            po, no = recs[seq[p][0]], recs[seq[n][0]]
            pk, nk = seq[p][0][1], seq[n][0][1]
            start = po["%s_start_ts_ns" % pk] + po["%s_exec_time_ns" % pk]
            out[key] = (start, no["%s_start_ts_ns" % nk], max(n - p - 1, seq[n][2] - seq[p][2] - 1))
    return out


def bounds_case():
    """The bounds of the ops left out, from the recording's own order and timestamps, and
    against CUPTI; the records unchanged by them."""
    name = "live-mix-b2b-busy"  # collectives, Send/Recv groups, Broadcasts NCCL never reported

    def fn(a):
        with harness.Workdir(a.keep, "gpu-truth") as wd:
            plain, problems = replay_dir(a, name, wd, {"NCCL_INSPECTOR_BOUNDS": "off"})
            os.rename(plain, plain + ".off")
            run, probs = replay_dir(a, name, wd, {"NCCL_INSPECTOR_DUMP_UNVERIFIED": "1"})
            problems += probs
            off, ls = lines(plain + ".off"), lines(run)
            def by(*keys):  # {(rank, kind, sn): the line's object} of the lines with those keys
                return {(j["header"]["rank"], k.split("_")[0], j[k][k.split("_")[0]],
                         j[k][k.split("_")[0] + "_sn"]): j[k] for j in ls for k in keys if k in j}
            recs, unv = by("coll_perf", "p2p_perf"), by("coll_unverified", "p2p_unverified")
            got = {k: (o[k[1] + "_start_ts_ns"], o[k[1] + "_end_ts_ns"], o[k[1] + "_bound_ops"])
                   for k, o in by("coll_bound", "p2p_bound").items()}
            exact = lambda xs: sorted(json.dumps({k: v for k, v in j.items() if k != "metadata"},
                                                 sort_keys=True)
                                      for j in xs if "coll_perf" in j or "p2p_perf" in j)
            if exact(off) != exact(ls):
                problems.append("the records differ with bounds on")
            if any(k.endswith("_bound") for j in off for k in j):
                problems.append("bound lines with NCCL_INSPECTOR_BOUNDS=off")
            want = expected_bounds(os.path.join(DIR, name, "trace.jsonl.gz"), recs, unv)
            for k in sorted(set(want) | set(got)):
                if want.get(k) != got.get(k):
                    problems.append("%s: bound %s, expected %s" % (k, got.get(k), want.get(k)))
                    if len(problems) > 8:
                        break
            counted = sum(s.get("coll_bounded_total", 0) + s.get("p2p_bounded_total", 0)
                          for s in last_stats(ls).values())
            if counted != len(got):
                problems.append("dump_stats counts %d bounded, %d bound lines" % (counted, len(got)))
            res = compare.judge(compare.Run(run)).get("bounds", {})
            if res.get("outside") or res.get("unmatched"):
                problems.append("against CUPTI: %s" % res)
            if len(got) < 100:  # the recording has hundreds: a bound for none proves nothing
                problems.append("only %d bounds" % len(got))
            if problems:
                wd.failed = True
                return False, "FAIL gt.bounds: " + "; ".join(problems)
            return True, "OK gt.bounds: %d of %d unverified ops bounded as expected, each holding its " \
                "kernel; %s" % (len(got), len(unv), res)
    return harness.Case("gt.bounds", fn, labels=["gpu-truth"], timeout=120)


def cases():
    names = sorted(os.listdir(DIR))
    out = [truth_case(n) for n in names]
    out.append(truth_case("ar4m-p2p-b2b", threads=True))
    out.append(truth_case("live-mix-b2b-quiet", threads=True))
    out.append(unverified_case())
    out.append(counts_case())
    out.append(bounds_case())
    return out


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))
