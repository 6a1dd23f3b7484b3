#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Validation workload: every collective and point-to-point op over a range of sizes, on two
communicators, each op timed on the GPU with CUDA events, run with the Inspector plugin loaded.

Launch one process per GPU:
    python3 -m torch.distributed.run --nproc-per-node 2 tools/validate/workload.py --out DIR

Each rank writes DIR/ops-rank<r>.json: the ops it issued, in order, with the group ("default"
or "second"), NCCL's name for the op, the message size the plugin should report (count x
datatype size, per rank for AllGather/ReduceScatter as NCCL counts), and the CUDA-event time.
tools/validate/compare.py joins these with the plugin's records.

Timing: a CPU barrier (gloo, so that no NCCL op is added) lines the ranks up before each op;
then a GPU sleep kernel keeps the stream busy while the host enqueues the op, so that the
start event (recorded after the sleep) fires when the GPU is free to run the op, not before
the host has finished launching it (PyTorch's host-side cost per op is tens of us). PyTorch
runs the op on its NCCL stream after the start event and makes the current stream wait for
it, so the event interval is the kernel plus two cross-stream waits (a few microseconds).

With TORCH_NCCL_ENABLE_TIMING=1 in the environment, each op also gets a tighter reference:
PyTorch then records CUDA events on its NCCL stream itself, after the stream has waited for
ours and right around the NCCL call; Work._get_duration() returns that interval ("nccl_ns"),
which holds the kernel but not the cross-stream waits.

With --cupti, the timed loop runs under torch.profiler (CUPTI activity tracing): each NCCL
kernel's own start and end on the GPU, the tightest reference ("kernel_ns"). NCCL kernels are
matched to the issued ops in order (one kernel per op: a batched isend/irecv pair or an
all_to_all is one group, one kernel), and the kernel's name must hold the op's NCCL function.
"""
import argparse
import json
import os
import time

import torch
import torch.distributed as dist
from distsetup import MIB, init_nccl, parse_sizes

KERNEL_FUNC = {"AllReduce": "AllReduce", "AllGather": "AllGather", "ReduceScatter": "ReduceScatter",
               "Broadcast": "Broadcast", "Reduce": "Reduce", "SendRecv": "SendRecv",
               "AllToAll": "SendRecv"}


def attach_kernels(prof, ops_log, path):
    """Sets each op's "kernel_ns" from the CUPTI kernel records, matched in order."""
    prof.export_chrome_trace(path)
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    os.unlink(path)
    kernels = sorted((e for e in events if e.get("cat") == "kernel" and "nccl" in e["name"].lower()),
                     key=lambda e: e["ts"])
    if len(kernels) != len(ops_log):
        print("workload: %d NCCL kernels for %d ops: kernel times not attached"
              % (len(kernels), len(ops_log)), flush=True)
        return
    known = set(KERNEL_FUNC.values())
    for op, k in zip(ops_log, kernels):
        name = k["name"].split("(")[0]
        named = {f for f in known if "_%s_" % f in name + "_"}   # ncclDevKernel_AllReduce_Sum_...
        if named and KERNEL_FUNC[op["op"]] not in named:
            print("workload: kernel %s for op %s: kernel times not attached" % (k["name"], op["op"]),
                  flush=True)
            for o in ops_log:
                o.pop("kernel_ns", None)
            return
        op["kernel_ns"] = int(round(float(k["dur"]) * 1000))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--sizes", default="8K,64K,512K,1M,4M,16M,64M,256M,1G")
    ap.add_argument("--iters", type=int, default=20, help="timed iterations per op and size")
    ap.add_argument("--big-iters", type=int, default=5, help="iterations for sizes >= 256 MiB")
    ap.add_argument("--second-group-ops", default="AllReduce,AllGather",
                    help="ops also run on the second communicator")
    ap.add_argument("--ops", default="AllReduce,AllGather,ReduceScatter,Broadcast,Reduce,SendRecv,AllToAll")
    ap.add_argument("--cupti", action="store_true",
                    help="also time each op's NCCL kernel with CUPTI (torch.profiler)")
    ap.add_argument("--sleep-cycles", type=int, default=1000000,
                    help="GPU sleep before each timed op (about 0.5 ms at 1.98 GHz)")
    a = ap.parse_args()

    rank, world, local = init_nccl()
    dev = torch.device("cuda", local)
    cpu_barrier = dist.new_group(backend="gloo")
    second = dist.new_group(ranks=list(range(world)))
    groups = {"default": None, "second": second}
    peer = (rank + 1) % world
    prev = (rank - 1) % world

    sizes = parse_sizes(a.sizes)
    maxbytes = max(sizes) * world
    buf_in = torch.empty(maxbytes // 4 + world, dtype=torch.float32, device=dev).normal_()
    buf_out = torch.empty(maxbytes // 4 + world, dtype=torch.float32, device=dev)

    nccl_timing = os.environ.get("TORCH_NCCL_ENABLE_TIMING") == "1"

    def run(name, size, group):
        """Issues the op, waits for it on the current stream; returns its Work objects."""
        n = max(1, size // 4)
        x, y = buf_in[:n], buf_out[:n]
        kw = {"group": group, "async_op": True}
        if name == "AllReduce":
            works = [dist.all_reduce(x, **kw)]
        elif name == "AllGather":
            works = [dist.all_gather_into_tensor(buf_out[:n * world], x, **kw)]
        elif name == "ReduceScatter":
            works = [dist.reduce_scatter_tensor(y, buf_in[:n * world], **kw)]
        elif name == "Broadcast":
            works = [dist.broadcast(x, src=0, **kw)]
        elif name == "Reduce":
            works = [dist.reduce(x, dst=0, **kw)]
        elif name == "SendRecv":
            # even ranks send first; a batched isend/irecv pair is one NCCL group
            ops = [dist.P2POp(dist.isend, x, peer, group=group),
                   dist.P2POp(dist.irecv, y, prev, group=group)]
            works = list(dist.batch_isend_irecv(ops))
        elif name == "AllToAll":
            works = [dist.all_to_all_single(buf_out[:n * world], buf_in[:n * world], **kw)]
        else:
            raise ValueError(name)
        for w in works:
            w.wait()   # the current stream waits for the NCCL stream
        return works

    def nccl_ns(works):
        """The NCCL-stream events' interval (the longest, for a batch), or None."""
        if not nccl_timing:
            return None
        try:
            return int(max(w._get_duration() for w in works) * 1e6)
        except Exception:  # not available for this op / this PyTorch
            return None

    # What the plugin should write for one issued op: (NCCL function, size) list.
    def expected(name, size):
        n = max(1, size // 4) * 4
        if name == "SendRecv":
            return [("Send", n), ("Recv", n)] if world > 1 else []
        if name == "AllToAll":   # NCCL runs it as Send/Recv to every peer; the self ones untracked
            return [("Send", n), ("Recv", n)] * (world - 1)
        return [(name, n)]

    ops_log = []
    names = a.ops.split(",")
    second_ops = set(a.second_group_ops.split(",")) if a.second_group_ops else set()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    prof = None
    if a.cupti:
        from torch.profiler import ProfilerActivity, profile
        prof = profile(activities=[ProfilerActivity.CUDA])
        prof.__enter__()
    t0 = time.time()
    for gname, group in groups.items():
        for name in names:
            if gname == "second" and name not in second_ops:
                continue
            for size in sizes:
                iters = a.big_iters if size >= 256 * MIB else a.iters
                run(name, size, group)          # warm-up (recorded by the plugin too)
                ops_log.append({"group": gname, "op": name, "size": size, "warmup": True,
                                "expect": expected(name, size), "cuda_ns": None})
                for _ in range(iters):
                    dist.barrier(group=cpu_barrier)
                    torch.cuda.synchronize()
                    torch.cuda._sleep(a.sleep_cycles)
                    start.record()
                    works = run(name, size, group)
                    end.record()
                    end.synchronize()
                    ops_log.append({"group": gname, "op": name, "size": size, "warmup": False,
                                    "expect": expected(name, size),
                                    "cuda_ns": int(start.elapsed_time(end) * 1e6),
                                    "nccl_ns": nccl_ns(works)})
    torch.cuda.synchronize()
    elapsed = time.time() - t0
    os.makedirs(a.out, exist_ok=True)
    if prof is not None:
        prof.__exit__(None, None, None)
        attach_kernels(prof, ops_log, os.path.join(a.out, "trace-rank%d.json" % rank))
    with open(os.path.join(a.out, "ops-rank%d.json" % rank), "w") as f:
        json.dump({"rank": rank, "world": world, "ops": ops_log, "elapsed_s": elapsed,
                   "torch": torch.__version__,
                   "nccl": ".".join(map(str, torch.cuda.nccl.version()))}, f)
    if rank == 0:
        print("workload: %d ops per rank in %.1f s" % (len(ops_log), elapsed), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
