#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A real PyTorch training job for the GPU truth harness (tools/validate/truth/run.sh,
SET=torch): CUPTI's kernel times (torch.profiler) beside the plugin's records, written in the
form compare.py reads.

    python3 -m torch.distributed.run --nproc-per-node 2 torch_ddp.py OUT STEPS [ddp|fsdp2]

ddp (default) is described below. fsdp2 trains the same model with FSDP2 (fully_shard on
every layer and on the model): each step all-gathers each layer's parameters before its
forward and backward and reduce-scatters its gradients after, so a step issues about 22
AllGathers and 11 ReduceScatters, on streams of their own, while the host runs ahead.

Two ranks (one process each) train one model with DistributedDataParallel, both on GPU 0 by
default (NCCL >= 2.30 with NCCL_MULTI_RANK_GPU_ENABLE=1, preloaded in place of PyTorch's own) or
one per GPU with TRUTH_DEVICES=0,1. The model is the one the issue measured: two 2048-wide
layers whose gradients go in 16 MiB buckets, then eight 256-wide layers, each in a bucket of its
own (about 256 KiB: bucket_cap_mb=0.25), so a step issues 2 large and about 9 small AllReduces
on NCCL's stream while the host runs ahead.

Each rank writes OUT/kernels-r<R>.csv (stream,start_ns,end_ns,kernel: its NCCL kernels, its
clock kernels and one marker_r<R> row naming its stream), OUT/ops-r<R>.csv (rank,k,name,bytes:
its ops in order, named by their kernel: DDP's construction issues one AllGather (parameter
shapes) and Broadcasts (parameters), which on NCCL's AllGatherV path run AllGather kernels and
produce no record; training issues AllReduce only) and
OUT/clock-r<R>.csv (rank,globaltimer_ns: what each clock kernel read). run.sh concatenates them.

Clock: a one-thread kernel (PTX, loaded through the CUDA driver with ctypes: no compiler
needed) stores %globaltimer, the clock NCCL's timestamps use; CUPTI times the same kernel, so
each one ties CUPTI's clock to the GPU timer (compare.py interpolates between them).
"""
import ctypes
import os
import re
import sys

import torch
import torch.distributed as dist

PTX = rb"""
.version 8.0
.target sm_90
.address_size 64
.visible .entry truth_clock(.param .u64 out)
{
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u64 %rd3, %globaltimer;
  st.global.u64 [%rd2], %rd3;
  ret;
}
"""
STREAM_BASE = 1000  # the synthetic stream id of rank R's kernels in kernels.csv


class Clock:
    """Launches truth_clock on the current stream; each launch fills one slot of a tensor."""

    def __init__(self, slots, dev):
        cu = ctypes.CDLL("libcuda.so.1")
        self.cu = cu
        self.mod, self.fn = ctypes.c_void_p(), ctypes.c_void_p()
        self.check(cu.cuModuleLoadData(ctypes.byref(self.mod), ctypes.c_char_p(PTX)), "cuModuleLoadData")
        self.check(cu.cuModuleGetFunction(ctypes.byref(self.fn), self.mod, b"truth_clock"), "cuModuleGetFunction")
        self.buf = torch.zeros(slots, dtype=torch.int64, device=dev)
        self.n = 0

    @staticmethod
    def check(rc, what):
        if rc != 0:
            raise SystemExit("torch_ddp: %s failed (CUresult %d)" % (what, rc))

    def mark(self):
        if self.n >= self.buf.numel():
            return
        arg = ctypes.c_uint64(self.buf.data_ptr() + 8 * self.n)
        params = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.pointer(arg), ctypes.c_void_p))
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        self.check(self.cu.cuLaunchKernel(self.fn, 1, 1, 1, 1, 1, 1, 0, stream, params, None), "cuLaunchKernel")
        self.n += 1

    def values(self):
        return self.buf[: self.n].tolist()


def kernel_events(prof):
    """(start_ns, end_ns, name) of every GPU kernel CUPTI recorded, in CUPTI's clock."""
    out = []
    for e in prof.profiler.kineto_results.events():
        if not str(e.device_type()).endswith("CUDA"):
            continue
        if hasattr(e, "start_ns"):
            s, d = e.start_ns(), e.duration_ns()
        else:
            s, d = e.start_us() * 1000, e.duration_us() * 1000
        out.append((int(s), int(s) + int(d), e.name()))
    return sorted(out)


