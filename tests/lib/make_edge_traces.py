#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Write the hand-made edge-case traces under tests/data/edge/ (checked in; rerun this script
after changing it).  Same line format as the recorded fixtures (tests/data/README.md); each
file exercises a corner the recorded traces do not reach:

  late_channel   a channel's kernel events come after the other channel's stopped and after a
                 later op completed [ABI "Reported for RCCL": not complete merely because
                 every channel started so far has stopped]
  channels       channel ids 40 and 63, P2p on channels 16/17/63, a send to self (no kernel
                 events) between two P2p (p2p_sn gap), comm id with leading zeros, a comm name
                 that needs JSON escaping, nranks 4 on 2 nodes (busbw factors with n = 4)
  no_ptimer      kernel events without usable pTimers (start pTimer 0; stop pTimer 0; no state-22
                 record), a channel that never arrives, and a good control op
  no_kernel      a stopped collective with no kernel event at all, and a control op
  late_channel_v4  late_channel through ABI v4 (no API events, Group starts the group)
  garbage_nch    Coll descriptors whose nChannels is garbage (224, and 0) while two channels'
                 kernel events come, on channels 0/1 and 60/63 [ABI "Reported for RCCL": never
                 an array bound, completion not on it alone], between good control ops
  garbage_nch_late  the two RCCL facts at once: a Coll with nChannels 224 whose channel 1
                 starts only after its channel 0 stopped and after the next op (a sound one,
                 nChannels 2) started and ran a channel: that channel still belongs to the
                 first op [ABI: not complete merely because every channel started so far has
                 stopped; a stopped op's handle is still named by its later kernel events]
  dda            collectives serviced by RCCL's direct device access path: their CollApi
                 events come (alone in their GroupApi, beside a kernel-timed op in the same
                 GroupApi, and once with an empty Group event) but no Coll or KernelCh at all
                 [ABI "Reported for RCCL"], between kernel-timed ops
"""

import json
import os
import sys

OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "edge")
APP_TID, PROXY_TID = 100, 200
T0_PTIMER = 1_800_000_000_000_000_000  # GPU global timer, ns since the epoch


class Trace:
    def __init__(self, ver):
        self.ver = ver
        self.lines = []
        self.next_id = 3
        self.t = 1_000_000_000

    def emit(self, tid, cb, **kw):
        self.t += 1000
        d = {"t": self.t, "tid": tid, "cb": cb}
        d.update(kw)
        self.lines.append(d)

    def new_id(self):
        self.next_id += 1
        return self.next_id

    def init(self, ctx, comm, name, nnodes, nranks, rank):
        self.emit(APP_TID + ctx, "init", ver=self.ver, ctx=ctx, comm=comm, name=name,
                  nnodes=nnodes, nranks=nranks, rank=rank, mask=70)

    def finalize(self, ctx):
        self.emit(APP_TID, "finalize", ctx=ctx)

    def group(self, ctx, api_ops):
        """Open an application group: GroupApi + one CollApi/P2pApi per op (v5+), then the
        Group event.  Returns (group api id, [api ids], group id)."""
        ga = None
        apis = []
        if self.ver >= 5:
            ga = self.new_id()
            self.emit(APP_TID, "start", ctx=ctx, id=ga, type=256, parent=0, rank=0, graph=0,
                      depth=1)
            self.emit(APP_TID, "record", id=ga, state=23)
            for (typ, func, count, dtype) in api_ops:
                a = self.new_id()
                apis.append(a)
                if typ == 512:
                    self.emit(APP_TID, "start", ctx=ctx, id=a, type=512, parent=ga, rank=0,
                              func=func, count=count, dtype=dtype, root=0, graph=0)
                else:
                    self.emit(APP_TID, "start", ctx=ctx, id=a, type=1024, parent=ga, rank=0,
                              func=func, count=count, dtype=dtype, graph=0)
                self.emit(APP_TID, "stop", id=a)
            self.emit(APP_TID, "record", id=ga, state=24)
        else:
            apis = [0 for _ in api_ops]
        g = self.new_id()
        self.emit(APP_TID, "start", ctx=ctx, id=g, type=1, parent=0, rank=0)
        return ga, apis, g

    def end_group(self, ga, g):
        self.emit(APP_TID, "stop", id=g)
        if ga is not None:
            self.emit(APP_TID, "stop", id=ga)

    def coll(self, ctx, rank, parent, g, seq, func, count, dtype, nch, algo="RING",
             proto="SIMPLE"):
        i = self.new_id()
        self.emit(APP_TID, "start", ctx=ctx, id=i, type=2, parent=parent, rank=rank, seq=seq,
                  func=func, count=count, root=0, dtype=dtype, nch=nch, nwarps=16, algo=algo,
                  proto=proto, pgroup=g)
        return i

    def p2p(self, ctx, rank, parent, g, func, count, dtype, peer, nch):
        i = self.new_id()
        self.emit(APP_TID, "start", ctx=ctx, id=i, type=4, parent=parent, rank=rank, func=func,
                  dtype=dtype, count=count, peer=peer, nch=nch, pgroup=g)
        return i

    def stop(self, i, tid=APP_TID):
        self.emit(tid, "stop", id=i)

    def kernel(self, ctx, op, ch, start, stop, record=True):
        """A complete KernelCh: start (pTimer), record state 22 (stop pTimer), stop."""
        k = self.kernel_start(ctx, op, ch, start)
        self.kernel_end(k, stop, record)
        return k

    def kernel_start(self, ctx, op, ch, start):
        k = self.new_id()
        self.emit(PROXY_TID, "start", ctx=ctx, id=k, type=64, parent=op, rank=0, ch=ch,
                  ptimer=start)
        return k

    def kernel_end(self, k, stop, record=True):
        if record:
            self.emit(PROXY_TID, "record", id=k, state=22, ptimer=stop)
        self.emit(PROXY_TID, "stop", id=k)

    def write(self, name):
        os.makedirs(OUT, exist_ok=True)
        with open(os.path.join(OUT, name), "w") as f:
            for d in self.lines:
                f.write(json.dumps(d, separators=(",", ":")) + "\n")


def simple_coll(tr, ctx, rank, seq, func, count, dtype, chans, t0, dur, proto="SIMPLE"):
    """A whole collective in its own group with one kernel per channel in `chans`."""
    ga, apis, g = tr.group(ctx, [(512, func, count, dtype)])
    op = tr.coll(ctx, rank, apis[0], g, seq, func, count, dtype, len(chans), proto=proto)
    tr.stop(op)
    tr.end_group(ga, g)
    for j, ch in enumerate(chans):
        tr.kernel(ctx, op, ch, t0 + 100 * j, t0 + dur - 50 * j)
    return op


def late_channel(ver, name):
    tr = Trace(ver)
    tr.init(1, "0x5eed00000000c0de", "", 1, 2, 0)
    # op A (seq 0): 2 channels; channel 1 only arrives after op B completed
    ga, apis, g = tr.group(1, [(512, "AllReduce", 1048576, "ncclFloat32")])
    a = tr.coll(1, 0, apis[0], g, 0, "AllReduce", 1048576, "ncclFloat32", 2)
    tr.stop(a)
    tr.end_group(ga, g)
    tr.kernel(1, a, 0, T0_PTIMER + 1000, T0_PTIMER + 21000)
    # op B (seq 1): one channel, complete before A's second channel's events come
    simple_coll(tr, 1, 0, 1, "AllReduce", 262144, "ncclFloat32", [0], T0_PTIMER + 30000, 7000)
    # A's late channel 1: its events come after B completed; on the GPU it ran beside
    # channel 0, as one kernel's channels do (C2 "Whose timestamps")
    tr.kernel(1, a, 1, T0_PTIMER + 2000, T0_PTIMER + 21500)
    simple_coll(tr, 1, 0, 2, "AllReduce", 262144, "ncclFloat32", [0, 1], T0_PTIMER + 200000,
                5500)
    tr.finalize(1)
    tr.write(name)


def channels():
    tr = Trace(5)
    tr.init(1, "0x00000000000000ab", "", 1, 2, 0)
    tr.init(2, "0x0123456789abcdef", 'DP "grp" \\ 1', 2, 4, 3)
    t = T0_PTIMER
    # ctx 1: AllGather on channels 0, 40, 63 (int8, 16 KiB per rank)
    simple_coll(tr, 1, 0, 0, "AllGather", 16384, "ncclInt8", [0, 40, 63], t, 9000)
    # ctx 1: a group of Send (ch 16, 63), Send to self (no kernel), Recv (ch 17)
    ga, apis, g = tr.group(1, [(1024, "Send", 65536, "ncclFloat16"),
                               (1024, "Send", 65536, "ncclFloat16"),
                               (1024, "Recv", 65536, "ncclFloat16")])
    s0 = tr.p2p(1, 0, apis[0], g, "Send", 65536, "ncclFloat16", 1, 2)       # p2p_sn 0
    s1 = tr.p2p(1, 0, apis[1], g, "Send", 65536, "ncclFloat16", 0, 1)       # 1: self
    r2 = tr.p2p(1, 0, apis[2], g, "Recv", 65536, "ncclFloat16", 1, 1)       # 2
    for i in (s0, s1, r2):
        tr.stop(i)
    tr.end_group(ga, g)
    tr.kernel(1, s0, 16, t + 20000, t + 31000)
    tr.kernel(1, r2, 17, t + 20500, t + 30000)
    tr.kernel(1, s0, 63, t + 20700, t + 33000)
    # ctx 2 (4 ranks, 2 nodes, rank 3): every busbw factor with n = 4
    t += 100000
    seq = 0
    for func, count, dtype in (("AllReduce", 4194304, "ncclBfloat16"),
                               ("ReduceScatter", 1048576, "ncclFloat64"),
                               ("AllGather", 1048576, "ncclUint8"),
                               ("Broadcast", 2097152, "ncclInt32"),
                               ("Reduce", 2097152, "ncclUint64"),
                               ("AllReduce", 8192, "ncclFloat8e4m3"),
                               ("AllReduce", 4096, "ncclFloat8e5m2"),   # 4 KiB < 8192
                               ("AllReduce", 1024, "ncclInt64")):      # 8192 bytes exactly
        simple_coll(tr, 2, 3, seq, func, count, dtype, [0, 1, 2, 3], t, 123457)
        seq += 1
        t += 200000
    ga, apis, g = tr.group(2, [(1024, "Recv", 3000000, "ncclUint32")])
    r = tr.p2p(2, 3, apis[0], g, "Recv", 3000000, "ncclUint32", 0, 1)
    tr.stop(r)
    tr.end_group(ga, g)
    tr.kernel(2, r, 16, t, t + 987654)
    tr.finalize(2)
    tr.finalize(1)
    tr.write("channels.jsonl")


def no_ptimer():
    tr = Trace(5)
    tr.init(1, "0x77", "no-ptimer", 1, 2, 1)
    t = T0_PTIMER
    # seq 0: channel 1's start pTimer is 0
    ga, apis, g = tr.group(1, [(512, "AllReduce", 1048576, "ncclFloat32")])
    a = tr.coll(1, 1, apis[0], g, 0, "AllReduce", 1048576, "ncclFloat32", 2)
    tr.stop(a)
    tr.end_group(ga, g)
    tr.kernel(1, a, 0, t, t + 10000)
    tr.kernel(1, a, 1, 0, t + 10000)
    # seq 1: the stop pTimer is 0
    ga, apis, g = tr.group(1, [(512, "AllReduce", 1048576, "ncclFloat32")])
    b = tr.coll(1, 1, apis[0], g, 1, "AllReduce", 1048576, "ncclFloat32", 1)
    tr.stop(b)
    tr.end_group(ga, g)
    tr.kernel(1, b, 0, t + 20000, 0)
    # seq 2: no state-22 record before the kernel's stop
    ga, apis, g = tr.group(1, [(512, "AllReduce", 1048576, "ncclFloat32")])
    c = tr.coll(1, 1, apis[0], g, 2, "AllReduce", 1048576, "ncclFloat32", 1)
    tr.stop(c)
    tr.end_group(ga, g)
    tr.kernel(1, c, 0, t + 40000, t + 50000, record=False)
    # seq 3: two channels announced, only one ever arrives: never complete
    ga, apis, g = tr.group(1, [(512, "AllReduce", 1048576, "ncclFloat32")])
    d = tr.coll(1, 1, apis[0], g, 3, "AllReduce", 1048576, "ncclFloat32", 2)
    tr.stop(d)
    tr.end_group(ga, g)
    tr.kernel(1, d, 0, t + 60000, t + 70000)
    # seq 4: good control
    simple_coll(tr, 1, 1, 4, "AllReduce", 1048576, "ncclFloat32", [0, 1], t + 80000, 12000)
    tr.finalize(1)
    tr.write("no_ptimer.jsonl")


def no_kernel():
    tr = Trace(5)
    tr.init(1, "0x99", "", 1, 2, 0)
    t = T0_PTIMER
    ga, apis, g = tr.group(1, [(512, "Broadcast", 1048576, "ncclFloat32")])
    a = tr.coll(1, 0, apis[0], g, 0, "Broadcast", 1048576, "ncclFloat32", 2)
    tr.stop(a)
    tr.end_group(ga, g)
    simple_coll(tr, 1, 0, 1, "Broadcast", 1048576, "ncclFloat32", [0, 1], t, 12000)
    tr.finalize(1)
    tr.write("no_kernel.jsonl")


def garbage_nch():
    tr = Trace(5)
    tr.init(1, "0xa3d0", "rccl", 1, 2, 0)
    t = T0_PTIMER
    seq = 0
    # (nChannels as the descriptor says, the channels whose kernel events come, func)
    for nch, chans, func in ((224, [0, 1], "AllReduce"), (0, [0, 1], "AllReduce"),
                             (224, [60, 63], "AllGather"), (2, [0, 1], "AllReduce")):
        ga, apis, g = tr.group(1, [(512, func, 1048576, "ncclFloat32")])
        op = tr.coll(1, 0, apis[0], g, seq, func, 1048576, "ncclFloat32", nch)
        tr.stop(op)
        tr.end_group(ga, g)
        # every channel starts before any stops: the op is whole once the last one stops
        ks = [tr.kernel_start(1, op, ch, t + 300 * j) for j, ch in enumerate(chans)]
        for j, k in enumerate(ks):
            tr.kernel_end(k, t + 15000 + 700 * j)
        seq += 1
        t += 100000
    tr.finalize(1)
    tr.write("garbage_nch.jsonl")


def garbage_nch_late():
    tr = Trace(5)
    tr.init(1, "0xa3d1", "", 1, 2, 0)
    t = T0_PTIMER
    ga, apis, g = tr.group(1, [(512, "AllReduce", 1048576, "ncclFloat32")])
    a = tr.coll(1, 0, apis[0], g, 0, "AllReduce", 1048576, "ncclFloat32", 224)
    tr.stop(a)
    tr.end_group(ga, g)
    tr.kernel(1, a, 0, t + 1000, t + 21000)
    ga, apis, g = tr.group(1, [(512, "AllReduce", 262144, "ncclFloat32")])
    b = tr.coll(1, 0, apis[0], g, 1, "AllReduce", 262144, "ncclFloat32", 2)
    tr.stop(b)
    tr.end_group(ga, g)
    tr.kernel(1, b, 0, t + 30000, t + 37000)
    tr.kernel(1, a, 1, t + 2000, t + 22000)      # the first op's late channel
    tr.kernel(1, b, 1, t + 30100, t + 36900)
    simple_coll(tr, 1, 0, 2, "AllReduce", 262144, "ncclFloat32", [0, 1], t + 200000, 5500)
    tr.finalize(1)
    tr.write("garbage_nch_late.jsonl")


def dda():
    tr = Trace(5)
    tr.init(1, "0xdda", "", 1, 2, 1)
    t = T0_PTIMER
    seq = 0   # NCCL's seq counts the Coll events it made; DDA ops make none

    def dda_alone(func, count):
        ga, apis, g = tr.group(1, [(512, func, count, "ncclFloat32")])
        # the group's end comes with no Group event at all (the group() helper opened one:
        # take it back, as the DDA path never reaches NCCL's group machinery)
        tr.lines.pop()
        tr.emit(APP_TID, "stop", id=ga)

    simple_coll(tr, 1, 1, seq, "AllReduce", 1048576, "ncclFloat32", [0, 1], t, 12000)
    seq += 1
    for _ in range(3):
        dda_alone("AllReduce", 262144)
    # a GroupApi holding a DDA AllReduce and a kernel-timed AllGather
    ga, apis, g = tr.group(1, [(512, "AllReduce", 262144, "ncclFloat32"),
                               (512, "AllGather", 262144, "ncclFloat32")])
    op = tr.coll(1, 1, apis[1], g, 0, "AllGather", 262144, "ncclFloat32", 2)
    tr.stop(op)
    tr.end_group(ga, g)
    tr.kernel(1, op, 0, t + 100000, t + 109000)
    tr.kernel(1, op, 1, t + 100100, t + 108800)
    # a DDA AllReduce whose Group event opened and closed with nothing in it
    ga, apis, g = tr.group(1, [(512, "AllReduce", 65536, "ncclFloat32")])
    tr.end_group(ga, g)
    simple_coll(tr, 1, 1, seq, "AllReduce", 1048576, "ncclFloat32", [0, 1], t + 200000, 11000)
    dda_alone("AllReduce", 262144)
    tr.finalize(1)
    tr.write("dda.jsonl")


def main():
    late_channel(5, "late_channel.jsonl")
    late_channel(4, "late_channel_v4.jsonl")
    channels()
    no_ptimer()
    no_kernel()
    garbage_nch()
    garbage_nch_late()
    dda()
    print("wrote", sorted(os.listdir(OUT)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
