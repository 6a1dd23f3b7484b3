#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""inspector-report's link ratios, computed from a synthetic job, not set by hand: a slow
link's worst_ratio and a slow node's worst_ratio (tools/report/links.c) against the timing
model of docs/CONTRACTS.md section 1, restated here: a P2P task's exec is lat + k x bytes /
bw (lat 10 us, bw 100 GB/s, k = --slow-factor on the planted links, 1 elsewhere), so on a
slow link the busbw of a size is (lat + b/bw) / (lat + k b/bw) of the others' (the same
bytes over a longer exec; busbw factor 1 for Send/Recv). 16 ranks on 8 nodes, one process
per rank (node-NNN), P2P from each node to the next (--p2p-pattern nodes: 8 links, so the
class median is a normal link's), sizes 1, 2 and 4 MiB (--sizes 1M:4M --factor 2).
  link_ratio.slow-link   --slow-link 2:3 --slow-factor 4: one slow link, node-002 <->
                         node-003; each finding's busbw / class median is the model's ratio of
                         its size, and worst_ratio is the smallest of them (that of 4 MiB)
  link_ratio.slow-node   --slow-link 2:3 --slow-link 3:4: node-003 is slow (both its links);
                         its worst_ratio is its links' worst, the model's ratio at 4 MiB
  link_ratio.half-groups two jobs of the same nodes in one directory (two communicators):
                         node-002 <-> node-003 slow in both, node-005 <-> node-006 in the
                         second only, so in half the groups where a cross-node link was slow:
                         both are named (a link is slow when it is in at least half of them)
  link_ratio.pipeline-pairs  logs written here: pipeline stages that talk only to each other,
                         6 hosts of 2 ranks in pairs (node-000 <-> node-001, 002 <-> 003, 004 <->
                         005), a Send and a Recv each way per iteration on one communicator, the
                         transfers between node-000 and node-001 4x as long both ways, or one
                         way: that link named (both ways, or one way from node-000), and neither
                         of its hosts a slow node (each has one link, to one other host)
  link_ratio.read-order  --slow-link 2:3, 5:6, 6:7 and 0:7: slow nodes node-006 and node-007
                         and a slow link node-002 <-> node-003, read by one thread from the
                         files in name order and in reverse (which changes the order in which
                         op names and hostnames are first met): every output (text, --json,
                         --csv, --html, --trace) byte-identical
"""
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402

LAT_NS = 10_000   # --lat-us 10 (the default) [C1]
BW = 100.0        # --bw-gbs 100 (the default): bytes per ns [C1]
FACTOR = 4.0
SIZES = [1 << 20, 2 << 20, 4 << 20]  # --sizes 1M:4M --factor 2
JOB = ["--ranks", "16", "--nodes", "8", "--seed", "3", "--colls", "AllReduce", "--sizes", "1M:4M",
       "--factor", "2", "--iters", "4", "--p2p", "--p2p-pattern", "nodes", "--slow-factor", str(int(FACTOR))]


def model_ratio(nbytes):
    """Busbw on a slow link over busbw on a normal one, for one size [C1]."""
    return (LAT_NS + nbytes / BW) / (LAT_NS + FACTOR * nbytes / BW)


def near(got, want, rel=1e-3):
    return abs(got - want) <= rel * abs(want)


def report_of(a, wd, *jobs):
    """inspector-report --json on the logs of the jobs (JOB + each one's arguments)."""
    os.makedirs(wd.dump)
    for extra in jobs:
        cmd = harness.replay_cmd(a.replay, a.plugin, synthetic=["--procs", "--quiet"] + JOB + extra)
        r = harness.run(cmd, harness.make_env({}, dump_dir=wd.dump), wd.cwd, a.timeout)
        if r.rc != 0:
            return None, "replay rc %s" % r.rc
    exe = os.path.join(os.path.dirname(os.path.abspath(a.replay)), "inspector-report")
    p = subprocess.run([exe, "--json", wd.dump], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=300, universal_newlines=True)
    try:
        return json.loads(p.stdout), ""
    except ValueError:
        return None, "report rc %d: %s" % (p.returncode, (p.stdout + p.stderr)[-2000:])


def slow_link_case(a):
    name = "link_ratio.slow-link"
    with harness.Workdir(a.keep, "link-ratio") as wd:
        rep, err = report_of(a, wd, ["--slow-link", "2:3"])
        if rep is None:
            wd.failed = True
            return False, "FAIL %s: %s" % (name, err)
        problems = []
        links = rep["slow_links"]
        if [sorted((l["a"], l["b"])) for l in links] != [["node-002", "node-003"]] or rep["slow_nodes"]:
            problems.append("slow links %s, slow nodes %s; planted node-002 <-> node-003" % (
                [(l["a"], l["b"]) for l in links], rep["slow_nodes"]))
        else:
            link = links[0]
            sizes = sorted({f["bytes"] for f in link["findings"]})
            if sizes != SIZES:
                problems.append("findings at sizes %s, planted %s" % (sizes, SIZES))
            for f in link["findings"]:
                got = f["busbw_gbs"] / f["class_median_gbs"]
                if not near(got, model_ratio(f["bytes"])):
                    problems.append("%d bytes: busbw / class median %.5f, model %.5f" % (
                        f["bytes"], got, model_ratio(f["bytes"])))
            want = min(model_ratio(b) for b in SIZES)
            if not near(link["worst_ratio"], want):
                problems.append("worst_ratio %.5f, model %.5f (4 MiB)" % (link["worst_ratio"], want))
        if problems:
            wd.failed = True
            return False, "FAIL %s: %s" % (name, "; ".join(problems))
        return True, "OK %s: worst_ratio %.5f, the model's %.5f" % (
            name, links[0]["worst_ratio"], min(model_ratio(b) for b in SIZES))


def slow_node_case(a):
    name = "link_ratio.slow-node"
    with harness.Workdir(a.keep, "link-ratio") as wd:
        rep, err = report_of(a, wd, ["--slow-link", "2:3", "--slow-link", "3:4"])
        if rep is None:
            wd.failed = True
            return False, "FAIL %s: %s" % (name, err)
        nodes = rep["slow_nodes"]
        want = min(model_ratio(b) for b in SIZES)
        if [n["hostname"] for n in nodes] != ["node-003"] or rep["slow_links"]:
            wd.failed = True
            return False, "FAIL %s: slow nodes %s, links %s; planted node-003" % (
                name, [n["hostname"] for n in nodes], rep["slow_links"])
        if nodes[0]["links"] != 2 or not near(nodes[0]["worst_ratio"], want):
            wd.failed = True
            return False, "FAIL %s: node-003: %d links, worst_ratio %.5f; model 2 links, %.5f" % (
                name, nodes[0]["links"], nodes[0]["worst_ratio"], want)
        return True, "OK %s: node-003, worst_ratio %.5f, the model's %.5f" % (
            name, nodes[0]["worst_ratio"], want)


def half_groups_case(a):
    name = "link_ratio.half-groups"
    with harness.Workdir(a.keep, "link-ratio") as wd:
        # the second job: another seed (the last --seed counts), so another communicator
        rep, err = report_of(a, wd, ["--slow-link", "2:3"],
                             ["--seed", "4", "--slow-link", "2:3", "--slow-link", "5:6"])
        if rep is None:
            wd.failed = True
            return False, "FAIL %s: %s" % (name, err)
        got = sorted(tuple(sorted((l["a"], l["b"]))) for l in rep["slow_links"])
        want = [("node-002", "node-003"), ("node-005", "node-006")]
        nfind = {tuple(sorted((l["a"], l["b"]))): len(l["findings"]) for l in rep["slow_links"]}
        groups = len(SIZES) * 2  # Send and Recv, each size, per communicator
        problems = []
        if got != want or rep["slow_nodes"]:
            problems.append("slow links %s, slow nodes %s; planted %s" % (got, rep["slow_nodes"], want))
        elif nfind != {want[0]: 2 * groups, want[1]: groups}:
            problems.append("findings per link %s; %d and %d expected" % (nfind, 2 * groups, groups))
        if problems:
            wd.failed = True
            return False, "FAIL %s: %s" % (name, "; ".join(problems))
        return True, "OK %s: %s, findings %s" % (name, got, nfind)


PP_T0 = 1_700_000_000_000_000_000
PP_HOSTS, PP_GPN, PP_ITERS, PP_BYTES = 6, 2, 8, 4 << 20


def pp_record(nranks, rank, host, op, sn, peer, start, ex):
    """A P2P record as the plugin writes it (docs/CONTRACTS.md section 2), of one 2-rank-per-host
    world communicator."""
    bw = PP_BYTES / ex
    return json.dumps({
        "header": {"id": "0x77", "comm_name": "world", "rank": rank, "n_ranks": nranks, "nnodes": PP_HOSTS},
        "metadata": {"inspector_output_format_version": "v4.0", "git_rev": "test",
                     "rec_mechanism": "nccl_profiler_interface", "dump_timestamp_us": start // 1000 + 1000,
                     "hostname": host, "pid": 1000 + rank},
        "p2p_perf": {"p2p": op, "p2p_sn": sn, "p2p_peer": peer, "p2p_msg_size_bytes": PP_BYTES,
                     "p2p_exec_time_us": ex // 1000, "p2p_timing_source": "kernel_gpu",
                     "p2p_algobw_gbs": round(bw, 6), "p2p_busbw_gbs": round(bw, 6), "p2p_exec_time_ns": ex,
                     "p2p_start_ts_ns": start, "p2p_datatype": "ncclInt8", "p2p_count": PP_BYTES,
                     "p2p_nchannels": 2, "p2p_stale_channels": 0}}, separators=(",", ":")) + "\n"


def write_pipeline(d, slow_dirs):
    """Pairs of hosts (2k, 2k + 1), each local rank i of one with the same of the other: per
    iteration a Send and its Recv one way, then the other way. A transfer lasts 92 us (4 MiB at
    ~100 GB/s and 50 us), x4 from host a to host b for (a, b) in slow_dirs; a Send and its Recv
    end together."""
    n = PP_HOSTS * PP_GPN
    lines, sn = {r: [] for r in range(n)}, {r: 0 for r in range(n)}
    for it in range(PP_ITERS):
        t = PP_T0 + it * 10_000_000
        for k in range(PP_HOSTS // 2):
            for i in range(PP_GPN):
                a, b = 2 * k * PP_GPN + i, (2 * k + 1) * PP_GPN + i
                for back, (snd, rcv) in enumerate(((a, b), (b, a))):
                    dur = 50_000 + PP_BYTES // 100
                    if (snd // PP_GPN, rcv // PP_GPN) in slow_dirs:
                        dur *= 4
                    ts, tr = t + back * 4_000_000 + 1000 * i, t + back * 4_000_000 + 2000
                    end = max(ts, tr) + dur
                    for r, op, peer, st in ((snd, "Send", rcv, ts), (rcv, "Recv", snd, tr)):
                        lines[r].append(pp_record(n, r, "node-%03d" % (r // PP_GPN), op, sn[r], peer, st, end - st))
                        sn[r] += 1
    for r in range(n):
        with open(os.path.join(d, "node-%03d-pid%d.log" % (r // PP_GPN, 1000 + r)), "w") as f:
            f.writelines(lines[r])


def pipeline_pairs_case(a):
    name = "link_ratio.pipeline-pairs"
    exe = os.path.join(os.path.dirname(os.path.abspath(a.replay)), "inspector-report")
    out, problems = [], []
    for what, slow_dirs, one_way in (("both ways", {(0, 1), (1, 0)}, False), ("one way", {(0, 1)}, True)):
        with harness.Workdir(a.keep, "link-ratio") as wd:
            os.makedirs(wd.dump)
            write_pipeline(wd.dump, slow_dirs)
            p = subprocess.run([exe, "--json", wd.dump], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               timeout=120, universal_newlines=True)
            try:
                rep = json.loads(p.stdout)
            except ValueError:
                wd.failed = True
                return False, "FAIL %s: %s: report rc %d: %s" % (name, what, p.returncode, (p.stdout + p.stderr)[-2000:])
            links = [(l["a"], l["b"], l["one_way"]) for l in rep["slow_links"]]
            nodes = [n["hostname"] for n in rep["slow_nodes"]]
            want = [("node-000", "node-001", one_way)]
            if links != want or nodes:
                wd.failed = True
                problems.append("%s: slow links %s, slow nodes %s; planted %s, no node" % (what, links, nodes, want))
            out.append("%s: %s" % (what, links))
    if problems:
        return False, "FAIL %s: %s" % (name, "; ".join(problems))
    return True, "OK %s: %s, no slow node" % (name, "; ".join(out))


def read_order_case(a):
    """Output order follows names and numbers, not which log was read first: interned ids
    (op names, hostnames) are numbered in the order they are first met, and pairs, links,
    slow nodes and a rank's top op were ordered by them (tools/report/acc.c)."""
    name = "link_ratio.read-order"
    with harness.Workdir(a.keep, "link-ratio") as wd:
        os.makedirs(wd.dump)
        cmd = harness.replay_cmd(a.replay, a.plugin, synthetic=["--procs", "--quiet"] + JOB + [
            "--slow-link", "2:3", "--slow-link", "5:6", "--slow-link", "6:7", "--slow-link", "0:7"])
        r = harness.run(cmd, harness.make_env({}, dump_dir=wd.dump), wd.cwd, a.timeout)
        if r.rc != 0:
            wd.failed = True
            return False, "FAIL %s: replay rc %s" % (name, r.rc)
        files = sorted(os.path.join(wd.dump, f) for f in os.listdir(wd.dump))
        exe = os.path.join(os.path.dirname(os.path.abspath(a.replay)), "inspector-report")
        fwd, err = harness.report_outputs(exe, os.path.join(wd.path, "out"), files)
        rev, err2 = harness.report_outputs(exe, os.path.join(wd.path, "out"), files[::-1]) if fwd is not None else (None, "")
        if fwd is None or rev is None:
            wd.failed = True
            return False, "FAIL %s: %s" % (name, err or err2)
        problems = []
        rep = json.loads(fwd["json"].decode())
        nodes = [n["hostname"] for n in rep["slow_nodes"]]
        links = [(l["a"], l["b"]) for l in rep["slow_links"]]
        if sorted(nodes) != ["node-006", "node-007"] or links != [("node-002", "node-003")]:
            problems.append("slow nodes %s, slow links %s; planted node-006, node-007 and "
                            "node-002 <-> node-003" % (nodes, links))
        for k in sorted(set(fwd) | set(rev)):
            if fwd.get(k) != rev.get(k):
                problems.append("%s differs between the files in name order and reversed" % k)
        if problems:
            wd.failed = True
            return False, "FAIL %s: %s" % (name, "; ".join(problems))
        return True, "OK %s: %d outputs byte-identical whichever file is read first" % (name, len(fwd))


def cases():
    return [harness.Case("link_ratio.slow-link", slow_link_case, labels=["report"], timeout=240),
            harness.Case("link_ratio.slow-node", slow_node_case, labels=["report"], timeout=240),
            harness.Case("link_ratio.half-groups", half_groups_case, labels=["report"], timeout=240),
            harness.Case("link_ratio.pipeline-pairs", pipeline_pairs_case, labels=["report"], timeout=120),
            harness.Case("link_ratio.read-order", read_order_case, labels=["report"], timeout=240)]


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))
