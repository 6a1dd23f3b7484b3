#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Communicators of several sizes at once, with a planted straggler (issue 7's workload; runs on
any number of GPUs from 2): one process per GPU, launched with torch.distributed.run.

Communicators: the world; with 4 or more ranks also its two halves and the pairs (0,1), (2,3),
...; every rank takes part in each one it belongs to. For each communicator, size and
iteration, a CPU barrier (gloo: no NCCL op) lines the ranks up, then rank --late-rank sleeps
--late-us on the host before issuing its AllReduce (the others issue at once). Its kernels start
that much later, and so must its records' start timestamps (`coll_start_ts_ns`, the GPU timer):
`inspector-report` on the logs must name it as the straggler, about --late-us late.
NCCL_ALGO (Ring, Tree) may be set around it to compare algorithms.
    python3 -m torch.distributed.run --nproc-per-node N tools/validate/scale.py [--late-rank R]
"""
import argparse
import time

import torch
import torch.distributed as dist
from distsetup import init_nccl, parse_sizes


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--late-rank", type=int, default=-1, help="default: the last rank")
    ap.add_argument("--late-us", type=float, default=200.0)
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--sizes", default="1M,16M")
    a = ap.parse_args()
    rank, world, _ = init_nccl()
    late = a.late_rank if a.late_rank >= 0 else world - 1
    cpu = dist.new_group(backend="gloo")
    # new_group must be called by every rank for every group, in the same order
    comms = [("world", list(range(world)), None)]
    if world >= 4:
        half = world // 2
        comms += [("half%d" % i, r, None) for i, r in
                  enumerate((list(range(half)), list(range(half, world))))]
        comms += [("pair%d" % i, [2 * i, 2 * i + 1], None) for i in range(world // 2)]
    comms = [(name, ranks, dist.new_group(ranks=ranks) if name != "world" else None)
             for name, ranks, _ in comms]
    sizes = parse_sizes(a.sizes)
    x = torch.ones(max(sizes) // 4, device="cuda")
    n = 0
    for name, ranks, group in comms:
        for size in sizes:
            for _ in range(a.iters + 1):   # + a warm-up
                dist.barrier(group=cpu)
                if rank not in ranks:
                    continue
                if rank == late:
                    time.sleep(a.late_us / 1e6)
                dist.all_reduce(x[:size // 4], group=group)
                torch.cuda.synchronize()
                n += 1
    dist.barrier(group=cpu)
    if rank == 0:
        print("scale: %d ranks, communicators %s, rank %d late by %g us, %d ops on rank 0"
              % (world, [c[0] for c in comms], late, a.late_us, n), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
