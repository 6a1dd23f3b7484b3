#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Turn a recorded trace's kernel timestamps into what RCCL hands a profiler on AMD GPUs.

RCCL 2.28.3 on MI300X reads its kernel timer with wall_clock64(): ticks of a constant-rate
clock (100 MHz there, so 10 ns a tick), and passes those ticks as pTimer where NCCL passes
nanoseconds [ABI "Reported for RCCL"].  to_ticks() copies a trace (format: tests/data/README.md)
with every kernel pTimer replaced by the tick count of a `khz` kHz clock that started with the
GPU's global timer:

    ticks = floor(ptimer_ns * khz / 10^6)

applied to the "ptimer" of KernelCh start lines (type 64) and of record lines that carry one
(the KernelCh stop, state 22).  A zero pTimer ("none recorded") stays 0.  Every other byte of
every line is kept as it was: the host times "t", ids, order, other fields, line endings.

Standard library only; python3 >= 3.9.  As a script:
    tick_trace.py SRC DST [--khz N]      (DST ending in .gz is written gzip-compressed)
"""

import argparse
import gzip
import json
import re
import sys

TYPE_KERNEL_CH = 64
# The "ptimer" member's value in a line's text, whatever the spacing around the colon.
PTIMER = re.compile(r'("ptimer"\s*:\s*)([0-9]+)')


def _open_in(path):
    with open(path, "rb") as f:
        magic = f.read(2)
    return gzip.open(path, "rb") if magic == b"\x1f\x8b" else open(path, "rb")


def _open_out(path):
    if path.endswith(".gz"):
        # mtime 0: the same input gives the same bytes
        return gzip.GzipFile(path, "wb", mtime=0)
    return open(path, "wb")


def ns_to_ticks(ns, khz):
    """Ticks of a khz kHz clock in ns nanoseconds, rounded down (integers, no float error)."""
    return ns * khz // 1_000_000


def convert_line(raw, khz):
    """One line (bytes, with its newline if any): converted if it carries a kernel pTimer."""
    text = raw.decode("utf-8")
    if '"ptimer"' not in text:
        return raw
    ev = json.loads(text)
    is_kernel_start = ev.get("cb") == "start" and ev.get("type") == TYPE_KERNEL_CH
    is_record = ev.get("cb") == "record"
    if not (is_kernel_start or is_record) or not isinstance(ev.get("ptimer"), int):
        return raw
    want = ns_to_ticks(ev["ptimer"], khz)
    out, n = PTIMER.subn(lambda m: m.group(1) + str(want), text)
    if n != 1:
        raise ValueError("line has %d \"ptimer\" members: %r" % (n, text[:120]))
    return out.encode("utf-8")


def to_ticks(src_path, dst_path, khz=100000):
    """Copy the trace at src_path (gzip or plain) to dst_path with kernel pTimers in ticks of a
    khz kHz clock.  Returns how many pTimers were converted."""
    if not isinstance(khz, int) or khz <= 0:
        raise ValueError("khz must be a positive int, got %r" % (khz,))
    n = 0
    with _open_in(src_path) as fin, _open_out(dst_path) as fout:
        for raw in fin:
            out = convert_line(raw, khz)
            n += out is not raw
            fout.write(out)
    return n


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--khz", type=int, default=100000,
                    help="the clock's rate in kHz (default 100000: 100 MHz, as on MI300X)")
    a = ap.parse_args(argv)
    if a.khz <= 0:
        ap.error("--khz must be positive")
    n = to_ticks(a.src, a.dst, a.khz)
    print("%s: %d pTimers converted to ticks of a %d kHz clock" % (a.dst, n, a.khz))
    return 0


if __name__ == "__main__":
    sys.exit(main())
