#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Sampled-timing experiment on GPUs (tools/validate/sampling_on_gpus.sh): two steps.

    sampling_report.py records DUMPDIR LABEL NGPU ITERS REPS [VAR=VALUE ...]
        one JSON line about one Inspector run of nccl_latency.cu: records written, ops issued
        (NGPU x 3 sizes x (200 warm-up + REPS x ITERS)), their ratio, drops; with
        NCCL_INSPECTOR_SAMPLE_WINDOW_MS/_PERIOD_MS, how many records started (GPU clock) inside
        a wall-clock window (+-1 ms).
    sampling_report.py summary LATENCY.jsonl RECORDS.jsonl
        the table: per size and configuration, the fastest run's median per-op latency (the
        machine is bimodal), against no plugin and against timing every op; and the records.
"""
import glob
import json
import re
import sys
from collections import defaultdict

START = re.compile(r'"coll_start_ts_ns":([0-9]+)')


def records(argv):
    dump, label, ngpu, iters, reps = argv[0], argv[1], int(argv[2]), int(argv[3]), int(argv[4])
    env = dict(kv.split("=", 1) for kv in argv[5:])
    win = int(env.get("NCCL_INSPECTOR_SAMPLE_WINDOW_MS", 0)) * 10**6
    per = int(env.get("NCCL_INSPECTOR_SAMPLE_PERIOD_MS", 0)) * 10**6
    n = inside = dropped = 0
    sampling = None
    for path in glob.glob(dump + "/*.log"):
        with open(path) as f:
            for line in f:
                if '"dump_stats"' in line:
                    s = json.loads(line)["dump_stats"]
                    dropped += s["coll_dropped_since_last_dump"]
                    sampling = s.get("sampling", sampling)
                    continue
                n += 1
                if per:
                    m = START.search(line)
                    phase = int(m.group(1)) % per
                    inside += phase < win + 10**6 or phase > per - 10**6
    issued = ngpu * 3 * (200 + reps * iters)
    out = {"label": label, "records": n, "issued": issued, "ratio": n / issued,
           "dropped": dropped, "sampling": sampling}
    if per:
        out["inside_windows"] = inside
    print(json.dumps(out))


def summary(lat_path, rec_path):
    runs = defaultdict(list)
    with open(lat_path) as f:
        for l in f:
            if l.strip():
                d = json.loads(l)
                runs[(d["size"], d["label"])].append(d["us"])
    labels = []
    for _, lab in runs:
        if lab not in labels:
            labels.append(lab)
    print("Per-op latency of the fastest run (each run: the median of its repeats), in us; the")
    print("machine is bimodal, so the fastest of several interleaved rounds is the fair comparison.")
    print()
    ref2 = "full" if "full" in labels else "null"   # every op timed, else the do-nothing plugin
    print("| size | configuration | fastest run (us) | runs | vs no plugin | vs %s | all runs |"
          % ("every op timed" if ref2 == "full" else "do-nothing plugin"))
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for size in sorted({s for s, _ in runs}):
        med = {lab: min(runs[(size, lab)]) for lab in labels if (size, lab) in runs}
        for lab in labels:
            if lab not in med:
                continue
            rel = lambda ref: "-" if ref not in med else "%+.1f%%" % (100 * (med[lab] / med[ref] - 1))
            print("| %d B | %s | %.2f | %d | %s | %s | %s |" % (
                size, lab, med[lab], len(runs[(size, lab)]), rel("none"), rel(ref2),
                " ".join("%.1f" % v for v in runs[(size, lab)])))
    print()
    if rec_path == "/dev/null":
        return
    print("| configuration | records / ops issued (per run) | dropped | in a window | sampling (dump_stats) |")
    print("| --- | --- | --- | --- | --- |")
    with open(rec_path) as f:
        for l in f:
            if l.strip():
                d = json.loads(l)
                print("| %s | %d / %d = %.4f | %d | %s | %s |" % (
                    d["label"], d["records"], d["issued"], d["ratio"], d["dropped"],
                    "%d / %d" % (d["inside_windows"], d["records"]) if "inside_windows" in d
                    else "-", json.dumps(d["sampling"])))


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "records":
        records(sys.argv[2:])
    elif len(sys.argv) == 4 and sys.argv[1] == "summary":
        summary(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
