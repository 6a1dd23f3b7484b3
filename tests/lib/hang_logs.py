# SPDX-License-Identifier: Apache-2.0
"""Logs of a stuck job, written here line by line as the plugin writes them, and what
inspector-report must say of them (tests/test_report_hangs.py).

The lines (docs/CONTRACTS.md section 2): records (coll_perf, p2p_perf) and dump_stats in
dumps every 100 ms, and the lines of issue 33's contract: `hang` (an op in flight past
HANG_SECONDS, repeated every HANG_SECONDS while stuck), `hang_resolved` (it completed after
all) and `comm_idle` (a communicator with nothing in flight and nothing completed for
HANG_SECONDS), each with the usual header and metadata, keys in the plugin's order, numbers
as it writes them (seconds with 6 decimals). Writing them here, not through the plugin and
inspector-replay, keeps each case under a second and lets it plant what a real job rarely
shows on cue (a dead rank, a queued one, unknown ranks, a resolved hang).

A job (Job): ranks on nodes, one process each (pid 1000 + rank, host node-NNN), running the
steps of each communicator in turn (a step: ops issued together, one application group; 20
ms apart, each 2 ms long); one hang planted on one step of one communicator (Hang): some
ranks never issue it (missing: alive, writing comm_idle lines, or dead, their log ends
before the others issue it), some issue it but their kernel never starts (queued), the
others wait inside its kernel; ranks whose logs are not written at all (unknown); and
optionally the hang resolved later (the missing ranks issue it late, everyone completes it).
Job.truth() is what was planted; expected() computes what the report must answer from the
lines alone, by the rules of docs/report.md ("Hangs"), independently of the report.
"""
import collections
import json
import os

T0_US = 1_748_030_000_000_000   # the job's first op, wall clock us
STEP_US = 20_000                # between steps
EXEC_US = 2_000                 # each op's run
DUMP_US = 100_000               # records are dumped at each multiple of this
CHECK_US = 100_000              # the dump thread first sees an op in flight this after its issue
GIT_REV = "hangtest0"


