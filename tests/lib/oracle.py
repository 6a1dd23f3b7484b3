#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Independent test oracle: the records a correct Inspector plugin must write for a trace.

It reads a recorded NCCL profiler-event trace (format: tests/data/README.md) and computes,
from the trace alone and never from the plugin, the JSON perf records of
docs/CONTRACTS.md section 2 that the plugin must write when the trace is replayed through it.

Every rule below cites where it comes from:
  [C2]   docs/CONTRACTS.md section 2 (JSON records)
  [C1]   docs/CONTRACTS.md section 1 (replay driver)
  [ABI]  ../shared/abi/nccl-profiler-abi.md ("Semantics a plugin must get right", "Seen on ...")
  [FIX]  tests/data/README.md (trace format, "What a correct plugin makes of them")
  [SEED] ../shared/seed/rccl-inspector-plugin.txt (environment variables)

Standard library only; python3 >= 3.9.  Run as a script to print the expected records:
    oracle.py TRACE [--min-size N] [--no-p2p] [--no-require-kernel]
"""

import argparse
import bisect
import gzip
import itertools
import json
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional

# ---------------------------------------------------------------------------
# Constants from the specs
# ---------------------------------------------------------------------------

# Event type bits [ABI "Event types"].
TYPE_COLL = 2
TYPE_P2P = 4
TYPE_KERNEL_CH = 64
# A copy-engine collective [ABI: v6 only, CeColl 4096]: the plugin asks for it through v6
# and treats it as a collective no kernel event will come for [C2 "copy-engine"].
TYPE_CE_COLL = 4096
OPS = (TYPE_COLL, TYPE_P2P, TYPE_CE_COLL)

# recordEventState state carrying the kernel's stop pTimer [ABI "States that matter here"].
STATE_KERNEL_CH_STOP = 22

# Datatype sizes in bytes [ABI "Semantics": the datatype names; C2: size = count x dtsize].
DTYPE_SIZE = {
    "ncclInt8": 1, "ncclUint8": 1, "ncclFloat8e4m3": 1, "ncclFloat8e5m2": 1,
    "ncclFloat16": 2, "ncclBfloat16": 2,
    "ncclInt32": 4, "ncclUint32": 4, "ncclFloat32": 4,
    "ncclInt64": 8, "ncclUint64": 8, "ncclFloat64": 8,
}

# [C2 "Whose timestamps"]
SLOTS = 64          # NCCL's timestamp slots per channel (MAX_PROFILER_EVENTS_PER_CHANNEL)
JUDGE_WINDOW = 4096 # ops the plugin remembers; a longer span is unverified
JUDGE_SETTLE = 64

# Timing sources [C2].
SRC_KERNEL_GPU = "kernel_gpu"
SRC_KERNEL_CPU = "kernel_cpu"
SRC_COLLECTIVE_CPU = "collective_cpu"

# Fields of a perf object [C2], without the coll_/p2p_ prefix.  The verbose blocks
# (event_trace_sn / event_trace_ts) come on top when NCCL_INSPECTOR_DUMP_VERBOSE=1.
COLL_FIELDS = ["coll", "coll_sn", "coll_msg_size_bytes", "coll_exec_time_us", "coll_timing_source",
               "coll_algobw_gbs", "coll_busbw_gbs", "coll_exec_time_ns", "coll_start_ts_ns",
               "coll_datatype", "coll_count", "coll_nchannels", "coll_stale_channels",
               "coll_algo", "coll_proto"]
P2P_FIELDS = ["p2p", "p2p_sn", "p2p_peer", "p2p_msg_size_bytes", "p2p_exec_time_us",
              "p2p_timing_source", "p2p_algobw_gbs", "p2p_busbw_gbs", "p2p_exec_time_ns",
              "p2p_start_ts_ns", "p2p_datatype", "p2p_count", "p2p_nchannels",
              "p2p_stale_channels"]

# Fields whose value depends on the replay's host clock when the timing source is not
# kernel_gpu: only their presence is checked then.
TIME_FIELDS = ("exec_time_us", "exec_time_ns", "start_ts_ns", "algobw_gbs", "busbw_gbs")


@dataclass
class Config:
    """What the plugin was configured with [SEED; defaults there], and the ABI the replay
    drives it through (None: the newest, v6; "trace": each trace's own; "4", "5", "6"): API
    events reach the plugin through v5 and v6 only [ABI "Event types"]."""
    min_size: int = 8192          # NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES
    p2p: bool = True              # NCCL_INSPECTOR_ENABLE_P2P
    require_kernel: bool = True   # NCCL_INSPECTOR_REQUIRE_KERNEL_TIMING
    abi: Optional[str] = None
    # ops below min_size are tracked quiet (hang detection on, with its dump thread: the
    # defaults) and leave a shadow when they complete uncertain [C2 "Whose timestamps"]
    quiet: bool = True


# ---------------------------------------------------------------------------
# Trace model
# ---------------------------------------------------------------------------

@dataclass
class Context:
    """One communicator context: one `init` line [FIX "Line format"]."""
    ctx: int
    comm_id: int          # commId, int of the hex string
    rank: int
    nranks: int
    nnodes: int
    name: str
    ver: int
    p2p_starts: int = 0   # P2p start events seen so far (for p2p_sn)
    # KernelCh starts of no op the plugin is given (line, ptimer): they raise the floor
    orphan_starts: list = field(default_factory=list)


@dataclass
class Kernel:
    """One KernelCh event (type 64): a channel of an op's kernel."""
    id: int
    ch: int
    start_ptimer: int
    stop_ptimer: int = 0      # from `record` state 22
    recorded: bool = False    # a `record` with state 22 was seen
    stopped: bool = False     # a `stop` was seen
    last_line: int = 0        # line index of its last event
    start_line: int = 0       # line index of its start


@dataclass
class Op:
    """One Coll (type 2) or P2p (type 4) start and what followed it."""
    id: int
    ctx: int
    kind: str                 # "coll" | "p2p"
    func: str
    count: int
    dtype: str
    nch: int
    sn: int                   # coll: seq; p2p: 0-based index among the ctx's P2p starts
    peer: int = -1
    algo: Optional[str] = None
    proto: Optional[str] = None
    start_line: int = 0
    stopped: bool = False
    stop_line: int = 0
    kernels: List[Kernel] = field(default_factory=list)
    # Its place in the context's issue order [C2 "Whose timestamps"]
    idx: int = 0              # Coll/P2p starts of the context before it
    group: int = 0            # its application group's number
    group_first: int = 0      # Coll/P2p starts of the context when its group began
    api_base: int = 0         # API calls of the context when its group began
    api_at: Optional[int] = None  # API calls of the context when it started (None: no API events)
    copy_engine: bool = False # a CeColl: no kernel event ever comes; complete at its stop


@dataclass
class Counts:
    """A context's issue counters after some line [C2 "Whose timestamps"]."""
    ops: int = 0              # Coll/P2p starts delivered (filtered ones included)
    api: int = 0              # CollApi/P2pApi starts delivered
    api_seen: bool = False
    group: int = 0
    group_first: int = 0
    api_base: int = 0
    in_api_calls: bool = False


def open_trace(path):
    """Trace files may be gzip-compressed or plain [C1]."""
    with open(path, "rb") as f:
        magic = f.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, "r", encoding="utf-8")


