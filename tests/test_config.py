#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Filters set by the environment, checked against the oracle configured the same way:
  minsize.0.*        NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES=0: every complete op, 1 KiB ones too
  minsize.1M.*       =1048576: only ops of at least 1 MiB
  nop2p.*            NCCL_INSPECTOR_ENABLE_P2P=0: no p2p record at all, every collective
  nokernreq.*        NCCL_INSPECTOR_REQUIRE_KERNEL_TIMING=0 on traces whose every op has GPU
                     timing: same records, all still kernel_gpu (no CPU-timed duplicates);
                     ce_ag (copy-engine collectives: CeColl events, no kernel): every one
                     host-timed (collective_cpu, coll_algo "CE")
"""
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402
from harness import fixture_case  # noqa: E402

MIN = "NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES"
P2P = "NCCL_INSPECTOR_ENABLE_P2P"
REQ = "NCCL_INSPECTOR_REQUIRE_KERNEL_TIMING"
TORCH = ["2.28.9/torch-1735", "2.28.9/torch-1736"]


def cases():
    out = []
    for f in ("2.28.9/ar", "2.28.9/sr", "2.28.9/ag", "2.27.7/sr"):
        tag = f.replace("/", ".")
        out.append(fixture_case("minsize.0." + tag, [f], labels=["config"], env_extra={MIN: "0"}))
        out.append(fixture_case("minsize.1M." + tag, [f], labels=["config"],
                                env_extra={MIN: "1048576"}))
    out.append(fixture_case("minsize.0.torch-pair", TORCH, labels=["config"],
                            env_extra={MIN: "0"}))
    for f in ("2.28.9/sr", "2.27.7/sr", "2.30.7/sr"):
        out.append(fixture_case("nop2p." + f.replace("/", "."), [f], labels=["config"],
                                env_extra={P2P: "0"}, abi="trace"))
    out.append(fixture_case("nop2p.torch-pair", TORCH, labels=["config"], env_extra={P2P: "0"}))
    out.append(fixture_case("nop2p.minsize.0.torch-pair", TORCH, labels=["config"],
                            env_extra={P2P: "0", MIN: "0"}))
    for f in ("2.28.9/ar", "2.28.9/sr", "2.30.7/ce_ag"):
        out.append(fixture_case("nokernreq." + f.replace("/", "."), [f], labels=["config"],
                                env_extra={REQ: "0"}, abi="trace"))
    out.append(fixture_case("nokernreq.torch-pair", TORCH, labels=["config"],
                            env_extra={REQ: "0", MIN: "0"}))
    return out


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))
