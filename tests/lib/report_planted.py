# SPDX-License-Identifier: Apache-2.0
"""Planted jobs laid out like LLM training, written here in the plugin's format (docs/CONTRACTS.md
section 2), for inspector-report's tests; what was planted is returned beside the logs, so that
a test compares the report with it and never with the report's own figures.

A job: `nodes` hosts of `gpn` ranks (one process each, host node-NNN, pid 1000 + rank); every
host's GPU clock has its own offset (within +-5 ms) and rate (within +-drift_ppm), and may be
stepped (an NTP step: +-step_ns from `step_at` of the job on, on one host). Communicators:
  world   every rank: one AllReduce per iteration (unless world=False)
  tp      the gpn ranks of each host (id 0x2000 + host): `tp_ops` AllReduce per iteration
  pp      pairs (rank r of host 2k, rank r of host 2k + 1), 2-rank communicators (id 0x3000 +
          the lower rank): a Send/Recv per iteration (the lower rank sends), and with
          `pp_colls` an AllReduce of the pair too
  dp      with `dp`: rank i of every host (id 0x5000 + i), an AllReduce per iteration
  a2a     with `a2a`: every rank Sends to the same local rank of every other host (all-pairs,
          one communicator of gpn x nodes ranks, id 0x4000), one round per iteration
Times: iteration i starts at i x gap_ns (true time); in each op every rank arrives within
U[0, 3 us] (+ its planted lateness), and every rank's kernel ends `dur_ns` after the last
arrival (a transfer: after both ends arrived, its duration x `slow` on a slow direction).
A late rank arrives late_us later in its world and tp ops (a compute straggler: every
collective it is in). A missing log: that rank's file is not written.
"""
import json
import math
import os
import random

BASE = 1_700_000_000_000_000_000


def host(n):
    return "node-%03d" % n


