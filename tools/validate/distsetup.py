# SPDX-License-Identifier: Apache-2.0
"""What every GPU validation script does first (one process per GPU, started by
torch.distributed.run), and the size lists they take.

    from distsetup import init_nccl, parse_sizes
    rank, world, local = init_nccl()
"""
import os

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB


def init_nccl():
    """The NCCL process group, and this process's GPU: (rank, world size, local rank)."""
    import torch
    import torch.distributed as dist
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    local = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(local)
    return rank, dist.get_world_size(), local


def parse_sizes(s):
    """ "8K,1M,1G" -> bytes (binary suffixes K, M, G; fractions allowed)."""
    out = []
    for tok in s.split(","):
        tok = tok.strip().upper()
        mult = 1
        for suf, m in (("K", KIB), ("M", MIB), ("G", GIB)):
            if tok.endswith(suf):
                mult, tok = m, tok[:-1]
        out.append(int(float(tok) * mult))
    return out