def enc(v):
    """Compact JSON as the plugin writes it: keys in order, floats with 6 decimals."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, float):
        return "%.6f" % v
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, dict):
        return "{" + ",".join(json.dumps(k) + ":" + enc(x) for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(enc(x) for x in v) + "]"
    raise TypeError(type(v))


class Op:
    """One op of a step: a collective, or a P2P op whose peer is peer(rank, n_ranks); func may be
    a function of the rank (a Send on some ranks, a Recv on others)."""

    def __init__(self, func, nbytes=1 << 20, peer=None):
        self.func_of = func if callable(func) else (lambda r, f=func: f)
        self.bytes, self.peer = nbytes, peer
        self.p2p = peer is not None


def pairs():
    """A P2P step in pairs: each even rank Sends to the next rank, which Recvs from it."""
    return Op(lambda r: "Send" if r % 2 == 0 else "Recv", peer=lambda r, n: r ^ 1)


class Comm:
    def __init__(self, cid, name, steps):
        self.id, self.name, self.steps = cid, name, steps


class Hang:
    """The planted hang: step `step` of communicator `comm`. Collectives: the op at index
    `stuck` of that step hangs (the others of the group complete); `missing` ranks never issue
    the step, `queued` ones issue it but their kernel never starts. P2P: every op towards a
    missing rank hangs; `both_sides` ranks issue their side and it hangs (its peer's too)."""

    def __init__(self, comm=0, step=5, stuck=0, missing=None, queued=(), resolve_after_s=None,
                 both_sides=()):
        self.comm, self.step, self.stuck = comm, step, stuck
        self.missing = dict(missing or {})   # rank -> "alive" | "dead"
        self.queued = set(queued)
        self.resolve_after_s = resolve_after_s  # None: still stuck when the logs are copied
        self.both_sides = set(both_sides)


class Job:
    def __init__(self, ranks=16, per_node=4, comms=(), hang=None, unknown=(), hang_s=2.0, copy_after_s=9.0):
        self.n, self.per_node = ranks, per_node
        self.comms = list(comms)
        self.hang = hang
        self.unknown = set(unknown)
        self.hang_s = hang_s
        self.copy_after_s = copy_after_s
        self.lines = collections.defaultdict(list)  # rank -> [(dump_us, order, text)]
        self._order = 0
        self._build()

    # ---- places and lines ----
    def host(self, r):
        return "node-%03d" % (r // self.per_node)

    def pid(self, r):
        return 1000 + r

    def gpu_ns(self, r, wall_us):
        return wall_us * 1000 + (r // self.per_node) * 777  # each node's GPU clock a little off

    def _put(self, r, dump_us, comm, body_key, body):
        if r in self.unknown:
            return
        if self.hang and r in self.hang.missing and self.hang.missing[r] == "dead" and dump_us > self.death_us:
            return
        hdr = {"id": "0x%x" % comm.id, "comm_name": comm.name, "rank": r, "n_ranks": self.n,
               "nnodes": (self.n + self.per_node - 1) // self.per_node}
        meta = {"inspector_output_format_version": "v4.0", "git_rev": GIT_REV,
                "rec_mechanism": "nccl_profiler_interface", "dump_timestamp_us": dump_us,
                "hostname": self.host(r), "pid": self.pid(r)}
        text = enc({"header": hdr, "metadata": meta, body_key: body})
        self._order += 1
        self.lines[r].append((dump_us, self._order, text))

    def record(self, r, comm, op, func, sn, peer, start_us, dump_us):
        k = "p2p" if op.p2p else "coll"
        exec_ns = EXEC_US * 1000
        bw = op.bytes / exec_ns
        body = {k: func, k + "_sn": sn}
        if op.p2p:
            body["p2p_peer"] = peer
        body.update({k + "_msg_size_bytes": op.bytes, k + "_exec_time_us": EXEC_US,
                     k + "_timing_source": "kernel_gpu", k + "_algobw_gbs": bw, k + "_busbw_gbs": bw,
                     k + "_exec_time_ns": exec_ns, k + "_start_ts_ns": self.gpu_ns(r, start_us),
                     k + "_datatype": "ncclFloat32", k + "_count": op.bytes // 4, k + "_nchannels": 2,
                     k + "_stale_channels": 0})
        if not op.p2p:
            body.update({"coll_algo": "RING", "coll_proto": "SIMPLE"})
        self._put(r, dump_us, comm, k + "_perf", body)

    # ---- the job ----
    def _build(self):
        h = self.hang
        t = T0_US
        self.death_us = self.began_us = 1 << 62
        self.step_start = {}
        self.last_before = {}  # (rank, comm index) -> its newest op completed before the stuck step
        for ci, comm in enumerate(self.comms):
            for s in range(len(comm.steps)):
                if h and ci == h.comm and s == h.step:
                    t += 300_000  # the stuck step comes after a pause: a dead rank's last dump is before it
                self.step_start[(ci, s)] = t
                t += STEP_US
        self.copy_us = self.step_start[(h.comm, h.step)] + int(self.copy_after_s * 1e6) if h else t + 1_000_000
        if h:
            self.began_us = self.step_start[(h.comm, h.step)] + CHECK_US
            self.death_us = self.began_us - 150_000  # a dead rank: its log stops before the others issue it
        self.resolve_us = self.began_us + int(h.resolve_after_s * 1e6) if h and h.resolve_after_s else None
        self.stuck = {}   # (rank, comm, kind, func, sn) -> {"peer", "bytes", "queued", "own": bool}
        for r in range(self.n):
            self._run_rank(r)
        for r in self.lines:
            self.lines[r].sort()

    def _run_rank(self, r):
        h = self.hang
        last = {}        # comm index -> (func, p2p, sn, end_us, rank): its newest completed op
        pending = collections.defaultdict(list)  # dump_us -> [(comm, op, func, sn, peer, start)]
        totals = collections.defaultdict(lambda: [0, 0])
        in_flight = {}   # comm index -> [(op, func, sn, peer, start)]: stuck
        for ci, comm in enumerate(self.comms):
            coll_sn = collections.Counter()
            p2p_sn = 0
            for s, step in enumerate(comm.steps):
                start = self.step_start[(ci, s)]
                hang_step = h and ci == h.comm and s == h.step
                after = h and (ci > h.comm or (ci == h.comm and s > h.step))
                if after and not self.resolve_us:
                    break  # nothing after the stuck step
                if after:
                    start = self.resolve_us + 10_000 + (ci - h.comm + s - h.step) * STEP_US
                late = hang_step and r in h.missing  # issues the step only when it resolves
                if late and not self.resolve_us:
                    break
                for k, op in enumerate(step):
                    func = op.func_of(r)
                    if op.p2p:
                        sn, peer = p2p_sn, op.peer(r, self.n)
                        p2p_sn += 1
                    else:
                        sn, peer = coll_sn[func], None
                        coll_sn[func] += 1
                    stuck_here = False
                    if hang_step and not late:
                        if op.p2p:
                            stuck_here = peer in h.missing or peer in h.both_sides or r in h.both_sides
                        else:
                            stuck_here = k == h.stuck
                    st = start
                    if stuck_here:
                        self.stuck[(r, ci, "p2p" if op.p2p else "coll", func, sn)] = {
                            "peer": peer, "queued": r in h.queued}
                        in_flight.setdefault(ci, []).append((op, func, sn, peer, start))
                        if not self.resolve_us:
                            continue
                        st = self.resolve_us - EXEC_US
                    elif late:
                        st = self.resolve_us - EXEC_US
                    end = st + EXEC_US
                    pending[(end // DUMP_US + 1) * DUMP_US].append((comm, op, func, sn, peer, st))
                    prev = last.get(ci)
                    if not prev or end >= prev[3]:
                        last[ci] = (func, op.p2p, sn, end, r)
                    prev = self.last_before.get((r, ci))
                    if end < self.began_us and (not prev or end >= prev[3]):
                        self.last_before[(r, ci)] = (func, op.p2p, sn, end, r)
        # dumps: records, then one dump_stats per communicator that wrote
        for dump in sorted(pending):
            wrote = collections.OrderedDict()
            for comm, op, func, sn, peer, st in pending[dump]:
                self.record(r, comm, op, func, sn, peer, st, dump)
                totals[comm.id][1 if op.p2p else 0] += 1
                wrote[comm.id] = comm
            for cid, comm in wrote.items():
                c, p = totals[cid]
                self._put(r, dump, comm, "dump_stats", {
                    "coll_records_total": c, "coll_records_since_last_dump": c, "coll_dropped_total": 0,
                    "coll_dropped_since_last_dump": 0, "p2p_records_total": p, "p2p_records_since_last_dump": p,
                    "p2p_dropped_total": 0, "p2p_dropped_since_last_dump": 0})
        if not h:
            return
        # hang lines while stuck (every HANG_SECONDS), hang_resolved when it completes
        for ci, ops in in_flight.items():
            comm = self.comms[ci]
            before = self.last_before.get((r, ci))
            for op, func, sn, peer, start in ops:
                first_seen = start + CHECK_US
                kind = "p2p" if op.p2p else "coll"
                queued = r in h.queued
                k = 0
                while True:
                    at = first_seen + int((k + 1) * self.hang_s * 1e6) + 20_000
                    if at > self.copy_us or (self.resolve_us and at >= self.resolve_us):
                        break
                    body = {kind: func, kind + "_sn": sn}
                    if op.p2p:
                        body["p2p_peer"] = peer
                    body.update({kind + "_msg_size_bytes": op.bytes, kind + "_count": op.bytes // 4,
                                 kind + "_datatype": "ncclFloat32", "in_flight_s": (at - first_seen) / 1e6,
                                 "first_seen_us": first_seen, "kernel_started": not queued,
                                 "channels_started": 0 if queued else 8, "channels_stopped": 0,
                                 "ops_in_flight": len(ops), "repeat": k, "last_completed": self._last_obj(before)})
                    self._put(r, at, comm, "hang", body)
                    k += 1
                if self.resolve_us and k:
                    self._put(r, self.resolve_us + 30_000, comm, "hang_resolved",
                              {kind: func, kind + "_sn": sn, "in_flight_s": (self.resolve_us - first_seen) / 1e6})
        # comm_idle: a communicator with nothing in flight and nothing completed for HANG_SECONDS
        for ci in range(len(self.comms)):
            lc = self.last_before.get((r, ci)) if self.resolve_us else last.get(ci)
            if not lc or (ci in in_flight and not self.resolve_us):
                continue
            if self.resolve_us and ci in in_flight:
                continue
            end, k = lc[3], 0
            while True:
                at = end + int((k + 1) * self.hang_s * 1e6) + 50_000
                if at > self.copy_us or (self.resolve_us and at >= self.resolve_us):
                    break
                self._put(r, at, self.comms[ci], "comm_idle",
                          {"idle_s": (at - end) / 1e6, "last_completed": self._last_obj(lc)})
                k += 1

    def _last_obj(self, lc):
        if not lc:
            return None
        func, p2p, sn, end, r = lc
        k = "p2p" if p2p else "coll"
        return {k: func, k + "_sn": sn, "end_ts_ns": self.gpu_ns(r, end)}

    # ---- output ----
    def write(self, d, earlier_s=0.0):
        """One log per process, as copied when the job had run to copy_after_s (less earlier_s:
        an earlier copy); returns the paths."""
        os.makedirs(d, exist_ok=True)
        paths = []
        until = self.copy_us - int(earlier_s * 1e6)
        for r in sorted(self.lines):
            p = os.path.join(d, "%s-pid%d.log" % (self.host(r), self.pid(r)))
            with open(p, "w") as f:
                for dump_us, _, text in self.lines[r]:
                    if dump_us <= until:
                        f.write(text + "\n")
            paths.append(p)
        return paths

    def truth(self):
        """What was planted, per stuck op: {(comm id, kind, func, sn): {state: [ranks]}}."""
        h = self.hang
        out = {}
        ops = collections.defaultdict(dict)
        for (r, ci, kind, func, sn), info in self.stuck.items():
            ops[(self.comms[ci].id, kind, func, sn)][r] = info
        for key, ranks in ops.items():
            t = {"waiting": [], "queued": [], "missing": [], "unknown": [], "completed": []}
            if self.resolve_us:  # everyone completed it in the end (the missing ranks issued it late)
                members = range(self.n) if key[1] == "coll" else set(ranks) | {i["peer"] for i in ranks.values()}
                t["completed"] = sorted(r for r in members if r not in self.unknown)
                out[key] = t
                continue
            for r, info in ranks.items():
                if r in self.unknown:
                    continue
                t["queued" if info["queued"] else "waiting"].append(r)
            if key[1] == "coll":
                t["missing"] = sorted(r for r in h.missing if r not in self.unknown)
                t["unknown"] = sorted(self.unknown)
            else:
                peers = {info["peer"] for r, info in ranks.items() if r not in self.unknown and not info["queued"]}
                for p in sorted(peers - set(ranks) - self.unknown):
                    # a peer that issued its side of the transfer (stuck too) waits in it; else it is missing
                    own = [i for (q, ci, kind, f, sn), i in self.stuck.items()
                           if q == p and (self.comms[ci].id, kind) == key[:2] and f != key[2] and i["peer"] in ranks
                           and ranks[i["peer"]]["peer"] == p]
                    if own:
                        t["queued" if own[0]["queued"] else "waiting"].append(p)
                    elif p in h.missing:
                        t["missing"].append(p)
                t["unknown"] = sorted(p for p in (peers | set(ranks)) if p in self.unknown)
            for k in t:
                t[k] = sorted(t[k])
            out[key] = t
        return out


# ---------------------------------------------------------------------------- the oracle

def read_lines(d):
    out = []
    for name in sorted(os.listdir(d)):
        with open(os.path.join(d, name)) as f:
            for line in f:
                out.append(json.loads(line))
    return out


def _kind(o):
    return "p2p" if "p2p" in o else "coll"


def expected(d):
    """What the report must answer from the logs in d, by docs/report.md's rules:
    {(comm id, kind, func, sn): {"resolved", "stuck_s", "began_us", "states": {state: [ranks]},
    "ranks": {rank: {...}}}}; and "now" (the newest line's dump_timestamp_us)."""
    lines = read_lines(d)
    now = max(o["metadata"]["dump_timestamp_us"] for o in lines)
    nranks = {}
    place = {}                       # (comm, rank) -> (host, pid), the smallest
    last_us = collections.Counter()  # (comm, rank) -> newest line
    proc_us = collections.Counter()  # (host, pid) -> newest line
    done = collections.defaultdict(lambda: -1)  # (comm, rank, kind, func) -> highest sn completed
    last = {}                        # (comm, rank) -> (line_us, end_ns, sn, p2p, func, idle_s)
    last_timed = {}                  # the same among the reports that date the op (idle_s >= -1)
    rows = collections.defaultdict(dict)  # (comm, kind, func, sn) -> rank -> row

    def completed(comm, rank, kind, func, sn, end, line_us, idle):
        done[(comm, rank, kind, func)] = max(done[(comm, rank, kind, func)], sn)
        cand = (line_us, end, sn, kind == "p2p", func, idle)
        if (comm, rank) not in last or cand > last[(comm, rank)]:
            last[(comm, rank)] = cand
        if idle >= -1 and ((comm, rank) not in last_timed or cand > last_timed[(comm, rank)]):
            last_timed[(comm, rank)] = cand

    for o in lines:
        hd, md = o["header"], o["metadata"]
        comm, rank, t = int(hd["id"], 16), hd["rank"], md["dump_timestamp_us"]
        nranks[comm] = max(nranks.get(comm, 0), hd["n_ranks"])
        p = (md["hostname"], md["pid"])
        place[(comm, rank)] = min(place.get((comm, rank), p), p)
        last_us[(comm, rank)] = max(last_us[(comm, rank)], t)
        proc_us[p] = max(proc_us[p], t)
        for k in ("coll_perf", "p2p_perf"):
            if k in o:
                x, kind = o[k], k[:-5]
                completed(comm, rank, kind, x[kind], x[kind + "_sn"],
                          x[kind + "_start_ts_ns"] + x[kind + "_exec_time_ns"], t, -1)
        for k in ("hang", "comm_idle"):
            if k in o and o[k].get("last_completed"):
                lc = o[k]["last_completed"]
                kind = _kind(lc)
                completed(comm, rank, kind, lc[kind], lc[kind + "_sn"], lc.get("end_ts_ns", 0), t,
                          o[k]["idle_s"] if k == "comm_idle" else -2)
        for k in ("hang", "hang_resolved"):
            if k not in o:
                continue
            x = o[k]
            kind = _kind(x)
            key = (comm, kind, x[kind], x[kind + "_sn"])
            row = rows[key].setdefault(rank, {"lines": 0, "resolved": False, "in_flight_s": -1.0, "first_seen": 0,
                                              "state": None, "peer": x.get("p2p_peer", -1), "resolved_s": -1.0})
            if k == "hang_resolved":
                row["resolved"] = True
                row["resolved_s"] = max(row["resolved_s"], x.get("in_flight_s", -1.0))
                done[(comm, rank, kind, x[kind])] = max(done[(comm, rank, kind, x[kind])], x[kind + "_sn"])
                continue
            row["lines"] += 1
            row["in_flight_s"] = max(row["in_flight_s"], x["in_flight_s"])
            fs = x.get("first_seen_us", 0)
            if fs and (not row["first_seen"] or fs < row["first_seen"]):
                row["first_seen"] = fs
            st = (t, x.get("repeat", -1), x["kernel_started"])
            if row["state"] is None or st > row["state"]:
                row["state"] = st

    def row_done(comm, rank, key, row):
        return row["resolved"] or done[(comm, rank, key[1], key[2])] >= key[3]

    stuck_rows = collections.defaultdict(list)  # (comm, rank) -> [key] still stuck
    for key, rr in rows.items():
        for rank, row in rr.items():
            if not row_done(key[0], rank, key, row):
                stuck_rows[(key[0], rank)].append(key)

    def facts(comm, rank, began):
        host, pid = place[(comm, rank)]
        f = {"host": host, "pid": pid}
        lo = last.get((comm, rank))
        if lo:
            line_us, end, sn, p2p, func, idle = lo
            k = "p2p" if p2p else "coll"
            lt = last_timed.get((comm, rank))
            if idle == -2 and lt and lt[2:5] == (sn, p2p, func):  # an older report of the same op dates it
                line_us, idle = lt[0], lt[5]
                end = end or lt[1]
            f["last_op"] = {k: func, k + "_sn": sn, "end_ts_ns": end}
            f["last_op_age_s"] = (now - line_us) / 1e6 + (idle if idle >= 0 else 0) if idle >= -1 else None
            f["last_op_age_exact"] = idle >= 0
        else:
            f["last_op"] = None
        lu = max(last_us[(comm, rank)], proc_us[(host, pid)])
        f["last_line_age_s"] = (now - lu) / 1e6
        f["alive"] = lu > began if began else None
        return f

    out = {}
    for key in sorted(rows, key=lambda k: (k[0], k[1] == "p2p", k[2], k[3])):
        comm, kind, func, sn = key
        rr = rows[key]
        resolved = all(row_done(comm, r, key, row) for r, row in rr.items())
        stuck_s = max([row["in_flight_s"] for row in rr.values()] +
                      [row["resolved_s"] for row in rr.values() if resolved] + [0.0])
        began = min((row["first_seen"] for r, row in rr.items() if row["lines"] and row["first_seen"] and
                     (resolved or not row_done(comm, r, key, row))), default=0)
        states = {"waiting": [], "queued": [], "missing": [], "completed": [], "unknown": []}
        ranks = {}
        if kind == "coll":
            members = range(nranks[comm])
        else:
            members = set(rr)
            for r, row in rr.items():
                if row["peer"] >= 0 and not row_done(comm, r, key, row) and row["state"][2]:  # waiting
                    members.add(row["peer"])
            members = sorted(members)
        for r in members:
            if (comm, r) not in place:
                states["unknown"].append(r)
                continue
            info = facts(comm, r, began)
            if r in rr:
                row = rr[r]
                if row_done(comm, r, key, row):
                    st = "completed"
                else:
                    st = "waiting" if row["state"][2] else "queued"
                    info["in_flight_s"] = row["in_flight_s"]
            elif kind == "coll" and done[(comm, r, kind, func)] >= sn:
                st = "completed"
            else:
                st = "missing"
                if kind == "p2p":  # its own side of the transfer, stuck towards a rank of this op
                    for k2 in stuck_rows.get((comm, r), []):
                        row2 = rows[k2][r]
                        if k2[1] == "p2p" and k2[2] != func and any(
                                rank2 == row2["peer"] and rr[rank2]["peer"] == r for rank2 in rr):
                            st = "waiting" if row2["state"][2] else "queued"
                            break
                if st == "missing":
                    others = [k2 for k2 in stuck_rows.get((comm, r), []) if k2 != key]
                    info["stuck_in"] = others[0] if others else None
            info["state"] = st
            states[st].append(r)
            ranks[r] = info
        out[key] = {"resolved": resolved, "stuck_s": stuck_s, "began_us": began, "states": states, "ranks": ranks}
    return out, now
