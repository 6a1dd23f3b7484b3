#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Small-message AllReduce latency, as nccl-tests measures it: N back-to-back AllReduce on one
stream between two CUDA events, per-op mean; several repeats, their median. One process per GPU:
    python3 -m torch.distributed.run --nproc-per-node 2 tools/validate/latency.py --label L --out F
Rank 0 appends one JSON line per size to F: {"label", "size", "us": median per-op latency, "reps"}.
"""
import argparse
import json
import statistics

import torch
import torch.distributed as dist
from distsetup import init_nccl


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--label", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--sizes", default="8,1024,65536")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=7)
    a = ap.parse_args()
    init_nccl()
    x = torch.ones(65536 // 4, device="cuda")
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    lines = []
    for size in [int(v) for v in a.sizes.split(",")]:
        t = x[:max(1, size // 4)]
        for _ in range(200):
            dist.all_reduce(t)
        torch.cuda.synchronize()
        reps = []
        for _ in range(a.reps):
            dist.barrier()
            torch.cuda.synchronize()
            s.record()
            for _ in range(a.n):
                dist.all_reduce(t)
            e.record()
            e.synchronize()
            reps.append(s.elapsed_time(e) * 1000.0 / a.n)
        lines.append({"label": a.label, "size": size, "us": statistics.median(reps), "reps": reps})
    if dist.get_rank() == 0:
        with open(a.out, "a") as f:
            for l in lines:
                f.write(json.dumps(l) + "\n")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
