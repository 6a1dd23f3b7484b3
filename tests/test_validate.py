#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The GPU validation's comparison logic (tools/validate/compare.py), on data built here with
known answers, so that CI (no GPU) covers it:
  validate.join      two ranks, two communicators (ids not in group order), an extra PyTorch
                     op before the workload's, one record missing, P2P Send/Recv: coverage,
                     errors and bus bandwidth equal the values computed by hand
  validate.targets   a 3% median error at 64 MiB misses the 2% target; 100% coverage and 1%
                     pass
  validate.recorded  the data recorded on 2 x H200 (tests/data/validation: the workload's
                     ops and the plugin's logs): the comparison reproduces, line for line, the
                     table the GPU run printed (expected-compare.md)
  validate.recorded.nccl, .kernel  the same against the tighter references: events on NCCL's
                     stream (expected-compare-nccl.md), CUPTI kernel durations
                     (expected-compare-kernel.md)
"""
import json
import os
import sys
import tempfile

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "lib"))  # harness, oracles, receivers
sys.path.insert(0, os.path.join(HERE, "..", "tools", "validate"))
import compare  # noqa: E402
import harness  # noqa: E402

MIB = 1 << 20


def write_case(tmp, err=0.01):
    """Rank r: default group AllReduce 1 MiB x3 + SendRecv 1 MiB x1; second group AllReduce
    64 MiB x2. Plugin times = CUDA time x (1 + err)."""
    ops_dir, log_dir = os.path.join(tmp, "ops"), os.path.join(tmp, "logs")
    os.makedirs(ops_dir)
    os.makedirs(log_dir)
    for rank in (0, 1):
        ops = []
        for i in range(3):
            ops.append({"group": "default", "op": "AllReduce", "size": MIB, "warmup": i == 0,
                        "expect": [["AllReduce", MIB]], "cuda_ns": None if i == 0 else 10000})
        ops.append({"group": "default", "op": "SendRecv", "size": MIB, "warmup": False,
                    "expect": [["Send", MIB], ["Recv", MIB]], "cuda_ns": 20000})
        for i in range(2):
            ops.append({"group": "second", "op": "AllReduce", "size": 64 * MIB, "warmup": False,
                        "expect": [["AllReduce", 64 * MIB]], "cuda_ns": 400000})
        with open(os.path.join(ops_dir, "ops-rank%d.json" % rank), "w") as f:
            json.dump({"rank": rank, "world": 2, "ops": ops}, f)
        lines = []

        def rec(comm, kind, func, sn, size, ns):
            p = "coll_" if kind == "coll" else "p2p_"
            perf = {kind if kind == "p2p" else "coll": func, p + "sn": sn,
                    p + "msg_size_bytes": size, p + "exec_time_ns": ns,
                    p + "busbw_gbs": size / ns * (1.0 if kind == "p2p" else 1.0),
                    p + "timing_source": "kernel_gpu"}
            lines.append(json.dumps({"header": {"id": comm, "rank": rank, "n_ranks": 2},
                                     (kind + "_perf"): perf}))
        # default group is comm 0xbb: an extra 4-byte... no: an extra 1 MiB PyTorch AllReduce
        # first (sn 0), then the workload's (sn 1..3), the last one missing on rank 1
        rec("0xbb", "coll", "AllReduce", 0, 4 * MIB, 5000)
        for i in range(3):
            if rank == 1 and i == 2:
                continue
            rec("0xbb", "coll", "AllReduce", 1 + i, MIB, int(10000 * (1 + err)))
        rec("0xbb", "p2p", "Send", 0, MIB, int(20000 * (1 + err)))
        rec("0xbb", "p2p", "Recv", 1, MIB, int(20000 * (1 + err)))
        # second group is comm 0xaa (sorts first)
        for i in range(2):
            rec("0xaa", "coll", "AllReduce", i, 64 * MIB, int(400000 * (1 + err)))
        lines.append(json.dumps({"header": {"id": "0xbb", "rank": rank}, "dump_stats": {}}))
        with open(os.path.join(log_dir, "h-pid%d.log" % rank), "w") as f:
            f.write("\n".join(lines) + "\n")
    return ops_dir, log_dir


def case_join(a):
    with tempfile.TemporaryDirectory() as tmp:
        ops_dir, log_dir = write_case(tmp)
        recs, bad = compare.load_records(log_dir)
        rows = compare.join(compare.load_ops(ops_dir), recs)
        s = {(x["op"], x["func"], x["size"]): x for x in compare.summarize(rows)}
        problems = []
        ar1 = s[("AllReduce", "AllReduce", MIB)]
        if (ar1["issued"], ar1["found"]) != (6, 5):
            problems.append("1 MiB AllReduce found/issued %d/%d, want 5/6" % (ar1["found"], ar1["issued"]))
        if abs(ar1["err_median"] - 0.01) > 1e-9:
            problems.append("1 MiB error %r, want 0.01" % ar1["err_median"])
        ar64 = s[("AllReduce", "AllReduce", 64 * MIB)]
        if (ar64["issued"], ar64["found"]) != (4, 4):
            problems.append("64 MiB found/issued %d/%d, want 4/4" % (ar64["found"], ar64["issued"]))
        want_bw = 64 * MIB / 400000 * 1.0   # AllReduce on 2 ranks: factor 2(n-1)/n = 1
        if abs(ar64["busbw_cuda_median"] - want_bw) > 1e-9:
            problems.append("CUDA busbw %r, want %r" % (ar64["busbw_cuda_median"], want_bw))
        for func in ("Send", "Recv"):
            x = s[("SendRecv", func, MIB)]
            if (x["issued"], x["found"]) != (2, 2):
                problems.append("%s found/issued %d/%d, want 2/2" % (func, x["found"], x["issued"]))
        fails = compare.targets(compare.summarize(rows))
        if not any("coverage" in f for f in fails):
            problems.append("the missing record is not reported as a missed target: %s" % fails)
        if problems:
            return False, "FAIL validate.join: " + "; ".join(problems)
        return True, "OK validate.join"


def case_targets(a):
    with tempfile.TemporaryDirectory() as tmp:
        ops_dir, log_dir = write_case(tmp, err=0.03)
        summary = compare.summarize(compare.join(compare.load_ops(ops_dir),
                                                 compare.load_records(log_dir)[0]))
        fails = compare.targets(summary)
        big = [f for f in fails if "64 MiB" in f and "error" in f]
        small = [f for f in fails if "1 MiB" in f and "error" in f]
        if not big or small:
            return False, "FAIL validate.targets: %s" % fails
        return True, "OK validate.targets: %s" % big[0]


def recorded_case(ref):
    """The recorded run's table against one reference, reproduced line for line."""
    expected = {"cuda": "expected-compare.md", "nccl": "expected-compare-nccl.md",
                "kernel": "expected-compare-kernel.md"}[ref]
    name = "validate.recorded" + ("" if ref == "cuda" else "." + ref)

    def fn(a):
        import tarfile
        d = os.path.join(HERE, "data", "validation")
        with tempfile.TemporaryDirectory() as tmp:
            with tarfile.open(os.path.join(d, "validation-data.tgz")) as t:
                t.extractall(tmp)
            summary = compare.summarize(compare.join(
                compare.load_ops(os.path.join(tmp, "ops")),
                compare.load_records(os.path.join(tmp, "logs"))[0], ref=ref))
        got = compare.markdown(summary).splitlines()
        with open(os.path.join(d, expected)) as f:
            want = [l.rstrip("\n") for l in f if l.startswith("|")]
        if got != want:
            diff = [(w, g) for w, g in zip(want, got) if w != g][:3]
            return False, "FAIL %s: %d vs %d table lines; first differences %s" % (
                name, len(want), len(got), diff)
        return True, "OK %s: %d table lines reproduced" % (name, len(got))
    return harness.Case(name, fn, labels=["selftest"])


def cases():
    return [harness.Case("validate.join", case_join, labels=["selftest"]),
            harness.Case("validate.targets", case_targets, labels=["selftest"]),
            recorded_case("cuda"), recorded_case("nccl"), recorded_case("kernel")]


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0], needs_binaries=False))