def op_name(kernel):
    m = re.search(r"nccl\w*?_(AllReduce|AllGather|Broadcast|ReduceScatter|Reduce|SendRecv)", kernel)
    if not m:
        return None
    return m.group(1)


def main():
    out, steps = sys.argv[1], int(sys.argv[2])
    mode = sys.argv[3] if len(sys.argv) > 3 else "ddp"
    if mode not in ("ddp", "fsdp2"):
        raise SystemExit("torch_ddp: model %r: ddp or fsdp2" % mode)
    rank = int(os.environ["RANK"])
    devs = [int(d) for d in os.environ.get("TRUTH_DEVICES", "0,0").split(",")]
    dev = torch.device("cuda", devs[rank % len(devs)])
    torch.cuda.set_device(dev)
    torch.zeros(1, device=dev)  # the primary context, current on this thread, before the driver calls
    clock = Clock(steps + 8, dev)
    acts = [torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        clock.mark()
        dist.init_process_group("nccl", device_id=dev)
        torch.manual_seed(1)
        wide, narrow = 2048, 256
        layers = [torch.nn.Linear(wide, wide), torch.nn.Linear(wide, wide), torch.nn.Linear(wide, narrow)]
        layers += [torch.nn.Linear(narrow, narrow) for _ in range(8)]
        model = torch.nn.Sequential(*layers).to(dev)
        if mode == "fsdp2":
            from torch.distributed.fsdp import fully_shard
            for layer in layers:
                fully_shard(layer)
            ddp = fully_shard(model)
        else:
            ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[dev.index], bucket_cap_mb=0.25)
        opt = torch.optim.SGD(ddp.parameters(), lr=1e-4)
        x = torch.randn(64, wide, device=dev)
        # TRUTH_SYNC_EVERY=N: read the loss every N steps, as a training loop that logs it
        # does (the host waits for the GPU there); 0 (default): never, the host runs ahead
        sync_every = int(os.environ.get("TRUTH_SYNC_EVERY", "0"))
        for i in range(steps):
            opt.zero_grad(set_to_none=True)
            loss = ddp(x).square().mean()
            loss.backward()
            opt.step()
            if sync_every and i % sync_every == sync_every - 1:
                loss.item()
            if i % 25 == 0:
                clock.mark()
        torch.cuda.synchronize()
        clock.mark()
        torch.cuda.synchronize()
    st = STREAM_BASE + rank
    ks = kernel_events(prof)
    nccl = [(s, e, n) for s, e, n in ks if op_name(n)]
    clocks = [(s, e, n) for s, e, n in ks if "truth_clock" in n]
    gpu = clock.values()
    if len(clocks) != len(gpu):
        raise SystemExit("torch_ddp: rank %d: %d clock kernels timed for %d launched" % (rank, len(clocks), len(gpu)))
    with open(os.path.join(out, "kernels-r%d.csv" % rank), "w") as f:
        f.write("%d,0,0,marker_r%d\n" % (st, rank))
        for s, e, n in nccl + clocks:
            f.write("%d,%d,%d,%s\n" % (st, s, e, n.replace(",", ";")))
    with open(os.path.join(out, "ops-r%d.csv" % rank), "w") as f:
        for k, (_, _, n) in enumerate(nccl):
            f.write("%d,%d,%s,0\n" % (rank, k, op_name(n)))
    with open(os.path.join(out, "clock-r%d.csv" % rank), "w") as f:
        for v in gpu:
            f.write("%d,%d\n" % (rank, v))
    print("torch_ddp: rank %d: %d NCCL kernels (%s), %d clock marks" % (
        rank, len(nccl), ", ".join("%s %d" % (n, sum(1 for *_, k in nccl if op_name(k) == n))
                                    for n in sorted({op_name(k) for *_, k in nccl})), len(gpu)), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