class Job:
    def __init__(self, seed, nodes=4, gpn=8, iters=120, gap_ns=50_000_000, tp_ops=4, drift_ppm=0.0,
                 step=None, late=None, late_us=150.0, pp_colls=False, a2a=False, slow_dir=None, slow=4.0,
                 missing=None, dur_ns=400_000, groups=1, dp=False, world=True, jitter=0.0, change=None):
        """step: (host, signed ns, fraction of the job); late: a world rank; slow_dir: (from host,
        to host) whose transfers take `slow` x as long (or a list of such pairs); missing: a world rank whose log is not
        written; groups: message sizes per communicator (many groups: a clean job with many);
        jitter: each op's transfer time x exp(N(0, jitter)) (noise, as real jobs have); change:
        (communicator name, factor, fraction of the job): that communicator's transfers take
        `factor` x as long from that point of the job on (a bandwidth change)."""
        self.rnd = random.Random(seed)
        rnd = self.rnd
        self.nodes, self.gpn, self.iters, self.gap = nodes, gpn, iters, gap_ns
        self.n = nodes * gpn
        self.clocks = [(rnd.uniform(-5e6, 5e6), rnd.uniform(-drift_ppm, drift_ppm)) for _ in range(nodes)]
        self.step = step
        self.step_t = None if step is None else int(step[2] * iters * gap_ns)
        self.late, self.late_ns = late, late_us * 1000.0
        self.tp_ops, self.pp_colls, self.a2a = tp_ops, pp_colls, a2a
        self.slow_dir, self.slow = slow_dir, slow
        # one (from, to) or a list of them
        self.slow_dirs = set() if slow_dir is None else {tuple(slow_dir)} if isinstance(slow_dir[0], int) \
            else {tuple(x) for x in slow_dir}
        self.missing = missing
        self.dur = dur_ns
        self.groups = groups
        self.dp, self.world = dp, world
        self.jitter, self.change = jitter, change
        self.lines = {r: [] for r in range(self.n)}
        self.p2p_sn = {}
        self.waits = []  # (world rank, kernel ns) of the ops the late rank's peers waited in
        self._build()

    def node(self, r):
        return r // self.gpn

    def local(self, nd, t):
        off, ppm = self.clocks[nd]
        jump = self.step[1] if self.step is not None and nd == self.step[0] and t >= self.step_t else 0
        return BASE + int(round(t * (1 + ppm * 1e-6) + off + jump))

    def _line(self, r, comm, name, members, crank, t, kind, rec):
        self.lines[r].append({
            "header": {"id": "0x%x" % comm, "comm_name": name, "rank": crank, "n_ranks": len(members),
                       "nnodes": len({self.node(m) for m in members})},
            "metadata": {"inspector_output_format_version": "v4.0", "git_rev": "x",
                         "rec_mechanism": "nccl_profiler_interface", "dump_timestamp_us": (BASE + t) // 1000,
                         "hostname": host(self.node(r)), "pid": 1000 + r},
            kind + "_perf": rec})

    def _dur(self, name, t0):
        """One op's transfer time: dur_ns, x the planted change from its point on, x the jitter."""
        d = float(self.dur)
        if self.change is not None and name == self.change[0] and t0 >= self.change[2] * self.iters * self.gap:
            d *= self.change[1]
        if self.jitter:
            d *= math.exp(self.rnd.gauss(0, self.jitter))
        return int(d)

    def _coll(self, comm, name, members, sn, t0, nbytes, late_ok=True):
        arrive = [t0 + self.rnd.randrange(3000) + (self.late_ns if late_ok and r == self.late else 0)
                  for r in members]
        stop = max(arrive) + self._dur(name, t0)
        n = len(members)
        for k, r in enumerate(members):
            nd = self.node(r)
            s, e = self.local(nd, arrive[k]), self.local(nd, stop)
            ex = max(e - s, 1)
            alg = nbytes / ex
            self._line(r, comm, name, members, k, int(arrive[k]), "coll", {
                "coll": "AllReduce", "coll_sn": sn, "coll_msg_size_bytes": nbytes, "coll_exec_time_us": ex // 1000,
                "coll_timing_source": "kernel_gpu", "coll_algobw_gbs": round(alg, 4),
                "coll_busbw_gbs": round(alg * 2 * (n - 1) / n, 4), "coll_exec_time_ns": ex, "coll_start_ts_ns": s,
                "coll_datatype": "ncclFloat32", "coll_count": nbytes // 4, "coll_nchannels": 8,
                "coll_stale_channels": 0, "coll_algo": "RING", "coll_proto": "SIMPLE"})
        if self.late in members and late_ok:
            self.waits += [(r, stop - arrive[k]) for k, r in enumerate(members) if r != self.late]

    def _xfer(self, comm, name, members, a, b, t0, nbytes):
        """members[a] sends to members[b]: both records end together. p2p_sn counts each rank's
        P2P on the communicator, as the plugin does."""
        ra, rb = members[a], members[b]
        ta, tb = t0 + self.rnd.randrange(3000), t0 + self.rnd.randrange(3000)
        d = self._dur(name, t0)
        if (self.node(ra), self.node(rb)) in self.slow_dirs:
            d = int(d * self.slow)
        stop = max(ta, tb) + d
        for r, k, peer, tt, op in ((ra, a, b, ta, "Send"), (rb, b, a, tb, "Recv")):
            nd = self.node(r)
            s, e = self.local(nd, tt), self.local(nd, stop)
            ex = max(e - s, 1)
            bw = nbytes / ex
            sn = self.p2p_sn.get((comm, r), 0)
            self.p2p_sn[(comm, r)] = sn + 1
            self._line(r, comm, name, members, k, int(tt), "p2p", {
                "p2p": op, "p2p_sn": sn, "p2p_peer": peer, "p2p_msg_size_bytes": nbytes,
                "p2p_exec_time_us": ex // 1000, "p2p_timing_source": "kernel_gpu", "p2p_algobw_gbs": round(bw, 4),
                "p2p_busbw_gbs": round(bw, 4), "p2p_exec_time_ns": ex, "p2p_start_ts_ns": s,
                "p2p_datatype": "ncclInt8", "p2p_count": nbytes, "p2p_nchannels": 2, "p2p_stale_channels": 0})

    def _build(self):
        world = list(range(self.n))
        tps = [[h * self.gpn + i for i in range(self.gpn)] for h in range(self.nodes)]
        pairs = [[2 * k * self.gpn + i, (2 * k + 1) * self.gpn + i]
                 for k in range(self.nodes // 2) for i in range(self.gpn)]
        sizes = [1 << (20 + g) for g in range(self.groups)]
        sn = {}
        step = self.gap // (2 + self.tp_ops + 2 * self.pp_colls + 2)

        def next_sn(key):
            sn[key] = sn.get(key, -1) + 1
            return sn[key]
        for it in range(self.iters):
            t = it * self.gap
            for g, nb in enumerate(sizes):
                for h, m in enumerate(tps):
                    for k in range(self.tp_ops):
                        self._coll(0x2000 + h, "tp", m, next_sn(("tp", h)), t + (k * len(sizes) + g) * step, nb)
            t += self.tp_ops * len(sizes) * step
            for nb in sizes:
                if self.world:
                    self._coll(0x1000, "world", world, next_sn("world"), t, nb)
                if self.dp:
                    for i in range(self.gpn):
                        m = [h * self.gpn + i for h in range(self.nodes)]
                        self._coll(0x5000 + i, "dp", m, next_sn(("dp", i)), t + step // 2, nb)
                t += step
            for m in pairs:
                self._xfer(0x3000 + m[0], "pp", m, 0, 1, t, 1 << 22)
                if self.pp_colls:
                    self._coll(0x3000 + m[0], "pp", m, next_sn(("ppc", m[0])), t + step, 1 << 20, late_ok=False)
            t += step * (1 + 2 * self.pp_colls)
            if self.a2a:
                for r in world:
                    for h in range(self.nodes):
                        if h != self.node(r):
                            peer = h * self.gpn + r % self.gpn
                            self._xfer(0x4000, "a2a", world, r, peer, t, 1 << 22)

    def write(self, d):
        """One file per process that has lines, the missing rank's left out; returns the paths."""
        paths = []
        for r, ls in sorted(self.lines.items()):
            if r == self.missing or not ls:
                continue
            p = os.path.join(d, "%s-pid%d.log" % (host(self.node(r)), 1000 + r))
            with open(p, "w") as f:
                f.writelines(json.dumps(o, separators=(",", ":")) + "\n" for o in ls)
            paths.append(p)
        return paths
