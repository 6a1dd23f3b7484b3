#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Prometheus mode on real GPUs: is each file named after the GPU's UUID and labelled with its
ordinal, as the CUDA driver loaded in the process reports them (src/sink/device.c)?

Runs AllReduce on two communicators (the default group and a second one) for --seconds, long
enough for one periodic Prometheus dump (NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS=30 s,
the minimum), then copies the .prom files to --out before teardown (the last communicator's
teardown removes a device's file) and writes what PyTorch says of the device.
    NCCL_INSPECTOR_PROM_DUMP=1 ... python3 -m torch.distributed.run --nproc-per-node 2 \\
        tools/validate/prom_identity.py --dump DIR --out OUT
"""
import argparse
import glob
import json
import os
import shutil
import time

import torch
import torch.distributed as dist
from distsetup import init_nccl

ap = argparse.ArgumentParser()
ap.add_argument("--dump", required=True, help="NCCL_INSPECTOR_DUMP_DIR")
ap.add_argument("--out", required=True)
ap.add_argument("--seconds", type=float, default=34.0)
a = ap.parse_args()
rank, world, local = init_nccl()
second = dist.new_group(ranks=list(range(world)))
x = torch.ones(1 << 20, device="cuda")
t0, n = time.time(), 0
done = torch.zeros(1, device="cuda")
while not done.item():   # every rank must issue the same ops: rank 0's clock decides
    for _ in range(100):
        dist.all_reduce(x)
        dist.all_reduce(x, group=second)
        n += 2
    done.fill_(1.0 if rank == 0 and time.time() - t0 >= a.seconds else 0.0)
    dist.broadcast(done, src=0)
torch.cuda.synchronize()
dist.barrier()
os.makedirs(a.out, exist_ok=True)
props = torch.cuda.get_device_properties(local)
with open(os.path.join(a.out, "device-rank%d.json" % rank), "w") as f:
    json.dump({"rank": rank, "local_rank": local, "uuid": str(props.uuid), "name": props.name,
               "ops": n, "files": sorted(os.path.basename(p) for p in glob.glob(a.dump + "/*"))}, f)
if rank == 0:
    for p in glob.glob(os.path.join(a.dump, "*.prom")):
        shutil.copy(p, a.out)
dist.barrier()
dist.destroy_process_group()
