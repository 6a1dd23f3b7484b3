#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Summarise interleaved latency runs (latency.py output, one JSON line per run and size):
per size and configuration the median over runs of each run's median per-op latency, and
the ratios to no plugin and to the do-nothing plugin (the floor: NCCL's own cost of
producing kernel events).
    overhead.py LATENCY.jsonl
"""
import json
import statistics
import sys
from collections import defaultdict

ORDER = ["none", "off", "null", "on"]
NAMES = {"none": "no plugin", "off": "Inspector, NCCL_INSPECTOR_ENABLE=0",
         "null": "do-nothing plugin (same events)", "on": "Inspector enabled"}


def summarize(lines):
    runs = defaultdict(list)
    for l in lines:
        runs[(l["size"], l["label"])].append(l["us"])
    out = {}
    for (size, label), v in runs.items():
        out.setdefault(size, {})[label] = (statistics.median(v), len(v))
    return out


def markdown(table):
    rows = ["| size | configuration | median latency (us) | runs | vs no plugin | vs do-nothing plugin |",
            "| --- | --- | --- | --- | --- | --- |"]
    for size in sorted(table):
        t = table[size]
        base = t.get("none", (None,))[0]
        floor = t.get("null", (None,))[0]
        for label in ORDER:
            if label not in t:
                continue
            us, n = t[label]
            rel = lambda ref: "-" if not ref else "%+.1f%%" % (100.0 * (us / ref - 1))
            rows.append("| %d B | %s | %.2f | %d | %s | %s |" % (size, NAMES[label], us, n,
                                                                  rel(base), rel(floor)))
    return "\n".join(rows)


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        print(markdown(summarize([json.loads(l) for l in f if l.strip()])))
