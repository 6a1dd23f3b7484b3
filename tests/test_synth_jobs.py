#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Multi-node synthetic jobs with planted faults (inspector-replay --synthetic, CONTRACTS.md
sections 1 and 3), as inspector-report's proofs use them: the plugin's JSON logs are checked
against the truth file and against the timing model of section 1, restated here from the
contract (never from the generator's code).  Model constants: lat 10 us, bw 100 GB/s (the
defaults), so an exec is 10000 + k x bytes / 100 ns.
  jobs.64r8n.records        64 ranks on 8 nodes, one process per rank, every fault planted at
                            once: each truth line has exactly one record, with its start_ns,
                            exec_ns, peer, size and channels, and nothing else is written
  jobs.64r8n.hosts          --procs --nodes 8: files node-NNN-pid<pid>.log, metadata.hostname
                            node-NNN, rank r on node r / 8, 8 processes per node; truth node/host
  jobs.64r8n.inproc-host    the same job in one process: one file, the machine's host name
  jobs.64r8n.clock-offset   --clock-offset-ms 5: per node one offset within +-5 ms, the same on
                            every rank of the node and a function of --seed and the node alone;
                            every start moves by it (start - offset is common to an op's ranks),
                            exec times are the model's
  jobs.64r8n.slow-link      --p2p-pattern nodes --slow-link 3:2 --slow-factor 4: P2P exec is
                            lat + 4 x bytes/bw on exactly the tasks between nodes 2 and 3 (either
                            way), lat + bytes/bw on every other, collectives untouched
  jobs.64r8n.slow-link.ring the ring pattern: only rank 23 -> 24 crosses from node 2 to node 3
  jobs.64r8n.degrade        --order iters --degrade 0.5:3: ops run iteration by iteration; from
                            the op at ceil(0.5 x total) on, busbw drops by the model's ratio
  jobs.64r8n.late-jitter    --late-rank 5 --late-us 200 --late-jitter-us 100: rank 5 starts each
                            op 200..300 us after t0, every other rank within 10 us of t0, both
                            varying; a collective stops together; P2P exec is the transfer alone
  jobs.1024r128n            1,024 ranks on 128 nodes, one process each, every fault planted:
                            records, hosts, offsets and the slow link as above
  jobs.max-procs            --max-procs 1 runs the children one after the other; failing
                            children still make the replay exit 1
  jobs.usage                the new options' usage errors exit 2 and name the option
"""
import collections
import math
import os
import re
import socket
import statistics
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402
import logcheck  # noqa: E402
import oracle  # noqa: E402

LAT_NS = 10_000          # --lat-us 10 (default) [C1]
BW = 100.0               # --bw-gbs 100 (default): bytes per ns [C1]
NODE_FILE = re.compile(r"^node-(?P<node>[0-9]{3,})-pid(?P<pid>[0-9]+)\.log$")
JOB64 = ["--ranks", "64", "--nodes", "8", "--iters", "3", "--sizes", "1M:4M", "--seed", "5"]


def model_exec(nbytes, k=1.0):
    """lat + k x bytes / bw, in whole ns [C1]."""
    return LAT_NS + k * nbytes / BW


def near(got, want, tol=1.0):
    return abs(got - want) <= tol


def node_of(rank, ranks, nodes):
    """Contiguous blocks [C1]: ranks / nodes per node when nodes divide ranks."""
    assert ranks % nodes == 0
    return rank // (ranks // nodes)


class Job:
    """One replay of a synthetic job: its truth lines, its records and its files."""

    def __init__(self, a, wd, args, procs=True, env_extra=None, enable=True, tag=""):
        self.args = list(args)
        self.dump = os.path.join(wd.path, "dump" + tag)
        os.makedirs(self.dump)
        self.truth_path = os.path.join(wd.path, "truth%s.jsonl" % tag)
        self.env_extra = dict(env_extra or {})
        env = harness.make_env(self.env_extra, dump_dir=self.dump, enable=enable)
        self.cmd = harness.replay_cmd(a.replay, a.plugin, procs=procs, synthetic=args,
                                      truth=self.truth_path) + ["--quiet"]
        self.run = harness.run(self.cmd, env, wd.cwd, a.timeout)
        self.problems = []
        if self.run.timed_out or self.run.rc != 0:
            self.problems.append("replay failed: rc %s" % self.run.rc)
        self.problems += harness.sanitizer_reports(self.run.stderr)
        self.truth = []
        if os.path.exists(self.truth_path):
            import json
            with open(self.truth_path) as f:
                self.truth = [json.loads(l) for l in f if l.strip()]
        if not self.truth:
            self.problems.append("no truth file written")
        errs = logcheck.Errors()
        self.files = logcheck.read_dump_dir(self.dump, errs)
        self.problems += errs.items
        self.records = []   # (file name, Line, kind, perf)
        for path, lines in self.files.items():
            for line in lines:
                if line.kind in ("coll_perf", "p2p_perf"):
                    self.records.append((os.path.basename(path), line, line.kind[:-5],
                                         line.obj[line.kind]))

    def repro(self):
        return harness.shell_line(self.cmd, dict(self.env_extra, NCCL_INSPECTOR_ENABLE="1",
                                                 NCCL_INSPECTOR_DUMP_DIR=self.dump))

    def truth_key(self, t):
        return (t["comm"], t["rank"], t["kind"], t["func"], t["sn"])

    def rec_key(self, kind, line, perf):
        return (line.obj["header"]["id"], line.obj["header"]["rank"], kind, perf[kind],
                perf[kind + "_sn"])


def result(name, wd, job, problems, note):
    problems = job.problems + problems
    if problems:
        wd.failed = True
        errs = logcheck.Errors()
        errs.items = problems
        return False, "FAIL %s: %d problems\n%s\n  repro: %s\n  stderr:\n%s" % (
            name, len(problems), errs.render(), job.repro(), harness._tail(job.run.stderr))
    return True, "OK %s: %s" % (name, note)


# ---------------------------------------------------------------------------
# Checks, one behaviour each
# ---------------------------------------------------------------------------

def check_records(job):
    """Each truth line (all pass the default 8 KiB filter) has exactly one record with its
    values [C3: start_ns and exec_ns are what the plugin must report], and no record is extra."""
    problems = []
    truth = {}
    for t in job.truth:
        truth[job.truth_key(t)] = t
    seen = set()
    for fname, line, kind, p in job.records:
        key = job.rec_key(kind, line, p)
        w = "%s:%d" % (fname, line.lineno)
        t = truth.get(key)
        if t is None:
            problems.append("%s: record %s not in the truth file" % (w, key))
            continue
        if key in seen:
            problems.append("%s: record %s written twice" % (w, key))
        seen.add(key)
        want = {"_start_ts_ns": t["start_ns"], "_exec_time_ns": t["exec_ns"],
                "_exec_time_us": t["exec_ns"] // 1000, "_msg_size_bytes": t["bytes"],
                "_count": t["count"], "_nchannels": t["nchannels"], "_stale_channels": 0,
                "_timing_source": "kernel_gpu"}
        if kind == "p2p":
            want["_peer"] = t["peer"]
        for f, v in want.items():
            if p.get(kind + f) != v:
                problems.append("%s: %s%s %r, truth %r (%s)" % (w, kind, f, p.get(kind + f), v, key))
    missing = [k for k in truth if k not in seen]
    if missing:
        problems.append("%d truth lines have no record, e.g. %s" % (len(missing), missing[:3]))
    return problems, len(seen)


def check_hosts(job, ranks, nodes):
    """File names node-NNN-pid<pid>.log, metadata.hostname node-NNN, every record of rank r in
    a file of node r / (ranks / nodes), one process per rank, and the truth says the same."""
    problems = []
    width = max(3, len(str(nodes - 1)))
    pids_of_node = collections.defaultdict(set)
    ranks_seen = set()
    for path, lines in job.files.items():
        fname = os.path.basename(path)
        m = NODE_FILE.match(fname)
        if not m:
            problems.append("%s: file name is not node-NNN-pid<pid>.log" % fname)
            continue
        host = "node-" + m.group("node")
        if len(m.group("node")) != width:
            problems.append("%s: node number not padded to %d digits" % (fname, width))
        pids_of_node[host].add(int(m.group("pid")))
        file_ranks = set()
        for line in lines:
            md = line.obj.get("metadata", {})
            if md.get("hostname") != host:
                problems.append("%s:%d: metadata.hostname %r, file name says %r"
                                % (fname, line.lineno, md.get("hostname"), host))
            if md.get("pid") != int(m.group("pid")):
                problems.append("%s:%d: metadata.pid %r" % (fname, line.lineno, md.get("pid")))
            r = line.obj["header"]["rank"]
            file_ranks.add(r)
            want = "node-%0*d" % (width, node_of(r, ranks, nodes))
            if host != want:
                problems.append("%s:%d: rank %d written by host %s, its node is %s"
                                % (fname, line.lineno, r, host, want))
        if len(file_ranks) != 1:
            problems.append("%s: ranks %s in one process" % (fname, sorted(file_ranks)))
        ranks_seen |= file_ranks
    if len(pids_of_node) != nodes:
        problems.append("%d hosts wrote files, %d nodes expected" % (len(pids_of_node), nodes))
    for host, pids in sorted(pids_of_node.items()):
        if len(pids) != ranks // nodes:
            problems.append("%s: %d processes, %d ranks expected" % (host, len(pids), ranks // nodes))
    if ranks_seen != set(range(ranks)):
        problems.append("records from %d ranks, %d expected" % (len(ranks_seen), ranks))
    for t in job.truth:
        n = node_of(t["rank"], ranks, nodes)
        if t["node"] != n or t["host"] != "node-%0*d" % (width, n):
            problems.append("truth: rank %d has node %r host %r, expected %d node-%0*d"
                            % (t["rank"], t["node"], t["host"], n, width, n))
            break
    return problems


def truth_offsets(job, max_ms):
    """{node: offset ns} from the truth, with the contract's checks: one offset per node (the
    same on every line of it), each within +-max_ms."""
    problems = []
    off = {}
    for t in job.truth:
        o = t["clock_offset_ns"]
        if off.setdefault(t["node"], o) != o:
            problems.append("truth: node %d has offsets %d and %d" % (t["node"], off[t["node"]], o))
            break
    for n, o in sorted(off.items()):
        if not isinstance(o, int) or abs(o) > max_ms * 1e6:
            problems.append("truth: node %d offset %r outside +-%s ms" % (n, o, max_ms))
    return off, problems


def check_starts_move(job, off, ranks, nodes, p2p_funcs=("Send",)):
    """No jitter, no late rank: every rank arrives at an op together [C1], so a rank's start
    minus its node's offset is the same for every rank of the op (collectives: channel 0 starts
    on arrival; P2P: each task starts on arrival)."""
    problems = []
    by_op = collections.defaultdict(set)
    for fname, line, kind, p in job.records:
        if kind == "p2p" and p["p2p"] not in p2p_funcs:
            continue
        r = line.obj["header"]["rank"]
        by_op[(line.obj["header"]["id"], kind, p[kind], p[kind + "_sn"])].add(
            p[kind + "_start_ts_ns"] - off[node_of(r, ranks, nodes)])
    for key, starts in sorted(by_op.items()):
        if len(starts) != 1:
            problems.append("op %s: start - node offset takes %d values (spread %d ns)"
                            % (key, len(starts), max(starts) - min(starts)))
    return problems, len(by_op)


def check_model_exec(job, ranks, slow=None, nodes=1, pattern="ring"):
    """Every exec is the model's [C1]: a collective lat + busbytes/bw (no late rank); a P2P
    task lat + k x bytes/bw, k the --slow-factor over the slow link (either way) else 1; peers
    as --p2p-pattern says. Returns problems and the number of slow tasks seen."""
    problems = []
    n_slow = 0
    stride = ranks // nodes if pattern == "nodes" else 1
    for fname, line, kind, p in job.records:
        r = line.obj["header"]["rank"]
        w = "%s:%d" % (fname, line.lineno)
        nbytes = p[kind + "_msg_size_bytes"]
        if kind == "coll":
            bus = nbytes * oracle.busbw_factor(p["coll"], ranks)
            if p["coll"] in ("AllGather", "ReduceScatter"):
                bus *= ranks
            want = model_exec(bus)
        else:
            peer = p["p2p_peer"]
            want_peer = (r + stride) % ranks if p["p2p"] == "Send" else (r - stride) % ranks
            if peer != want_peer:
                problems.append("%s: rank %d %s peer %d, the pattern says %d"
                                % (w, r, p["p2p"], peer, want_peer))
            k = 1.0
            if slow:
                pair = {node_of(r, ranks, nodes), node_of(peer, ranks, nodes)}
                if pair == {slow[0], slow[1]}:
                    k = slow[2]
                    n_slow += 1
            want = model_exec(nbytes, k)
        if not near(p[kind + "_exec_time_ns"], want):
            problems.append("%s: rank %d %s %s exec %d ns, model %.2f" % (
                w, r, kind, p[kind], p[kind + "_exec_time_ns"], want))
    return problems, n_slow


# ---------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------

def case(name, labels=(), timeout=60):
    def wrap(fn):
        def run(a):
            with harness.Workdir(a.keep, "jobs") as wd:
                return fn(a, wd, name)
        return harness.Case(name, run, labels=["synthetic"] + list(labels), timeout=timeout)
    return wrap


ALL_FAULTS = ["--p2p", "--p2p-pattern", "nodes", "--clock-offset-ms", "5", "--slow-link", "2:3",
              "--late-rank", "13", "--late-us", "150", "--late-jitter-us", "40",
              "--degrade", "0.6:2", "--order", "iters", "--colls", "AllReduce,AllGather"]


@case("jobs.64r8n.records")
def records_case(a, wd, name):
    job = Job(a, wd, JOB64 + ALL_FAULTS)
    probs, n = check_records(job)
    return result(name, wd, job, probs, "%d records match the truth exactly" % n)


@case("jobs.64r8n.hosts")
def hosts_case(a, wd, name):
    job = Job(a, wd, JOB64 + ["--p2p", "--colls", "AllReduce"])
    probs = check_hosts(job, 64, 8)
    return result(name, wd, job, probs, "%d files from 8 hosts node-000..node-007"
                  % len(job.files))


@case("jobs.64r8n.inproc-host")
def inproc_host_case(a, wd, name):
    job = Job(a, wd, JOB64 + ["--p2p", "--colls", "AllReduce"], procs=False)
    host = socket.gethostname()
    probs = []
    names = [os.path.basename(p) for p in job.files]
    m = logcheck.LOG_NAME.match(names[0]) if len(names) == 1 else None
    if not m or m.group("host") != host or int(m.group("pid")) != job.run.pid:
        probs.append("files %s, expected one %s-pid%d.log" % (names, host, job.run.pid))
    for _, line, _, _ in job.records:
        if line.obj["metadata"]["hostname"] != host:
            probs.append("metadata.hostname %r, expected %r" % (line.obj["metadata"]["hostname"], host))
            break
    bad = [t for t in job.truth if t["host"] != host or t["node"] != node_of(t["rank"], 64, 8)]
    if bad:
        probs.append("truth line with host %r node %r for rank %d (host %s expected)"
                     % (bad[0]["host"], bad[0]["node"], bad[0]["rank"], host))
    return result(name, wd, job, probs, "one file, host %s" % host)


@case("jobs.64r8n.clock-offset")
def clock_offset_case(a, wd, name):
    job = Job(a, wd, JOB64 + ["--p2p", "--clock-offset-ms", "5", "--colls", "AllReduce"])
    off, probs = truth_offsets(job, 5)
    if len(off) != 8:
        probs.append("truth has offsets for %d nodes" % len(off))
    elif len(set(off.values())) < 4 or 0 in off.values():
        probs.append("offsets not spread: %s" % off)
    p2, n_ops = check_starts_move(job, off, 64, 8) if len(off) == 8 else ([], 0)
    probs += p2
    probs += check_model_exec(job, 64)[0]
    p3, n = check_records(job)
    probs += p3
    # a function of --seed and the node alone: 16 ranks on the same 8 nodes get the same offsets;
    # another seed gets others
    for tag, args in (("same", ["--ranks", "16", "--seed", "5"]), ("other", ["--ranks", "16", "--seed", "6"])):
        j2 = Job(a, wd, args + ["--nodes", "8", "--iters", "1", "--sizes", "1M:1M", "--colls", "AllReduce",
                                "--clock-offset-ms", "5"], procs=False, enable=False, tag=tag)
        o2, p4 = truth_offsets(j2, 5)
        probs += j2.problems + p4
        if tag == "same" and o2 != off:
            probs.append("--seed 5 on 16 ranks gives offsets %s, on 64 ranks %s" % (o2, off))
        if tag == "other" and o2 == off:
            probs.append("--seed 6 gives the offsets of --seed 5")
    return result(name, wd, job, probs, "offsets (ms) %s; %d ops start together on their "
                  "node's clock; %d records exact" % (
                      " ".join("%.3f" % (off[n] / 1e6) for n in sorted(off)), n_ops, n))


def slow_link_case(name, pattern, link, want_slow_per_op):
    @case(name)
    def fn(a, wd, name):
        extra = ["--p2p-pattern", pattern] if pattern != "ring" else []
        job = Job(a, wd, JOB64 + ["--p2p", "--colls", "AllReduce", "--slow-link", link,
                                  "--slow-factor", "4"] + extra)
        x, y = (int(v) for v in link.split(":"))
        probs, n_slow = check_model_exec(job, 64, slow=(x, y, 4.0), nodes=8, pattern=pattern)
        n_p2p_ops = len({(line.obj["header"]["id"], p["p2p_sn"] // 2)
                         for _, line, k, p in job.records if k == "p2p"})
        if n_slow != want_slow_per_op * n_p2p_ops:
            probs.append("%d slow tasks in %d exchanges, %d per exchange expected"
                         % (n_slow, n_p2p_ops, want_slow_per_op))
        # the factor itself, from the logs: (exec - lat) on the slow link / elsewhere, same size
        by = collections.defaultdict(list)
        for _, line, k, p in job.records:
            if k == "p2p":
                r, peer = line.obj["header"]["rank"], p["p2p_peer"]
                slow = {node_of(r, 64, 8), node_of(peer, 64, 8)} == {x, y}
                by[(p["p2p_msg_size_bytes"], slow)].append(p["p2p_exec_time_ns"] - LAT_NS)
        for size in sorted({s for s, _ in by}):
            if by[(size, True)] and by[(size, False)]:
                ratio = statistics.median(by[(size, True)]) / statistics.median(by[(size, False)])
                if not near(ratio, 4.0, 1e-3):
                    probs.append("size %d: slow/normal transfer %.4f, 4 expected" % (size, ratio))
        return result(name, wd, job, probs, "%d slow tasks (%d per exchange) 4x, every other "
                      "exec the model's" % (n_slow, want_slow_per_op))
    return fn


# nodes pattern: node 2's 8 ranks Send to node 3, node 3's 8 ranks Recv from node 2
slow_nodes = slow_link_case("jobs.64r8n.slow-link", "nodes", "3:2", 16)
# ring: rank 23 (node 2) Sends to 24 (node 3), which Recvs from it
slow_ring = slow_link_case("jobs.64r8n.slow-link.ring", "ring", "2:3", 2)


@case("jobs.64r8n.degrade")
def degrade_case(a, wd, name):
    iters, at, factor = 6, 0.5, 3.0
    job = Job(a, wd, ["--ranks", "64", "--nodes", "8", "--iters", str(iters), "--sizes", "1M:4M",
                      "--colls", "AllReduce,Broadcast", "--p2p", "--order", "iters",
                      "--degrade", "%g:%g" % (at, factor)])
    probs = []
    # rank 0's ops in start order (one per exchange: its Send): iteration-major [C1 --order iters]
    ops = sorted((p[k + "_start_ts_ns"], k, p[k], p[k + "_msg_size_bytes"], p)
                 for _, line, k, p in job.records
                 if line.obj["header"]["rank"] == 0 and (k == "coll" or p["p2p"] == "Send"))
    one_iter = [(f, s) for f in ("AllReduce", "Broadcast", "Send") for s in (1 << 20, 4 << 20)]
    got = [(f, s) for _, _, f, s, _ in ops]
    if got != one_iter * iters:
        probs.append("op order %s..., expected %s x %d" % (got[:8], one_iter, iters))
    total = len(one_iter) * iters
    first = math.ceil(at * total)
    ratios = []
    for i, (_, k, f, s, p) in enumerate(ops):
        bus = s * (oracle.busbw_factor(f, 64) if k == "coll" else 1.0)
        k_ = factor if i >= first else 1.0
        if not near(p[k + "_exec_time_ns"], model_exec(bus, k_)):
            probs.append("op %d (%s %d): exec %d, model %.2f (%s)" % (
                i, f, s, p[k + "_exec_time_ns"], model_exec(bus, k_),
                "degraded" if k_ != 1 else "not degraded"))
    # busbw before / after per (func, size): the model's exec ratio
    for f, s in one_iter:
        bw = [(i >= first, p[("coll" if f != "Send" else "p2p") + "_busbw_gbs"])
              for i, (_, _, f2, s2, p) in enumerate(ops) if (f2, s2) == (f, s)]
        before = [b for late, b in bw if not late]
        after = [b for late, b in bw if late]
        if not before or not after:
            probs.append("%s %d: no op on one side of the change" % (f, s))
            continue
        bus = s * (oracle.busbw_factor(f, 64) if f != "Send" else 1.0)
        want = model_exec(bus, factor) / model_exec(bus)
        got_r = statistics.median(before) / statistics.median(after)
        ratios.append("%s %dM %.3f" % (f, s >> 20, got_r))
        if not near(got_r, want, 2e-4 * want):
            probs.append("%s %d: busbw before/after %.5f, model %.5f" % (f, s, got_r, want))
    probs += check_records(job)[0]
    return result(name, wd, job, probs, "change at op %d of %d; busbw before/after: %s"
                  % (first, total, ", ".join(ratios)))


@case("jobs.64r8n.late-jitter")
def late_jitter_case(a, wd, name):
    late, late_us, jit = 5, 200.0, 100.0
    job = Job(a, wd, JOB64 + ["--p2p", "--colls", "AllReduce", "--late-rank", str(late),
                              "--late-us", str(late_us), "--late-jitter-us", str(jit)])
    probs = []
    ops = collections.defaultdict(dict)   # op -> rank -> (start, exec); Sends stand for arrival
    for _, line, k, p in job.records:
        if k == "p2p" and p["p2p"] != "Send":
            continue
        ops[(k, p[k], p[k + "_sn"])][line.obj["header"]["rank"]] = (
            p[k + "_start_ts_ns"], p[k + "_exec_time_ns"], p[k + "_msg_size_bytes"])
    lateness, spreads = [], []
    for key, by_rank in sorted(ops.items()):
        on_time = [v[0] for r, v in by_rank.items() if r != late]
        t0_hi = min(on_time)          # t0 <= every on-time arrival <= t0 + jit/10
        spread = max(on_time) - t0_hi
        spreads.append(spread)
        if spread > jit / 10 * 1000 + 1:
            probs.append("op %s: on-time ranks spread over %d ns, at most %d" % (key, spread, jit * 100))
        d = by_rank[late][0] - t0_hi  # lateness - (t0_hi - t0), t0_hi - t0 in [0, jit/10]
        lateness.append(d)
        if not (late_us * 1000 - jit * 100 - 1 <= d <= (late_us + jit) * 1000 + 1):
            probs.append("op %s: rank %d %.3f us after the earliest, %g..%g expected"
                         % (key, late, d / 1000, late_us - jit / 10, late_us + jit))
        if key[0] == "coll":          # all stop together at latest arrival + exec
            stops = {s + e for s, e, _ in by_rank.values()}
            if len(stops) != 1:
                probs.append("op %s: ranks stop at %d different times" % (key, len(stops)))
            nbytes = next(iter(by_rank.values()))[2]
            last = min(e for _, e, _ in by_rank.values())
            if not near(last, model_exec(nbytes * oracle.busbw_factor(key[1], 64))):
                probs.append("op %s: the latest arriver's exec %d, model %.2f" % (
                    key, last, model_exec(nbytes * oracle.busbw_factor(key[1], 64))))
    if len(set(lateness)) < len(lateness) // 2 or statistics.pstdev(lateness) < 1000:
        probs.append("the lateness hardly varies: %s" % lateness[:10])
    if sum(1 for s in spreads if s > 0) < len(spreads) // 2:
        probs.append("on-time arrivals are not jittered: spreads %s" % spreads[:10])
    # P2P tasks end their own transfer after their rank's arrival [C1]: lateness never in exec
    for _, line, k, p in job.records:
        if k == "p2p" and not near(p["p2p_exec_time_ns"], model_exec(p["p2p_msg_size_bytes"])):
            probs.append("rank %d %s exec %d, the transfer is %.2f" % (
                line.obj["header"]["rank"], p["p2p"], p["p2p_exec_time_ns"],
                model_exec(p["p2p_msg_size_bytes"])))
            break
    probs += check_records(job)[0]
    return result(name, wd, job, probs, "%d ops: lateness %.1f..%.1f us, on-time spread <= %.2f us"
                  % (len(ops), min(lateness) / 1000, max(lateness) / 1000, max(spreads) / 1000))


@case("jobs.1024r128n", timeout=120)
def big_case(a, wd, name):
    ranks, nodes = 1024, 128
    job = Job(a, wd, ["--ranks", str(ranks), "--nodes", str(nodes), "--iters", "3",
                      "--sizes", "1M:16M", "--colls", "AllReduce", "--p2p", "--p2p-pattern", "nodes",
                      "--clock-offset-ms", "10", "--slow-link", "17:18", "--seed", "11"])
    probs, n = check_records(job)
    probs += check_hosts(job, ranks, nodes)
    off, p2 = truth_offsets(job, 10)
    probs += p2
    if len(off) == nodes:
        probs += check_starts_move(job, off, ranks, nodes)[0]
    p3, n_slow = check_model_exec(job, ranks, slow=(17, 18, 4.0), nodes=nodes, pattern="nodes")
    probs += p3
    if n_slow != 16 * 9:   # per exchange: node 17's 8 Sends, node 18's 8 Recvs; 3 sizes x 3 iters
        probs.append("%d slow tasks, %d expected" % (n_slow, 16 * 9))
    size = sum(os.path.getsize(p) for p in job.files)
    return result(name, wd, job, probs, "%d records exact from %d files (%.1f MB), %d hosts, "
                  "%d slow tasks" % (n, len(job.files), size / 1e6, nodes, n_slow))


@case("jobs.max-procs")
def max_procs_case(a, wd, name):
    job = Job(a, wd, ["--ranks", "8", "--iters", "2", "--sizes", "1M:1M", "--colls", "AllReduce",
                      "--max-procs", "1"], env_extra={"NCCL_INSPECTOR_DUMP_THREAD_ENABLE": "0"})
    probs = []
    # one at a time, in rank order: rank r's last dump precedes rank r+1's first
    span = {}
    for _, line, _, _ in job.records:
        r, ts = line.obj["header"]["rank"], line.obj["metadata"]["dump_timestamp_us"]
        lo, hi = span.get(r, (ts, ts))
        span[r] = (min(lo, ts), max(hi, ts))
    for r in range(7):
        if r in span and r + 1 in span and span[r][1] > span[r + 1][0]:
            probs.append("rank %d dumped at %d us, after rank %d began (%d)"
                         % (r, span[r][1], r + 1, span[r + 1][0]))
    if len(span) != 8:
        probs.append("records from %d ranks" % len(span))
    # failing children under the bound: exit 1, each named
    bad = harness.run([a.replay, "--plugin", os.path.join(wd.path, "no-such-plugin.so"),
                       "--synthetic", "--ranks", "6", "--procs", "--max-procs", "2", "--quiet"],
                      harness.make_env({}), wd.cwd, a.timeout)
    n_failed = len(re.findall(r"child \d+ exited with 1", bad.stderr))
    if bad.rc != 1 or n_failed != 6:
        probs.append("6 children without a plugin: rc %s, %d named as failed" % (bad.rc, n_failed))
    return result(name, wd, job, probs, "8 children one at a time; 6 failing ones: rc 1")


@case("jobs.usage")
def usage_case(a, wd, name):
    base = [a.replay, "--plugin", a.plugin, "--synthetic", "--ranks", "16", "--nodes", "4"]
    bad = [
        (["--p2p", "--slow-link", "1:4"], "slow-link"),
        (["--p2p", "--slow-link", "1-2"], "slow-link"),
        (["--slow-link", "1:2"], "slow-link"),
        (["--p2p", "--slow-factor", "0"], "slow-factor"),
        (["--p2p", "--p2p-pattern", "tree"], "p2p-pattern"),
        (["--p2p", "--p2p-pattern", "nodes", "--nodes", "3"], "p2p-pattern"),
        (["--p2p", "--p2p-pattern", "nodes", "--nodes", "1"], "p2p-pattern"),
        (["--degrade", "1.5:2"], "degrade"),
        (["--degrade", "0.5"], "degrade"),
        (["--degrade", "0.5:0"], "degrade"),
        (["--order", "random"], "order"),
        (["--late-jitter-us", "-1"], "late-jitter-us"),
        (["--clock-offset-ms", "-2"], "clock-offset-ms"),
        (["--max-procs", "4"], "max-procs"),
        (["--procs", "--max-procs", "0"], "max-procs"),
    ]
    probs = []
    for extra, opt in bad:
        r = harness.run(base + extra, harness.make_env({}), wd.cwd, a.timeout)
        first = r.stderr.splitlines()[0] if r.stderr else ""
        if r.rc != 2 or "--" + opt not in first:
            probs.append("%s: rc %s, first line %r (exit 2 naming --%s expected)"
                         % (" ".join(extra), r.rc, first, opt))
    if probs:
        wd.failed = True
        return False, "FAIL %s:\n  %s" % (name, "\n  ".join(probs))
    return True, "OK %s: %d usage errors exit 2 naming their option" % (name, len(bad))


def cases():
    return [records_case, hosts_case, inproc_host_case, clock_offset_case, slow_nodes, slow_ring,
            degrade_case, late_jitter_case, big_case, max_procs_case, usage_case]


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))
