#!/usr/bin/env python3
"""A CUDA-graph-captured loop of collectives (for recording fixtures): 4 AllReduce of 1 MiB
and 1 AllGather captured once in a graph, the graph replayed --replays times.
    python3 -m torch.distributed.run --nproc-per-node 2 tools/validate/graph.py
"""
import argparse
import os

import torch
import torch.distributed as dist

ap = argparse.ArgumentParser()
ap.add_argument("--replays", type=int, default=5)
a = ap.parse_args()
dist.init_process_group("nccl")
local = int(os.environ.get("LOCAL_RANK", dist.get_rank()))
torch.cuda.set_device(local)
world = dist.get_world_size()
x = torch.ones(1 << 18, device="cuda")
y = torch.empty((1 << 18) * world, device="cuda")
dist.all_reduce(x)                      # warm-up outside the graph (creates the communicator)
torch.cuda.synchronize()
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
g = torch.cuda.CUDAGraph()
with torch.cuda.stream(s):
    with torch.cuda.graph(g, stream=s):
        for _ in range(4):
            dist.all_reduce(x)
        dist.all_gather_into_tensor(y, x)
torch.cuda.synchronize()
for _ in range(a.replays):
    g.replay()
torch.cuda.synchronize()
if dist.get_rank() == 0:
    print("graph: %d replays of 5 captured collectives" % a.replays)
dist.destroy_process_group()
