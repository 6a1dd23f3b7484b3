#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A CUDA-graph-captured loop of collectives (for recording fixtures): 4 AllReduce of 1 MiB
and 1 AllGather captured once in a graph, the graph replayed --replays times.
    python3 -m torch.distributed.run --nproc-per-node 2 tools/validate/graph.py

Teardown: on 2 x H200 with PyTorch 2.11, destroy_process_group() after a capture never
returned, with or without a profiler plugin (docs/VALIDATION.md, runs 3, 10, 11). The graph
is reset first; if teardown still takes more than --teardown-s seconds, every C stdio stream
is flushed (a recording plugin's trace file included) and the process exits at once.
"""
import argparse
import ctypes
import os
import sys
import threading

import torch
import torch.distributed as dist
from distsetup import init_nccl

ap = argparse.ArgumentParser()
ap.add_argument("--replays", type=int, default=5)
ap.add_argument("--teardown-s", type=float, default=20.0)
a = ap.parse_args()
_, world, _ = init_nccl()
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
    print("graph: %d replays of 5 captured collectives" % a.replays, flush=True)
g.reset()
del g
torch.cuda.synchronize()
t = threading.Thread(target=dist.destroy_process_group, daemon=True)
t.start()
t.join(a.teardown_s)
if t.is_alive():
    print("graph: rank %d: destroy_process_group still running after %g s; exiting"
          % (dist.get_rank(), a.teardown_s), file=sys.stderr, flush=True)
    ctypes.CDLL(None).fflush(None)
    os._exit(0)
