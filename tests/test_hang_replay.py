#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A synthetic job that hangs (inspector-replay --hang-rank, docs/CONTRACTS.md section 1, "A stuck
op", and section 3's hang line): what the driver delivers, checked with the recording plugin
(tests/plugins/trace_plugin.c: one line per callback it got, per process), while the processes
hold at their stuck point (tests/lib/hang_common.py: ready files, then SIGUSR1). The stuck op, its
sn and each rank's part are restated from the contract for each job (never from the generator).
  hang.coll         16 ranks on 4 nodes, one process each: rank 5 never issues AllReduce #6 (the
                    middle op) nor anything after; rank 9 issues it, no channel starts; the 14
                    others start its 8 channels, none stops; all hold (alive, ready files with
                    16 distinct pids, each the recording's) until SIGUSR1, then finalize, exit 0;
                    the truth file: the completed ops' lines, then the hang line
  hang.p2p          --hang-kind p2p on a ring of 8: rank 3 never issues exchange #0; the Recvs
                    from 3 and from the queued rank 6 wait (ranks 4, 7), every other task completes
  hang.group-comms  --comms 2 --hang-comm 1 --hang-group 3 --threads: the stuck AllReduce is on
                    the second communicator, issued in one GroupApi with two ops that complete,
                    which the missing rank issues too (in its own group of two)
  hang.inproc       all ranks in one process, --no-finalize, --hang-op 1: the hold ends by itself
                    (no signal), every ready file holds the replay's pid, no finalize is delivered
  hang.records      the plugin itself on a hung 16-rank job: it writes exactly the truth file's
                    records (the completed ops; none for a stuck op), nothing else
  hang.usage        bad combinations exit 2 naming the option; a missing --hang-ready-dir exits 1
The plugin itself (NCCL_INSPECTOR_HANG_SECONDS, issue 33's contract), its logs copied while every
process holds, once the lines that must come are there (the ready files, then a bounded poll):
  hang.plugin.coll  16 ranks on 4 nodes, HANG_SECONDS=2: rank 5 never issues AllReduce #6; the 15
                    others each write a hang line for it (kernel started, 8 channels, none
                    stopped, in flight past the threshold, its size, their own pid), rank 5 none
                    but a comm_idle line; no other op's hang line left unresolved
  hang.plugin.p2p   a Recv whose Send never comes: hang lines for Recv p2p_sn 1 on ranks 4 and 7
                    (peers 3 and 6), queued rank 6's kernel not started; the missing rank and
                    those whose exchange completed have none
  hang.plugin.group-comms  --comms 2 --hang-comm 1 --hang-group 3, a queued rank, --threads: the
                    lines name the second communicator's AllReduce #2, none the first's
  hang.plugin.quiet the same 16 processes held with nothing stuck (--hang-hold-s alone), a 1 s
                    threshold: every rank says comm_idle, no process writes a hang line
  hang.plugin.small a 4-byte AllReduce (a barrier, a loss reduction: below
                    NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES) stuck after a 64 KiB one: the 7 waiting
                    ranks' hang lines name it (size 4, count 1), the last completed the 64 KiB
                    AllReduce; after the exit, no log holds a record of a 4-byte op nor counts
                    one dropped, untimed or incomplete
"""
import collections
import json
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402
import hang_common  # noqa: E402
import logcheck  # noqa: E402

CHANNELS = 8      # --channels (default) [C1]
P2P_CHANNEL = 16  # an exchange's channel [C1]
COLL, P2P, KERNEL_CH, GROUP_API, COLL_API = 2, 4, 64, 256, 512  # event types (tests/data/README.md)
KSTOP = 22        # the kernel-stop record's state


def trace_plugin(a):
    """The recording plugin, built beside the plugin under test (CMakeLists.txt)."""
    return os.path.join(os.path.dirname(os.path.abspath(a.plugin)), "libinspector-trace-plugin.so")


class Recording:
    """One process's callbacks, as the recording plugin wrote them (tests/data/README.md)."""

    def __init__(self, path):
        self.pid = int(re.search(r"trace-([0-9]+)\.jsonl$", path).group(1))
        self.ctx = {}           # ctx -> (comm, rank)
        self.ev = {}            # id -> its start line + stopped, kstop, kids
        self.finalized = set()  # ctxs
        with open(path) as f:
            for line in f:
                o = json.loads(line)
                cb = o["cb"]
                if cb == "init":
                    self.ctx[o["ctx"]] = (o["comm"], o["rank"])
                elif cb == "start":
                    self.ev[o["id"]] = dict(o, stopped=False, kstop=False, kids=[])
                    if o["parent"] in self.ev:
                        self.ev[o["parent"]]["kids"].append(o["id"])
                elif cb == "stop":
                    self.ev[o["id"]]["stopped"] = True
                elif cb == "record" and o["state"] == KSTOP:
                    self.ev[o["id"]]["kstop"] = True
                elif cb == "finalize":
                    self.finalized.add(o["ctx"])

    def ops(self, comm, rank, type_):
        """The Coll (or P2p) starts of (comm, rank), in the order delivered."""
        return [e for e in self.ev.values() if e["type"] == type_ and self.ctx.get(e["ctx"]) == (comm, rank)]

    def fate(self, op, nch):
        """'runs': the host stop, and nch channels each started, kernel-stopped and stopped;
        'waits': the host stop, nch channels started, none kernel-stopped or stopped;
        'queued': the host stop, no channel; else what is wrong."""
        chans = [self.ev[k] for k in op["kids"] if self.ev[k]["type"] == KERNEL_CH]
        if not op["stopped"]:
            return "no host stop"
        if not chans:
            return "queued"
        if len(chans) != nch:
            return "%d channels, not %d" % (len(chans), nch)
        if all(c["kstop"] and c["stopped"] for c in chans):
            return "runs"
        if not any(c["kstop"] or c["stopped"] for c in chans):
            return "waits"
        return "channels partly stopped"


def recordings(trace_dir):
    return [Recording(os.path.join(trace_dir, n)) for n in sorted(os.listdir(trace_dir))]


def by_rank(recs):
    """{(comm, rank): Recording} over every context any process recorded."""
    out = {}
    for rec in recs:
        for comm, rank in rec.ctx.values():
            out[(comm, rank)] = rec
    return out


def comm_ids(job):
    """The communicators' ids in index order, from the truth's op lines (the first op of the
    run is on communicator 0, the next on 1, ...: section 1's order)."""
    ids = []
    for o in job.truth_ops():
        if o["comm"] not in ids:
            ids.append(o["comm"])
    return ids


def check_colls(rec_of, comm, nranks, want, probs):
    """want: {rank: [fate of its Coll #0, #1, ...]} on comm; a rank's Coll starts must be exactly
    these, sn 0, 1, ... in order."""
    for r in range(nranks):
        rec = rec_of.get((comm, r))
        if rec is None:
            probs.append("rank %d: no recording of communicator %s" % (r, comm))
            continue
        ops = rec.ops(comm, r, COLL)
        got_sn = [o["seq"] for o in ops]
        if got_sn != list(range(len(want[r]))):
            probs.append("rank %d comm %s: Coll starts with sn %s, want %s"
                         % (r, comm, got_sn, list(range(len(want[r])))))
            continue
        got = [rec.fate(o, CHANNELS) for o in ops]
        if got != want[r]:
            probs.append("rank %d comm %s: Colls %s, want %s" % (r, comm, got, want[r]))


def check_hang_line(h, want, probs):
    for k, v in want.items():
        if h is None or h.get(k) != v:
            probs.append("truth hang line: %s is %r, want %r" % (k, None if h is None else h.get(k), v))


def check_ready(job, recs, nprocs, probs):
    """Every rank's ready file names the process that recorded that rank (with --procs, one
    process per rank); they ran on at the stuck point (checked by the caller while holding)."""
    ready = job.ready_files()
    if sorted(ready) != list(range(job.ranks)):
        probs.append("ready files for ranks %s" % sorted(ready))
    if len(set(ready.values())) != nprocs:
        probs.append("ready files name %d processes, want %d" % (len(set(ready.values())), nprocs))
    for rec in recs:
        for _, rank in rec.ctx.values():
            if ready.get(rank) != rec.pid:
                probs.append("rank %d: ready file names pid %s, its recording is pid %d"
                             % (rank, ready.get(rank), rec.pid))
    left = [n for n in os.listdir(job.ready_dir) if not n.startswith("rank-")]
    if left:
        probs.append("files beside the ready files: %s" % left)


def run_recorded(a, wd, args, nprocs, procs=True, signal_it=True, hold_s=None):
    """Runs a hung job with the recording plugin; checks it holds, then ends it. (job, recs, probs)"""
    tdir = os.path.join(wd.path, "traces")
    os.makedirs(tdir)
    probs = []
    # the hold: until SIGUSR1, or at most the case's time (a test killed on the way leaves no
    # process holding for long)
    with hang_common.HangJob(a.replay, trace_plugin(a), wd, args, procs=procs,
                             hold_s=a.timeout if hold_s is None else hold_s,
                             env_extra={"INSPECTOR_TRACE_DIR": tdir}) as job:
        # bounds for a broken replay, a third of the case's time each: the case says why it failed
        if job.wait_ready(a.timeout / 3) and signal_it and not job.running():
            probs.append("a process of the job exited at its stuck point, before SIGUSR1")
        job.release(a.timeout / 3, signal_it=signal_it)
    probs += job.problems
    if job.rc != 0:
        probs.append("replay exit %s, want 0; stderr: %s" % (job.rc, job.stderr[-1500:]))
    probs += harness.sanitizer_reports(job.stderr)
    recs = recordings(tdir)
    if len(recs) != nprocs:
        probs.append("%d processes recorded, want %d" % (len(recs), nprocs))
    check_ready(job, recs, nprocs, probs)
    return job, recs, probs


def result(name, wd, probs, ok_msg):
    if probs:
        wd.failed = True
        return False, "FAIL %s: %d problems\n  %s" % (name, len(probs), "\n  ".join(probs[:40]))
    return True, "OK %s: %s" % (name, ok_msg)


def coll_case(a):
    """16 ranks, 4 nodes. Section 1: --sizes 1K:16K --factor 4 gives 1K, 4K, 16K; --iters 4;
    one collective, one communicator: 12 ops, running index = AllReduce sn; the middle op is
    12 // 2 = 6: AllReduce sn 6, 4 KiB (1024 floats)."""
    name = "hang.coll"
    args = ["--ranks", "16", "--nodes", "4", "--colls", "AllReduce", "--iters", "4", "--sizes", "1K:16K",
            "--hang-rank", "5", "--hang-queued-rank", "9"]
    with harness.Workdir(a.keep, "hang") as wd:
        job, recs, probs = run_recorded(a, wd, args, 16)
        if not comm_ids(job):
            return result(name, wd, probs + ["no op line in the truth file"], "")
        comm = comm_ids(job)[0]
        want = {r: ["runs"] * 6 + {5: [], 9: ["queued"]}.get(r, ["waits"]) for r in range(16)}
        rec_of = by_rank(recs)
        check_colls(rec_of, comm, 16, want, probs)
        for rec in recs:
            if rec.finalized != set(rec.ctx):
                probs.append("pid %d: contexts %s finalized, want all of %s" % (rec.pid, sorted(rec.finalized),
                                                                                 sorted(rec.ctx)))
        check_hang_line(job.truth_hang(), {
            "comm": comm, "comm_index": 0, "kind": "coll", "func": "AllReduce", "sn": 6, "index": 6,
            "group": 1, "first_index": 6, "bytes": 4096, "count": 1024, "nranks": 16, "missing": [5],
            "queued": [9], "waiting": [r for r in range(16) if r not in (5, 9)], "completed": []}, probs)
        got = collections.Counter((o["rank"], o["sn"]) for o in job.truth_ops())
        if got != collections.Counter((r, sn) for r in range(16) for sn in range(6)):
            probs.append("truth op lines: not exactly AllReduce sn 0..5 of every rank: %s"
                         % sorted(set(got) ^ {(r, sn) for r in range(16) for sn in range(6)})[:10])
        return result(name, wd, probs, "16 processes held until SIGUSR1; rank 5 missing, rank 9 "
                      "queued, 14 waiting in AllReduce #6; exit 0")


def p2p_case(a):
    """Section 1: --colls AllReduce --p2p, 1K:4K (1K, 4K), --iters 2: AllReduce idx 0-3, then the
    exchange idx 4-7 (order sizes); total 8, middle 4: exchange #0 (Send sn 0, Recv sn 1), 1 KiB.
    Ring: r Sends to r+1, Recvs from r-1. Rank 3 missing, 6 queued: the Recvs from 3 and 6 (on
    ranks 4 and 7) wait, the other tasks complete."""
    name = "hang.p2p"
    args = ["--ranks", "8", "--nodes", "2", "--colls", "AllReduce", "--p2p", "--iters", "2", "--sizes",
            "1K:4K", "--hang-kind", "p2p", "--hang-rank", "3", "--hang-queued-rank", "6"]
    with harness.Workdir(a.keep, "hang") as wd:
        job, recs, probs = run_recorded(a, wd, args, 8)
        if not comm_ids(job):
            return result(name, wd, probs + ["no op line in the truth file"], "")
        comm = comm_ids(job)[0]
        rec_of = by_rank(recs)
        check_colls(rec_of, comm, 8, {r: ["runs"] * 4 for r in range(8)}, probs)
        want = {3: [], 6: [("Send", 7, "queued"), ("Recv", 5, "queued")],
                4: [("Send", 5, "runs"), ("Recv", 3, "waits")], 7: [("Send", 0, "runs"), ("Recv", 6, "waits")]}
        for r in range(8):
            rec = rec_of.get((comm, r))
            if rec is None:
                probs.append("rank %d: no recording" % r)
                continue
            w = want.get(r, [("Send", (r + 1) % 8, "runs"), ("Recv", (r - 1) % 8, "runs")])
            got = [(o["func"], o["peer"], rec.fate(o, 1)) for o in rec.ops(comm, r, P2P)]
            if got != w:
                probs.append("rank %d: P2p %s, want %s" % (r, got, w))
            for o in rec.ops(comm, r, P2P):
                chans = [rec.ev[k]["ch"] for k in o["kids"]]
                if chans not in ([], [P2P_CHANNEL]):
                    probs.append("rank %d %s: channels %s" % (r, o["func"], chans))
        check_hang_line(job.truth_hang(), {
            "comm": comm, "kind": "p2p", "func": "Recv", "sn": 1, "index": 4, "group": 1, "bytes": 1024,
            "count": 256, "missing": [3], "queued": [6], "waiting": [4, 7], "completed": [0, 1, 2, 5],
            "peers": [7, 0, 1, 2, 3, 4, 5, 6]}, probs)
        got = sorted((o["rank"], o["func"]) for o in job.truth_ops() if o["kind"] == "p2p")
        exp = sorted([(r, "Send") for r in range(8) if r not in (3, 6)] + [(r, "Recv") for r in (0, 1, 2, 5)])
        if got != exp:
            probs.append("truth p2p lines %s, want %s" % (got, exp))
        return result(name, wd, probs, "Recvs of ranks 4 and 7 wait on ranks 3 (missing) and 6 (queued)")


def group_comms_case(a):
    """Section 1: --comms 2, AllReduce, 1K:4K, --iters 2: each (size, iteration) op on comm 0 then
    comm 1: idx 0 c0 sn0, 1 c1 sn0, 2 c0 sn1, 3 c1 sn1, 4 c0 sn2, 5 c1 sn2, 6 c0 sn3, 7 c1 sn3.
    Middle 4, on comm 1: idx 5 (AllReduce sn 2 of comm 1, 4 KiB); --hang-group 3: idx 3, 4, 5 in
    one GroupApi. Rank 2 missing: it issues idx 3 and 4 (one group of two) and nothing more."""
    name = "hang.group-comms"
    args = ["--ranks", "8", "--comms", "2", "--colls", "AllReduce", "--iters", "2", "--sizes", "1K:4K",
            "--hang-comm", "1", "--hang-group", "3", "--hang-rank", "2", "--threads"]
    with harness.Workdir(a.keep, "hang") as wd:
        job, recs, probs = run_recorded(a, wd, args, 8)
        ids = comm_ids(job)
        if len(ids) != 2:
            return result(name, wd, probs + ["truth names %d communicators" % len(ids)], "")
        c0, c1 = ids
        rec_of = by_rank(recs)
        check_colls(rec_of, c0, 8, {r: ["runs"] * 3 for r in range(8)}, probs)
        check_colls(rec_of, c1, 8, {r: ["runs"] * 2 + ([] if r == 2 else ["waits"]) for r in range(8)}, probs)
        for r in range(8):
            rec = rec_of.get((c0, r))
            if rec is None:
                continue

            def gapi(comm, sn):  # the GroupApi of the Coll's API call
                op = [o for o in rec.ops(comm, r, COLL) if o["seq"] == sn]
                return rec.ev[rec.ev[op[0]["parent"]]["parent"]]["id"] if op else None
            grouped = [gapi(c1, 1), gapi(c0, 2)] + ([] if r == 2 else [gapi(c1, 2)])
            alone = [gapi(c0, 0), gapi(c1, 0), gapi(c0, 1)]
            if len(set(grouped)) != 1 or None in grouped or len(set(alone + grouped[:1])) != 4:
                probs.append("rank %d: GroupApi of c1#1, c0#2(, c1#2): %s, of c0#0, c1#0, c0#1: %s; want one "
                             "shared by the group, one each for the others" % (r, grouped, alone))
            kids = [k for k in rec.ev[grouped[0]]["kids"] if rec.ev[k]["type"] == COLL_API] if grouped[0] else []
            if len(kids) != len(grouped):
                probs.append("rank %d: the group's GroupApi has %d CollApi, want %d" % (r, len(kids), len(grouped)))
        check_hang_line(job.truth_hang(), {
            "comm": c1, "comm_index": 1, "kind": "coll", "func": "AllReduce", "sn": 2, "index": 5, "group": 3,
            "first_index": 3, "bytes": 4096, "missing": [2], "queued": [], "waiting": [0, 1, 3, 4, 5, 6, 7],
            "completed": []}, probs)
        return result(name, wd, probs, "AllReduce #2 of the second communicator stuck in a group of 3")


def inproc_case(a):
    """Section 1: --colls AllGather,Broadcast, 1K:1K, --iters 2: AllGather idx 0-1, Broadcast 2-3;
    --hang-op 1: AllGather sn 1. One process for the 4 ranks; the hold (0.2 s) ends by itself."""
    name = "hang.inproc"
    args = ["--ranks", "4", "--colls", "AllGather,Broadcast", "--iters", "2", "--sizes", "1K:1K",
            "--hang-rank", "0", "--hang-op", "1", "--no-finalize"]
    with harness.Workdir(a.keep, "hang") as wd:
        job, recs, probs = run_recorded(a, wd, args, 1, procs=False, signal_it=False, hold_s=0.2)
        if set(job.ready_files().values()) != {job.proc.pid}:
            probs.append("ready files name %s, not the replay's pid %d" % (job.ready_files(), job.proc.pid))
        if not comm_ids(job):
            return result(name, wd, probs + ["no op line in the truth file"], "")
        comm = comm_ids(job)[0]
        rec_of = by_rank(recs)
        check_colls(rec_of, comm, 4, {r: ["runs"] + ([] if r == 0 else ["waits"]) for r in range(4)}, probs)
        funcs = {e["func"] for rec in recs for e in rec.ev.values() if e["type"] == COLL}
        if funcs != {"AllGather"}:
            probs.append("Colls of %s delivered, want AllGather only" % sorted(funcs))
        if any(rec.finalized for rec in recs):
            probs.append("--no-finalize: a finalize was delivered")
        check_hang_line(job.truth_hang(), {"func": "AllGather", "sn": 1, "index": 1, "missing": [0],
                                           "waiting": [1, 2, 3]}, probs)
        return result(name, wd, probs, "one process held, then exited 0 on its own, no finalize")


def records_case(a):
    """The plugin on a hung job: its records are the truth file's op lines, exactly."""
    name = "hang.records"
    args = ["--ranks", "16", "--colls", "AllReduce,AllGather", "--iters", "3", "--sizes", "1K:64K",
            "--hang-rank", "5", "--hang-queued-rank", "9"]
    env_extra = {"NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES": "0"}
    with harness.Workdir(a.keep, "hang") as wd:
        with hang_common.HangJob(a.replay, a.plugin, wd, args, env_extra=env_extra, hold_s=a.timeout) as job:
            job.wait_ready(a.timeout / 3)
            pids = set(job.ready_files().values())
            job.release(a.timeout / 3)
        probs = list(job.problems)
        if job.rc != 0:
            probs.append("replay exit %s, want 0; stderr: %s" % (job.rc, job.stderr[-1500:]))
        probs += harness.sanitizer_reports(job.stderr)
        cfg = harness.RunConfig(job.env)
        ctxs, recs, tprobs = harness.truth_expectation(job.truth, cfg)
        probs += tprobs
        errors, summary = logcheck.check_dump(job.dump, logcheck.Expectation(recs, ctxs), window=job.window,
                                              pids=pids)
        probs += errors.items
        if not recs or summary["expected"] != summary["found"]:
            probs.append("records expected %d, found %d" % (summary["expected"], summary["found"]))
        return result(name, wd, probs, "records expected %d, found %d" % (summary["expected"], summary["found"]))


# ---- the plugin on a hung job -------------------------------------------------------------------

def plugin_job(a, wd, args, hang_s, extra_env=None):
    """A hung (or held) job with the plugin under test and NCCL_INSPECTOR_HANG_SECONDS=hang_s."""
    env = {"NCCL_INSPECTOR_HANG_SECONDS": str(hang_s)}
    env.update(extra_env or {})
    return hang_common.HangJob(a.replay, a.plugin, wd, args, env_extra=env, hold_s=a.timeout)


def copy_while_held(a, job, ready_for=None):
    """Waits for the ready files, then for the logs to satisfy ready_for(truth hang) (default:
    hang_common.stuck_seen); copies them (wd/copy) and checks the job still runs after.
    (truth hang, snapshot or None, problems)"""
    probs = []
    snap = h = None
    # each wait a bound for a broken replay, a quarter of the case's time: the case says why
    if job.wait_ready(a.timeout / 4):  # the truth file is whole: written before any process started
        h = job.truth_hang()
        ready = (ready_for or hang_common.stuck_seen)(h)
        snap = job.copy_logs_when(os.path.join(job.wd.path, "copy"), ready, a.timeout / 4)
        if snap is not None and not job.running():
            probs.append("a process of the job exited before SIGUSR1: the logs were not taken while it ran")
    return h, snap, probs


def finish(a, job, probs):
    """Ends the hold, then the exit status and the sanitizers' word."""
    job.release(a.timeout / 4)
    probs += job.problems
    if job.rc != 0:
        probs.append("replay exit %s, want 0; stderr: %s" % (job.rc, job.stderr[-1500:]))
    probs += harness.sanitizer_reports(job.stderr)


def check_stuck_lines(snap, job, h, hang_s, want, probs, also=()):
    """The hang lines of the truth hang h's stuck op in snap: want {state: {key: value}} for
    the first line (repeat 0) of each waiting and queued rank, every line from that rank's own
    process (pid as its ready file, and in the log's name); none from a missing rank; any from
    a rank that completed it (an exchange) resolved; no other op's line unresolved but those in
    `also` (op_key tuples: the queued rank's Send of an exchange)."""
    lines = hang_common.stuck_hang_lines(snap, h)
    pids = job.ready_files()
    kind = h["kind"]
    for state in ("waiting", "queued"):
        for r in h[state]:
            got = lines.get(r, [])
            first = [o for o in got if o["hang"].get("repeat") == 0]
            if len(first) != 1:
                probs.append("%s rank %d: %d first hang lines (repeat 0) for %s #%d, want 1"
                             % (state, r, len(first), h["func"], h["sn"]))
                continue
            o = first[0]["hang"]
            exp = {kind + "_msg_size_bytes": h["bytes"], kind + "_count": h["count"],
                   kind + "_datatype": h["datatype"], "channels_stopped": 0}
            if kind == "p2p":
                exp["p2p_peer"] = h["peers"][r]
            exp.update(want.get(state, {}))
            for k, v in exp.items():
                if o.get(k) != v:
                    probs.append("%s rank %d: hang.%s is %r, want %r" % (state, r, k, o.get(k), v))
            if not isinstance(o.get("in_flight_s"), (int, float)) or o["in_flight_s"] < hang_s:
                probs.append("%s rank %d: in_flight_s %r, not past the threshold %s"
                             % (state, r, o.get("in_flight_s"), hang_s))
            for x in got:
                if x["metadata"].get("pid") != pids.get(r):
                    probs.append("rank %d: a hang line from pid %s, its process is %s"
                                 % (r, x["metadata"].get("pid"), pids.get(r)))
    for name, ls in snap.items():
        objs = hang_common.objects(ls)
        resolved = {hang_common.op_key(o, "hang_resolved") for o in objs if "hang_resolved" in o}
        for o in objs:
            if "hang" not in o or hang_common.op_key(o) != hang_common.truth_key(h):
                continue
            r = o["header"].get("rank")
            if not name.endswith("-pid%d.log" % o["metadata"].get("pid", -1)):
                probs.append("%s: a hang line of pid %s" % (name, o["metadata"].get("pid")))
            if r in h["missing"]:
                probs.append("missing rank %d: a hang line for %s #%d (%s)" % (r, h["func"], h["sn"], name))
            elif r in h["completed"] and hang_common.op_key(o) not in resolved:
                probs.append("rank %d completed %s #%d: an unresolved hang line for it" % (r, h["func"], h["sn"]))
    others = [x for x in hang_common.unresolved_others(snap, h) if not any(str(k) in x for k in also)]
    if others:
        probs.append("hang lines of ops that completed, not resolved: %s" % others[:5])


def plugin_coll_case(a):
    """The issue's job: 16 ranks on 4 nodes, a 2 s threshold. Section 1: --sizes 16K:256K
    (16K, 64K, 256K: at least the default DUMP_MIN_SIZE_BYTES, 8192), --iters 4, AllReduce:
    12 ops, the middle one 6: AllReduce sn 6, 64 KiB (16384 floats)."""
    name = "hang.plugin.coll"
    hang_s = 2
    args = ["--ranks", "16", "--nodes", "4", "--colls", "AllReduce", "--iters", "4", "--sizes", "16K:256K",
            "--hang-rank", "5"]
    with harness.Workdir(a.keep, "hang") as wd:
        with plugin_job(a, wd, args, hang_s) as job:
            h, snap, probs = copy_while_held(a, job)
            finish(a, job, probs)
        check_hang_line(h, {"func": "AllReduce", "sn": 6, "bytes": 65536, "missing": [5], "queued": [],
                            "waiting": [r for r in range(16) if r != 5]}, probs)
        if snap is not None and h is not None:
            check_stuck_lines(snap, job, h, hang_s, {"waiting": {
                "coll": "AllReduce", "kernel_started": True, "channels_started": CHANNELS, "ops_in_flight": 1}},
                probs)
            # last_completed: AllReduce #5 ending on the rank's GPU clock where the truth says;
            # the host: the rank's node's name, as the truth says
            truth = {(o["rank"], o["sn"]): o for o in job.truth_ops()}
            for r, got in hang_common.stuck_hang_lines(snap, h).items():
                t = truth.get((r, 5), {})
                lc = got[0]["hang"].get("last_completed") or {}
                want = {"coll": "AllReduce", "coll_sn": 5, "end_ts_ns": t.get("start_ns", 0) + t.get("exec_ns", 0)}
                if lc != want:
                    probs.append("rank %d: last_completed %r, want %r" % (r, lc, want))
                if got[0]["metadata"].get("hostname") != t.get("host"):
                    probs.append("rank %d: hostname %r, want %r"
                                 % (r, got[0]["metadata"].get("hostname"), t.get("host")))
            # the missing rank's own log is there (its comm_idle line: stuck_seen), with no hang
            # line for AllReduce #6 and none left unresolved (check_stuck_lines)
            mine = [n for n in snap if n.endswith("-pid%d.log" % job.ready_files().get(5, -1))]
            if len(mine) != 1:
                probs.append("the missing rank's logs: %s, want one" % mine)
        return result(name, wd, probs, "15 ranks wrote a hang line for AllReduce #6 while held, rank 5 "
                      "none (comm_idle); copied while the 16 processes ran")


def plugin_p2p_case(a):
    """Section 1: --colls AllReduce --p2p, 16K:64K (16K, 64K), --iters 2: AllReduce idx 0-3, the
    exchange idx 4-7; the middle op 4: exchange #0 (Send sn 0, Recv sn 1), 16 KiB. Ring: r
    Recvs from r-1. Rank 3 missing, 6 queued: ranks 4 and 7 wait in their Recv (their Send
    completed: it is their last completed op); rank 6's Send and Recv are both queued."""
    name = "hang.plugin.p2p"
    hang_s = 1
    args = ["--ranks", "8", "--nodes", "2", "--colls", "AllReduce", "--p2p", "--iters", "2", "--sizes",
            "16K:64K", "--hang-kind", "p2p", "--hang-rank", "3", "--hang-queued-rank", "6"]
    with harness.Workdir(a.keep, "hang") as wd:
        with plugin_job(a, wd, args, hang_s) as job:
            h, snap, probs = copy_while_held(a, job)
            finish(a, job, probs)
        check_hang_line(h, {"kind": "p2p", "func": "Recv", "sn": 1, "bytes": 16384, "missing": [3],
                            "queued": [6], "waiting": [4, 7], "completed": [0, 1, 2, 5]}, probs)
        if snap is not None and h is not None:
            comm = int(h["comm"], 16)
            check_stuck_lines(snap, job, h, hang_s, {
                "waiting": {"p2p": "Recv", "kernel_started": True, "channels_started": 1, "ops_in_flight": 1},
                "queued": {"p2p": "Recv", "kernel_started": False, "channels_started": 0, "ops_in_flight": 2}},
                probs, also=[(comm, "p2p", "Send", 0)])
            for r, got in hang_common.stuck_hang_lines(snap, h).items():
                lc = got[0]["hang"].get("last_completed") or {}
                want = ("AllReduce", 3) if r == 6 else ("Send", 0)
                if (lc.get("coll") or lc.get("p2p"), lc.get("coll_sn", lc.get("p2p_sn"))) != want:
                    probs.append("rank %d: last_completed %r, want %s #%d" % ((r, lc) + want))
        return result(name, wd, probs, "Recv #1 stuck on ranks 4 and 7 (peers 3, 6), rank 6's queued")


def plugin_group_comms_case(a):
    """As hang.group-comms at 16K:64K: idx 5 is AllReduce sn 2 of communicator 1 (64 KiB), in
    one group with idx 3 (comm 1 sn 1) and 4 (comm 0 sn 2); rank 2 missing, rank 6 queued."""
    name = "hang.plugin.group-comms"
    hang_s = 1
    args = ["--ranks", "8", "--comms", "2", "--colls", "AllReduce", "--iters", "2", "--sizes", "16K:64K",
            "--hang-comm", "1", "--hang-group", "3", "--hang-rank", "2", "--hang-queued-rank", "6", "--threads"]
    with harness.Workdir(a.keep, "hang") as wd:
        with plugin_job(a, wd, args, hang_s) as job:
            h, snap, probs = copy_while_held(a, job)
            finish(a, job, probs)
        check_hang_line(h, {"comm_index": 1, "func": "AllReduce", "sn": 2, "bytes": 65536, "group": 3,
                            "missing": [2], "queued": [6], "waiting": [0, 1, 3, 4, 5, 7]}, probs)
        if snap is not None and h is not None:
            lc = {"coll": "AllReduce", "coll_sn": 1}
            check_stuck_lines(snap, job, h, hang_s, {
                "waiting": {"coll": "AllReduce", "kernel_started": True, "channels_started": CHANNELS,
                            "ops_in_flight": 1},
                "queued": {"coll": "AllReduce", "kernel_started": False, "channels_started": 0,
                           "ops_in_flight": 1}}, probs)
            for r, got in hang_common.stuck_hang_lines(snap, h).items():
                got_lc = got[0]["hang"].get("last_completed") or {}
                if {k: got_lc.get(k) for k in lc} != lc:
                    probs.append("rank %d: last_completed %r, want AllReduce #1 (the group's)" % (r, got_lc))
            comm1 = int(h["comm"], 16)
            on_other = [o["header"] for ls in snap.values() for o in hang_common.objects(ls)
                        if "hang" in o and hang_common.op_key(o)[0] != comm1]
            if on_other:
                probs.append("hang lines on the first communicator: %s" % on_other[:3])
        return result(name, wd, probs, "the second communicator's AllReduce #2 stuck in a group of 3")


def plugin_quiet_case(a):
    """Nothing stuck: the same 16 processes held at their end (--hang-hold-s and --hang-ready-dir
    alone). Once every rank said comm_idle (its checks ran past the threshold with nothing in
    flight), no log has a hang line; nor after the exit."""
    name = "hang.plugin.quiet"
    hang_s = 1
    args = ["--ranks", "16", "--nodes", "4", "--colls", "AllReduce,AllGather", "--iters", "3",
            "--sizes", "16K:256K"]
    with harness.Workdir(a.keep, "hang") as wd:
        with plugin_job(a, wd, args, hang_s) as job:
            _, snap, probs = copy_while_held(
                a, job, lambda _h: lambda s: set(range(16)) <= {o["header"].get("rank") for ls in s.values()
                                                               for o in hang_common.objects(ls) if "comm_idle" in o})
            finish(a, job, probs)
        if job.truth_hang() is not None:
            probs.append("the truth file has a hang line: %r" % job.truth_hang())
        if snap is not None:
            said = [n for n, ls in snap.items() for l in ls if '"hang"' in l or '"hang_resolved"' in l]
            if said:
                probs.append("hang lines while held, nothing stuck: %s" % sorted(set(said)))
        after = [n for n, ls in job.logs().items() for l in ls if '"hang"' in l or '"hang_resolved"' in l]
        if after:
            probs.append("hang lines in the logs after the exit: %s" % sorted(set(after)))
        if len(job.logs()) != 16:
            probs.append("%d logs after the exit, want 16" % len(job.logs()))
        return result(name, wd, probs, "16 processes idle past a 1 s threshold, no hang line")


def plugin_small_case(a):
    """Section 1: --sizes 4:64K --factor 16384 (4 B and 64 KiB), --iters 2, --order iters: AllReduce
    4 B (sn 0), 64 KiB (sn 1), 4 B (sn 2), 64 KiB (sn 3); --hang-op 2: AllReduce sn 2, one float.
    Rank 3 missing, the 7 others wait in its kernel. Below DUMP_MIN_SIZE_BYTES (8192, the
    default): it writes no record, but hang detection watches it."""
    name = "hang.plugin.small"
    hang_s = 1
    args = ["--ranks", "8", "--nodes", "2", "--colls", "AllReduce", "--iters", "2", "--sizes", "4:64K",
            "--factor", "16384", "--order", "iters", "--hang-op", "2", "--hang-rank", "3"]
    with harness.Workdir(a.keep, "hang") as wd:
        with plugin_job(a, wd, args, hang_s) as job:
            h, snap, probs = copy_while_held(a, job)
            finish(a, job, probs)
        check_hang_line(h, {"func": "AllReduce", "sn": 2, "bytes": 4, "missing": [3], "queued": [],
                            "waiting": [r for r in range(8) if r != 3]}, probs)
        if snap is not None and h is not None:
            check_stuck_lines(snap, job, h, hang_s, {"waiting": {
                "coll": "AllReduce", "coll_msg_size_bytes": 4, "coll_count": 1, "kernel_started": True,
                "channels_started": CHANNELS, "ops_in_flight": 1}}, probs)
            for r, got in hang_common.stuck_hang_lines(snap, h).items():
                lc = got[0]["hang"].get("last_completed") or {}
                if (lc.get("coll"), lc.get("coll_sn")) != ("AllReduce", 1):
                    probs.append("rank %d: last_completed %r, want AllReduce #1 (64 KiB)" % (r, lc))
        # after the exit: the 64 KiB ops' records only; no small op counted as lost
        recs = stats = 0
        for n, ls in job.logs().items():
            for o in hang_common.objects(ls):
                if "coll_perf" in o:
                    recs += 1
                    if o["coll_perf"].get("coll_msg_size_bytes") != 65536:
                        probs.append("%s: a record of a %r-byte op" % (n, o["coll_perf"].get("coll_msg_size_bytes")))
                st = o.get("dump_stats")
                if st:
                    stats += 1
                    for k in ("coll_dropped_total", "coll_untimed_total"):
                        if st.get(k) != 0:
                            probs.append("%s: dump_stats %s %r, want 0" % (n, k, st.get(k)))
        # 64 KiB AllReduce #1 on every rank, #3 on none (rank 3 never issues #2; the others stop there)
        if recs != 8:
            probs.append("%d records, want 8 (AllReduce #1 on each rank)" % recs)
        if not stats:
            probs.append("no dump_stats line")
        return result(name, wd, probs, "7 ranks wrote a hang line for the 4-byte AllReduce #2, no record of it")


def usage_case(a):
    name = "hang.usage"
    base = [a.replay, "--plugin", a.plugin, "--synthetic", "--ranks", "16", "--nodes", "4", "--sizes", "1K:4K",
            "--iters", "2"]
    h = ["--hang-rank", "1"]
    needs = "needs --hang-rank"
    bad = [  # the options, and what the message's first line says
        (["--hang-op", "3"], "--hang-op " + needs),
        (["--hang-group", "2"], "--hang-group " + needs),
        (["--hang-hold-s", "1", "--repeat", "2"], "--hang-hold-s holds the job once: it takes no --repeat"),
        (["--hang-ready-dir", "r", "--procs", "--max-procs", "15"], "bad value for --max-procs: '15'"),
        (["--hang-rank", "16"], "bad value for --hang-rank: '16' (ranks are 0..15)"),
        (["--ranks", "1", "--nodes", "1", "--hang-rank", "0"], "--hang-rank needs --ranks 2 or more"),
        (h + ["--hang-queued-rank", "1"], "bad value for --hang-queued-rank: '1' (the --hang-rank"),
        (h + ["--hang-queued-rank", "16"], "bad value for --hang-queued-rank: '16' (ranks are 0..15)"),
        (h + ["--hang-kind", "p2p"], "--hang-kind p2p needs --p2p"),
        (h + ["--hang-kind", "all"], "bad value for --hang-kind: 'all'"),
        (h + ["--hang-comm", "1"], "bad value for --hang-comm: '1' (communicators are 0..0)"),
        (h + ["--p2p", "--p2p-comm", "--hang-kind", "p2p", "--hang-comm", "0"],
         "bad value for --hang-comm: '0' (no exchange runs on communicator 0)"),
        # 4 collectives x 2 sizes x 2 iterations: 16 ops
        (h + ["--hang-op", "16"], "bad value for --hang-op: '16' (the run has 16 ops: 0..15)"),
        # AllReduce at 0..3, the exchange at 4..7
        (h + ["--colls", "AllReduce", "--p2p", "--hang-op", "5"],
         "bad value for --hang-op: '5' (no collective at running index 5 or later; the last is at 3)"),
        (h + ["--colls", "AllReduce", "--p2p"],                # the same, from the middle op (4) on
         "--hang-rank: no collective from the middle op on (running index 4; the last is at 3): give --hang-op"),
        (h + ["--hang-op", "1", "--hang-group", "3"],
         "bad value for --hang-group: '3' (the stuck op, running index 1, has 1 ops before it)"),
        (h + ["--hang-group", "65"], "bad value for --hang-group: '65'"),
        (h + ["--hang-hold-s", "-1"], "bad value for --hang-hold-s: '-1'"),
        (h + ["--hang-ready-dir="], "bad value for --hang-ready-dir: ''"),
        (h + ["--repeat", "2"], "--hang-rank stops the job once: it takes no --repeat"),
        (h + ["--procs", "--max-procs", "8"], "bad value for --max-procs: '8'"),
    ]
    probs = []
    with harness.Workdir(a.keep, "hang") as wd:
        for extra, msg in bad:
            r = harness.run(base + extra, harness.make_env({}), wd.cwd, a.timeout)
            first = r.stderr.splitlines()[0] if r.stderr else ""
            if r.rc != 2 or not first.startswith("inspector-replay: " + msg) or \
                    "usage: inspector-replay" not in r.stderr:
                probs.append("%s: rc %s, first line %r (exit 2 and %r expected)"
                             % (" ".join(extra), r.rc, first, msg))
        r = harness.run([a.replay, "--plugin", a.plugin, "--synthetic", "--ranks", "2"] + h +
                        ["--hang-ready-dir", os.path.join(wd.path, "none")], harness.make_env({}), wd.cwd,
                        a.timeout)
        if r.rc != 1 or "--hang-ready-dir" not in r.stderr:
            probs.append("a missing ready dir: rc %s (want 1), stderr %r" % (r.rc, r.stderr[-300:]))
        return result(name, wd, probs, "%d usage errors exit 2 naming their option; a missing ready dir "
                      "exits 1" % len(bad))


def cases():
    c = harness.Case
    return [c("hang.coll", coll_case, labels=["synthetic", "hang"], timeout=90),
            c("hang.p2p", p2p_case, labels=["synthetic", "hang"], timeout=90),
            c("hang.group-comms", group_comms_case, labels=["synthetic", "hang", "threads"], timeout=90),
            c("hang.inproc", inproc_case, labels=["synthetic", "hang"], timeout=90),
            c("hang.records", records_case, labels=["synthetic", "hang"], timeout=90),
            c("hang.usage", usage_case, labels=["synthetic", "hang", "cli"], timeout=90),
            c("hang.plugin.coll", plugin_coll_case, labels=["synthetic", "hang"], timeout=120),
            c("hang.plugin.p2p", plugin_p2p_case, labels=["synthetic", "hang"], timeout=90),
            c("hang.plugin.group-comms", plugin_group_comms_case, labels=["synthetic", "hang", "threads"],
              timeout=90),
            c("hang.plugin.quiet", plugin_quiet_case, labels=["synthetic", "hang"], timeout=120),
            c("hang.plugin.small", plugin_small_case, labels=["synthetic", "hang"], timeout=90)]


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))