TYPE_GROUP = 1
TYPE_COLL_API = 512
TYPE_P2P_API = 1024


def api_events_delivered(ctx_ver: int, abi: Optional[str]) -> bool:
    """Whether the replay hands the plugin API events: the table it drives is v5 or v6."""
    v = ctx_ver if abi == "trace" else (6 if abi is None else int(abi))
    return v >= 5


def parse_trace(path, undelivered=frozenset(), abi=None):
    """Read a trace: returns (contexts by ctx, ops in start order, counts), where counts[ctx]
    is the list of (line, Counts) after each line that changed them.

    undelivered: ids of Coll/P2p start events the replay did not deliver to the plugin
    (sampled timing: NCCL tagged their group without those event types). The plugin never
    sees them, so they make no record and take no p2p_sn [C2]; nor do their kernels."""
    contexts: Dict[int, Context] = {}
    ops: Dict[int, Op] = {}          # by event id
    kernels: Dict[int, Kernel] = {}  # by event id
    counts: Dict[int, Counts] = {}
    history: Dict[int, list] = {}
    with open_trace(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            ev = json.loads(line)
            cb = ev["cb"]
            if cb == "init":
                contexts[ev["ctx"]] = Context(
                    ctx=ev["ctx"], comm_id=int(ev["comm"], 16), rank=ev["rank"],
                    nranks=ev["nranks"], nnodes=ev["nnodes"], name=ev.get("name") or "",
                    ver=ev.get("ver", 0))
                counts[ev["ctx"]] = Counts()
                history[ev["ctx"]] = [(lineno, Counts())]
            elif cb == "start":
                if ev["id"] in undelivered and ev["type"] in OPS:
                    continue
                if ev["type"] == TYPE_KERNEL_CH and ev.get("parent") not in ops and \
                        ev.get("parent") not in undelivered and ev.get("ctx") in contexts:
                    contexts[ev["ctx"]].orphan_starts.append((lineno, int(ev.get("ptimer", 0))))
                c = counts.get(ev.get("ctx"))
                if c is not None and _on_issue(ev, c, contexts[ev["ctx"]], abi):
                    history[ev["ctx"]].append((lineno, Counts(**vars(c))))
                if ev["type"] in OPS and c is not None:
                    ev = dict(ev, _place=(c.ops - 1, c.group, c.group_first, c.api_base,
                                          c.api if c.api_seen else None))
                _on_start(ev, lineno, contexts, ops, kernels)
            elif cb == "record":
                k = kernels.get(ev["id"])
                if k is not None and ev.get("state") == STATE_KERNEL_CH_STOP:
                    k.recorded = True
                    k.stop_ptimer = int(ev.get("ptimer", 0))
                    k.last_line = lineno
            elif cb == "stop":
                if ev["id"] in ops:
                    op = ops[ev["id"]]
                    op.stopped = True
                    op.stop_line = lineno
                elif ev["id"] in kernels:
                    k = kernels[ev["id"]]
                    k.stopped = True
                    k.last_line = lineno
            # `finalize` and every other type are irrelevant to the records.
    return contexts, list(ops.values()), history


def _on_issue(ev, c: Counts, ctx: Context, abi) -> bool:
    """Issue-order bookkeeping [C2 "Whose timestamps"]: a Group start begins an application
    group; so does the first API call after a Coll/P2p start; each Coll/P2p start takes the
    next place. True if the counters changed."""
    t = ev["type"]
    if t == TYPE_GROUP:
        c.group += 1
        c.group_first = c.ops
        return True
    if t in (TYPE_COLL_API, TYPE_P2P_API):
        if not api_events_delivered(ctx.ver, abi):
            return False
        if not c.in_api_calls:
            c.in_api_calls = True
            c.api_base = c.api
            c.group += 1
            c.group_first = c.ops
        # the calls that can make work: a collective's as it is made, a P2P call's through
        # its P2p start (NCCL drops an in-place send to self with no event and no work)
        if t == TYPE_COLL_API:
            c.api += 1
        c.api_seen = True
        return True
    if t in OPS:
        c.ops += 1
        if t == TYPE_P2P:
            c.api += 1
        c.in_api_calls = False
        return True
    return False


def counts_at(history, line) -> Counts:
    """A context's counters after every line before `line`."""
    lo, hi = 0, len(history)
    while lo < hi:
        mid = (lo + hi) // 2
        if history[mid][0] < line:
            lo = mid + 1
        else:
            hi = mid
    return history[lo - 1][1] if lo else Counts()


def _on_start(ev, lineno, contexts, ops, kernels):
    t = ev["type"]
    place = ev.get("_place", (0, 0, 0, 0, None))
    if t == TYPE_COLL:
        # coll_sn = NCCL's seqNumber [C2].
        ops[ev["id"]] = Op(id=ev["id"], ctx=ev["ctx"], kind="coll", func=ev["func"],
                           count=int(ev["count"]), dtype=ev["dtype"], nch=int(ev["nch"]),
                           sn=int(ev["seq"]), algo=ev.get("algo"), proto=ev.get("proto"),
                           start_line=lineno, idx=place[0], group=place[1],
                           group_first=place[2], api_base=place[3], api_at=place[4])
    elif t == TYPE_CE_COLL:
        # coll_sn = its seqNumber, as a Coll's; count and datatype as NCCL gives them
        ops[ev["id"]] = Op(id=ev["id"], ctx=ev["ctx"], kind="coll", func=ev["func"],
                           count=int(ev["count"]), dtype=ev["dtype"], nch=0,
                           sn=int(ev["seq"]), algo="CE", proto="unknown", start_line=lineno, idx=place[0], group=place[1],
                           group_first=place[2], api_base=place[3], api_at=place[4],
                           copy_engine=True)
    elif t == TYPE_P2P:
        # p2p_sn = 0-based index of this P2p among all P2p start events of that
        # communicator context, filtered ones included [C2].
        c = contexts[ev["ctx"]]
        sn = c.p2p_starts
        c.p2p_starts += 1
        ops[ev["id"]] = Op(id=ev["id"], ctx=ev["ctx"], kind="p2p", func=ev["func"],
                           count=int(ev["count"]), dtype=ev["dtype"], nch=int(ev["nch"]),
                           sn=sn, peer=int(ev["peer"]), start_line=lineno, idx=place[0],
                           group=place[1], group_first=place[2], api_base=place[3],
                           api_at=place[4])
    elif t == TYPE_KERNEL_CH:
        # A KernelCh belongs to the op whose event id is its parent [FIX "Line format";
        # ABI: the parent may already be stopped].
        k = Kernel(id=ev["id"], ch=int(ev["ch"]), start_ptimer=int(ev.get("ptimer", 0)),
                   last_line=lineno, start_line=lineno)
        kernels[ev["id"]] = k
        parent = ops.get(ev["parent"])
        if parent is not None:
            parent.kernels.append(k)


# ---------------------------------------------------------------------------
# Rules
# ---------------------------------------------------------------------------

def msg_size_bytes(op: Op) -> int:
    """*_msg_size_bytes = count x datatype size [C2]."""
    return op.count * DTYPE_SIZE[op.dtype]


def bandwidth_bytes(op: Op, nranks: int) -> int:
    """Same as the message size, except AllGather and ReduceScatter use x n_ranks [C2]."""
    if op.func in ("AllGather", "ReduceScatter"):
        return msg_size_bytes(op) * nranks
    return msg_size_bytes(op)


def busbw_factor(func: str, nranks: int) -> float:
    """AllReduce 2(n-1)/n; AllGather, ReduceScatter, AllToAll (n-1)/n; others 1 [C2]."""
    n = nranks
    if func == "AllReduce":
        return 2.0 * (n - 1) / n
    if func in ("AllGather", "ReduceScatter", "AllToAll", "All2All"):
        return float(n - 1) / n
    return 1.0


def kernel_has_gpu_times(k: Kernel) -> bool:
    """Both pTimers present: start ptimer > 0 and a state-22 record with ptimer > 0
    [ABI: "A zero pTimer means none was recorded"]."""
    return k.start_ptimer > 0 and k.recorded and k.stop_ptimer > 0




# NCCL's MAXCHANNELS (64): an op runs on at most that many channels (ids 0..63).
MAX_CHANNELS = 64


def channel_count_known(op: Op) -> bool:
    """Whether the descriptor's nChannels can be believed.  [ABI "Reported for RCCL"]: RCCL
    has sent uninitialised memory there (224 was seen): never an array bound, and completion
    may not depend on it alone.  A count above MAXCHANNELS cannot be true; 0 cannot be either
    once kernel events come."""
    return 0 < op.nch <= MAX_CHANNELS


def completion(op: Op, require_kernel: bool):
    """Decide whether the trace proves the op complete, and with which timing source.

    [ABI] "stopEvent on a Coll or P2p means enqueued, not done. The work is done when every
    KernelCh child has delivered its stop".  The trace proves it when the op's stop was seen
    and it has exactly nch KernelCh children, every one stopped.  When nch is not a channel
    count (channel_count_known), the op's channels are the KernelCh children that came: it is
    complete once it was stopped and each of them (at least one) stopped.  Returns the timing
    source [C2], or None when no record may be written.
    """
    if not op.stopped:
        return None
    nch = op.nch if channel_count_known(op) else len(op.kernels)
    if len(op.kernels) == nch and nch > 0 and all(k.stopped for k in op.kernels):
        if all(kernel_has_gpu_times(k) for k in op.kernels):
            return SRC_KERNEL_GPU
        # Kernel events without usable pTimers [C2 "kernel_cpu"].
        return None if require_kernel else SRC_KERNEL_CPU
    if not op.kernels and not require_kernel:
        # No kernel event at all: host start to stop [C2 "collective_cpu"].
        return SRC_COLLECTIVE_CPU
    return None


def completion_line(op: Op) -> int:
    """Line index of the event that made the op complete (for completion order)."""
    return max([op.stop_line] + [k.last_line for k in op.kernels])


def wanted(op: Op, ctx: Context, cfg: Config) -> bool:
    """Filters applied before completion [SEED, ABI]."""
    if op.kind == "p2p":
        if not cfg.p2p:                      # NCCL_INSPECTOR_ENABLE_P2P=0
            return False
        if op.peer == ctx.rank:              # [ABI] a send to self gets no KernelCh at all
            return False
    if op.dtype not in DTYPE_SIZE:           # unknown datatype: no size, no record
        return False
    return msg_size_bytes(op) >= cfg.min_size   # NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES


def gbs(nbytes: int, ns: int) -> float:
    """bytes per ns is GB/s (1e9) [C2 algobw = bandwidth bytes / exec ns]."""
    return nbytes / ns if ns > 0 else 0.0


def expected_record(op: Op, ctx: Context, source: str, trace: str) -> dict:
    """The perf object the plugin must write for a complete op [C2]."""
    p = op.kind  # field prefix: "coll" | "p2p"
    rec = {p: op.func, p + "_sn": op.sn}
    if op.kind == "p2p":
        rec["p2p_peer"] = op.peer
    size = msg_size_bytes(op)
    rec[p + "_msg_size_bytes"] = size
    rec[p + "_timing_source"] = source
    rec[p + "_datatype"] = op.dtype
    rec[p + "_count"] = op.count
    rec[p + "_nchannels"] = len(op.kernels)      # channels that reported
    rec[p + "_stale_channels"] = 0
    if op.kind == "coll":
        rec["coll_algo"] = op.algo
        rec["coll_proto"] = op.proto
    if source == SRC_KERNEL_GPU:
        fresh = [k for k in op.kernels if k not in op.left_out]
        rec[p + "_stale_channels"] = len(op.left_out)
        start = min(k.start_ptimer for k in fresh)   # min kernel start pTimer
        stop = max(k.stop_ptimer for k in fresh)     # max kernel stop pTimer
        ns = stop - start
        algobw = gbs(bandwidth_bytes(op, ctx.nranks), ns)
        rec[p + "_exec_time_ns"] = ns
        rec[p + "_exec_time_us"] = ns // 1000             # floor(ns / 1000)
        rec[p + "_start_ts_ns"] = start
        rec[p + "_algobw_gbs"] = algobw
        rec[p + "_busbw_gbs"] = algobw * busbw_factor(op.func, ctx.nranks)
    loose = set() if source == SRC_KERNEL_GPU else {p + "_" + f for f in TIME_FIELDS}
    return {
        "trace": trace,
        "kind": op.kind,
        "comm": ctx.comm_id,
        "rank": ctx.rank,
        "sn": op.sn,
        "header": expected_header(ctx),
        "perf": rec,
        "loose": loose,                                   # present, value not checked
        "channels": sorted(k.ch for k in op.kernels),     # for the verbose blocks
        "complete_at": completion_line(op),
    }


def record_key(comm: int, rank: int, kind: str, func: str, sn: int):
    """How an expected record is matched with a written one.

    The function name is part of the key because NCCL's seqNumber (coll_sn) counts per
    collective function: the PyTorch fixtures have an AllReduce, an AllGather, a
    ReduceScatter and a Broadcast all with seq 3 on the same communicator context.
    """
    return (comm, rank, kind, func, sn)


def expected_header(ctx: Context) -> dict:
    """header object [C2]: id is 0x + lower-case hex, not padded; comm_name unknown if empty."""
    return {"id": "0x%x" % ctx.comm_id, "comm_name": ctx.name if ctx.name else "unknown",
            "rank": ctx.rank, "n_ranks": ctx.nranks, "nnodes": ctx.nnodes}


UNTIMED = ("unverified", "handed_over", "no_gpu_timer", "lost_events", "incomplete")


def judge_context(ops, history, cfg, foreign=(), shadows=()):
    """[C2 "Whose timestamps"] For the tracked ops of one context, in completion order: which
    channels are left out, which ops are handed over (no channel left), and which records
    are unverified. Sets op.left_out and returns {op id: verdict} ("ok", "handed_over",
    "unverified") for the kernel_gpu ops. foreign: (line, ptimer) of the KernelCh starts of
    ops the plugin does not track, which raise the floor too. shadows: the quiet ops that
    left a shadow (quiet_shadows): counted with their channels, never vouching."""
    timed = sorted(ops, key=completion_line)
    foreign = sorted(foreign)
    foreign_lines = [l for l, _ in foreign]
    foreign_max = list(itertools.accumulate((p for _, p in foreign), max))
    floor_by_line = []          # (completion line, latest stop): the floor's history
    latest = 0
    last_all = None             # (op idx, latest kept stop) of the newest certain op of all
    verdict, place = {}, {}
    for op in timed:
        line = completion_line(op)
        # 1. no channel can start at or before a timestamp delivered before the op's start
        floor = max([f for (l, f) in floor_by_line if l < op.start_line], default=0)
        i = bisect.bisect_left(foreign_lines, op.start_line)
        floor = max(floor, foreign_max[i - 1] if i else 0)
        c = counts_at(history, line)
        span = c.ops - op.group_first
        lag = (c.api - op.api_base) if c.api_seen else span
        certain = max(lag, span) <= SLOTS
        bad = []
        # 1, every channel: after the newest certain op of all, issued before its group
        # (a communicator's kernels run one after another)
        last_end = last_all[1] if last_all and last_all[0] < op.group_first else 0
        for k in op.kernels:
            if k.start_ptimer <= floor or k.start_ptimer < last_end:
                bad.append(k)
        op.left_out = bad
        kept = [k for k in op.kernels if k not in bad]
        latest = max([latest] + [k.stop_ptimer for k in op.kernels])
        floor_by_line.append((line, latest))
        if certain:
            if kept and (not last_all or last_all[0] < op.idx):
                last_all = (op.idx, max(k.stop_ptimer for k in kept))
        verdict[op.id] = "ok" if kept else "handed_over"
        place[op.id] = (certain, lag, c.ops)
    # 2. records that may hold a later op's timestamps: counted per channel over the span
    by_idx = {op.idx: op for op in ops if verdict.get(op.id) == "ok"}
    seen = dict(by_idx)         # what the judge remembers: records, and shadows
    for q in shadows:
        seen.setdefault(q.idx, q)

    def chans_of(i, lo):
        """The channels op i adds a work to (an op with no record nor shadow: every channel;
        a Send and a Recv of one group with one peer are one work on a channel, unless no
        group was ever begun: group 0)."""
        y = seen.get(i)
        m = {k.ch for k in y.kernels} if y else set(range(MAX_CHANNELS))
        if y and y.kind == "p2p" and y.group:
            for j in range(i - 1, lo - 1, -1):
                pz = seen.get(j)
                if not pz or pz.group != y.group:
                    break
                if pz.kind == "p2p" and pz.peer == y.peer:
                    m -= {k.ch for k in pz.kernels}
        return m

    for op in timed:
        if verdict[op.id] != "ok":
            continue
        certain, lag, issued = place[op.id]
        if certain:
            continue
        lo = op.idx - min(op.idx - op.group_first, 255)
        span = issued - lo
        if span > JUDGE_WINDOW - JUDGE_SETTLE:
            verdict[op.id] = "unverified"
            continue
        base = max(0, min(lag, 65535) - span)
        chans = {k.ch for k in op.kernels}
        works = {ch: base for ch in chans}
        for i in range(lo, issued):
            for ch in chans_of(i, lo) & chans:
                works[ch] += 1
        if any(w > SLOTS for w in works.values()):
            verdict[op.id] = "unverified"
    # 3. an unverified op's channel is its own when an op issued after it, right on every
    # channel, ran on that channel after the op's whole interval, fewer than 64 works
    # after it there (counted to the end of that op's group): a work 64 after the op's
    # would come after that op's. Newest first: a vouched-for op vouches in turn. Works
    # after the op's group: those of the ops there, or at most the API calls there.
    def interval(y):
        kept = [k for k in y.kernels if k not in y.left_out]
        return min(k.start_ptimer for k in kept), max(k.stop_ptimer for k in kept)

    def can_vouch(y):
        return verdict.get(y.id) == "ok" and not y.left_out

    issued_at = {op.idx: place[op.id][2] for op in timed}
    for op in sorted(timed, key=lambda o: -o.idx):
        if verdict[op.id] != "unverified":
            continue
        certain, lag, issued = place[op.id]
        lo = op.idx - min(op.idx - op.group_first, 255)
        span = issued - lo
        if span > JUDGE_WINDOW - JUDGE_SETTLE:
            continue
        x_end = interval(op)[1]
        chans = {k.ch for k in op.kernels}
        base = max(0, min(lag, 65535) - span)
        g1 = {ch: 0 for ch in chans}      # works of the op's group, its own included
        rest = {ch: 0 for ch in chans}    # works of the ops after its group
        in_g1 = True
        pending = set(chans)
        for i in range(lo, issued):
            z = seen.get(i)
            if in_g1 and z and z.group != op.group and i > op.idx:
                in_g1 = False
            if z and i > op.idx and can_vouch(z) and interval(z)[0] > x_end:
                zch = {k.ch for k in z.kernels}
                extra = {ch: 0 for ch in chans}
                for k in range(i + 1, min(issued_at[i], i + 65535)):
                    q = seen.get(k)
                    if q and q.group != z.group:
                        break
                    for ch in chans_of(k, lo) & zch & chans:
                        extra[ch] += 1
                for ch in zch & pending:
                    after = base + rest[ch] + extra[ch]
                    if not in_g1 and op.api_at is not None and z.api_at is not None and lag < 0x7fff:
                        # Z's api_at counts its group's P2P calls up to Z: the rest are extra
                        after = min(after, z.api_at - op.api_at + extra[ch])
                    if g1[ch] + after <= SLOTS:
                        pending.discard(ch)
            for ch in chans_of(i, lo) & chans:
                (g1 if in_g1 else rest)[ch] += 1
            if not pending:
                break
        if not pending or all(base + g1[ch] + rest[ch] <= SLOTS for ch in pending):
            verdict[op.id] = "ok"
    return verdict


def tracked(op: Op, ctx: Context, cfg: Config) -> bool:
    """Whether the plugin tracks the op from its start: a record's, or (hang detection on) a
    quiet one's below the minimum size [C2]; never a P2P filtered out or to itself."""
    if op.kind == "p2p" and (not cfg.p2p or op.peer == ctx.rank):
        return False
    return wanted(op, ctx, cfg) or cfg.quiet


def whole(op: Op) -> bool:
    """Every event of the op came, a kernel channel among them: it completed after its
    launch."""
    nch = op.nch if channel_count_known(op) else len(op.kernels)
    return op.stopped and nch > 0 and len(op.kernels) == nch and all(k.stopped for k in op.kernels)


def groupless_groups(ctx_ops, ctx: Context, cfg: Config):
    """[C2 "Whose timestamps"] An op started while no application group had ever begun on
    its context (group 0) shares its launch at most with the ops issued since the latest
    tracked op that completed, with a kernel channel, before it started: its group begins
    there."""
    done = sorted((completion_line(o), o.idx) for o in ctx_ops if tracked(o, ctx, cfg) and whole(o))
    latest, j = -1, 0
    for op in sorted(ctx_ops, key=lambda o: o.start_line):
        while j < len(done) and done[j][0] < op.start_line:
            latest = max(latest, done[j][1])
            j += 1
        if op.group == 0 and latest >= 0:
            op.group_first = max(op.group_first, latest + 1)


def quiet_shadows(ctx_ops, ctx: Context, history, cfg: Config):
    """[C2 "Whose timestamps"] The quiet ops (below the minimum size, tracked) that complete
    uncertain (rule 2): each leaves its channels for rule 3 to count."""
    out = []
    for q in ctx_ops:
        if not cfg.quiet or wanted(q, ctx, cfg) or not tracked(q, ctx, cfg) or not whole(q):
            continue
        c = counts_at(history, completion_line(q))
        span = c.ops - q.group_first
        lag = (c.api - q.api_base) if c.api_seen else span
        if max(lag, span) > SLOTS:
            out.append(q)
    return out


def expected_records(path: str, cfg: Optional[Config] = None, undelivered=frozenset()):
    """All records the plugin must write for one replay of the trace at `path`.

    Returns (contexts, records): contexts is a list of the trace's contexts (dicts with
    comm, rank, header, and untimed: {kind: {reason: ops left without a record}}), records
    a list of dicts (see expected_record) in completion order.
    """
    cfg = cfg or Config()
    contexts, ops, history = parse_trace(path, undelivered, cfg.abi)
    for c, ctx in contexts.items():
        groupless_groups([op for op in ops if op.ctx == c], ctx, cfg)
    out = []
    seen = set()
    untimed = {c: {k: dict.fromkeys(UNTIMED, 0) for k in ("coll", "p2p")} for c in contexts}
    gpu_ops = {c: [] for c in contexts}
    sources = {}
    for op in ops:
        op.left_out = []
        ctx = contexts[op.ctx]
        if not wanted(op, ctx, cfg):
            continue
        source = completion(op, cfg.require_kernel)
        if source is None:
            nch = op.nch if channel_count_known(op) else len(op.kernels)
            whole = op.stopped and len(op.kernels) == nch and nch > 0 and \
                all(k.stopped for k in op.kernels)
            if op.copy_engine:  # complete at its stop, with no GPU timer
                whole = op.stopped
            untimed[op.ctx][op.kind]["no_gpu_timer" if whole else "incomplete"] += 1
            continue
        sources[op.id] = source
        if source == SRC_KERNEL_GPU:
            gpu_ops[op.ctx].append(op)
    verdict = {}
    for c, lst in gpu_ops.items():
        # (with P2P off the plugin's mask leaves P2p events out, and the replay their
        # kernels: NCCL itself starts them whenever KernelCh is asked for)
        foreign = list(contexts[c].orphan_starts) + [
            (k.start_line, k.start_ptimer) for op in ops
            if op.ctx == c and not wanted(op, contexts[c], cfg) and (cfg.p2p or op.kind != "p2p")
            for k in op.kernels]
        shadows = quiet_shadows([op for op in ops if op.ctx == c], contexts[c], history[c], cfg)
        verdict.update(judge_context(lst, history[c], cfg, foreign, shadows))
    for op in ops:
        if op.id not in sources:
            continue
        ctx = contexts[op.ctx]
        v = verdict.get(op.id, "ok")
        if v != "ok":
            untimed[op.ctx][op.kind][v] += 1
            continue
        key = record_key(ctx.comm_id, ctx.rank, op.kind, op.func, op.sn)
        if key in seen:
            raise ValueError("%s: two ops with key %r: the oracle's matching key is not unique"
                             % (path, key))
        seen.add(key)
        out.append(expected_record(op, ctx, sources[op.id], path))
    out.sort(key=lambda r: r["complete_at"])
    ctx_list = [{"comm": c.comm_id, "rank": c.rank, "header": expected_header(c), "ver": c.ver,
                 "untimed": untimed[c.ctx]}
                for c in contexts.values()]
    return ctx_list, out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--min-size", type=int, default=8192)
    ap.add_argument("--no-p2p", action="store_true")
    ap.add_argument("--no-require-kernel", action="store_true")
    ap.add_argument("--summary", action="store_true", help="print counts only")
    a = ap.parse_args(argv)
    cfg = Config(min_size=a.min_size, p2p=not a.no_p2p, require_kernel=not a.no_require_kernel)
    ctxs, recs = expected_records(a.trace, cfg)
    if a.summary:
        for c in ctxs:
            mine = [r for r in recs if (r["comm"], r["rank"]) == (c["comm"], c["rank"])]
            print("%s rank %d: %d coll, %d p2p" % (c["header"]["id"], c["rank"],
                  sum(r["kind"] == "coll" for r in mine), sum(r["kind"] == "p2p" for r in mine)))
        return 0
    for r in recs:
        print(json.dumps({"header": r["header"], r["kind"] + "_perf": r["perf"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
