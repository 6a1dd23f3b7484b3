#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""inspector-replay's trace loader at the edges of its ranges (tools/replay/trace_load.c), where
tools/dev/mutate.py's mutants survived the hostile-input tests:
  replay.rank-range   an init line's rank is in [0, nranks): rank 1 of 2 replays (exit 0, its
                      record written); rank 2 of 2 names no rank of its communicator: the
                      replay exits non-zero and says `FILE:1: "rank" 2 out of range [0, 1]`
"""
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402

INIT = '{"t":1,"tid":100,"cb":"init","ver":5,"ctx":1,"comm":"0x77","name":"","nnodes":1,' \
       '"nranks":2,"rank":%d,"mask":70}\n'
REST = ['{"t":2,"tid":100,"cb":"start","ctx":1,"id":3,"type":1,"parent":0,"rank":%d}\n',
        '{"t":3,"tid":100,"cb":"start","ctx":1,"id":4,"type":2,"parent":0,"rank":%d,"seq":0,'
        '"func":"AllReduce","count":1048576,"root":0,"dtype":"ncclFloat32","nch":1,"nwarps":16,'
        '"algo":"RING","proto":"SIMPLE","pgroup":3}\n',
        '{"t":4,"tid":100,"cb":"start","ctx":1,"id":5,"type":64,"parent":4,"rank":%d,"ch":0,'
        '"ptimer":1000000}\n',
        '{"t":5,"tid":100,"cb":"record","id":5,"state":22,"ptimer":1012000}\n',
        '{"t":6,"tid":100,"cb":"stop","id":5}\n', '{"t":7,"tid":100,"cb":"stop","id":4}\n',
        '{"t":8,"tid":100,"cb":"stop","id":3}\n', '{"t":9,"tid":100,"cb":"finalize","ctx":1}\n']


def replay(a, wd, rank):
    tr = os.path.join(wd.path, "rank%d.jsonl" % rank)
    with open(tr, "w") as f:
        f.write(INIT % rank)
        f.writelines(l % rank if "%d" in l else l for l in REST)
    dump = os.path.join(wd.dump, str(rank))
    os.makedirs(dump)
    r = harness.run(harness.replay_cmd(a.replay, a.plugin, [tr]), harness.make_env({}, dump_dir=dump),
                    wd.cwd, a.timeout)
    records = 0
    for name in os.listdir(dump):
        with open(os.path.join(dump, name), errors="replace") as f:
            records += sum('"coll_perf":{' in line for line in f)
    return tr, r, records


def rank_range_case(a):
    name = "replay.rank-range"
    with harness.Workdir(a.keep, "replay-edges") as wd:
        problems = []
        _, r, records = replay(a, wd, 1)
        if r.timed_out or r.rc != 0 or records != 1:
            problems.append("rank 1 of 2: exit %s, %d records (0 and 1 expected)" % (r.rc, records))
        tr, r, _ = replay(a, wd, 2)
        pat = r'inspector-replay: %s:1: .*"rank" 2 out of range \[0, 1\]' % re.escape(tr)
        if r.timed_out or r.rc in (0, None):
            problems.append("rank 2 of 2: exit %s, non-zero expected" % r.rc)
        if not re.search(pat, r.stderr):
            problems.append("rank 2 of 2: stderr lacks /%s/: %s" % (pat, r.stderr[-1000:]))
        problems += harness.sanitizer_reports(r.stderr)
        if problems:
            wd.failed = True
            return False, "FAIL %s: %s" % (name, "; ".join(problems))
        return True, "OK %s: rank 1 of 2 replayed, rank 2 of 2 refused" % name


def cases():
    return [harness.Case("replay.rank-range", rank_range_case, labels=["replay-input"], timeout=60)]


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))
