# SPDX-License-Identifier: Apache-2.0
"""A synthetic job that hangs, run for a test while it hangs (inspector-replay --hang-rank,
docs/CONTRACTS.md section 1, "A stuck op"): start it, wait until every process holds at its
stuck point (the ready files, never wall time), look at or copy what the plugin wrote while the
processes still run, then end the hold (SIGUSR1) and collect the exit.  Standard library only.

    with harness.Workdir(a.keep, "hang") as wd, \
            HangJob(a.replay, a.plugin, wd, ["--ranks", "16", "--nodes", "4", "--colls", "AllReduce",
                    "--sizes", "16K:256K", "--hang-rank", "5"],
                    env_extra={"NCCL_INSPECTOR_HANG_SECONDS": "1"}) as job:
        if job.wait_ready(a.timeout / 3):        # else job.problems says why
            h = job.truth_hang()                 # the truth file's hang object (whole by now)
            snap = job.copy_logs_when(os.path.join(wd.path, "copy"), stuck_seen(h), a.timeout / 3)
            # snap: {log name: [lines]}, also copied to wd.path/copy while every process ran:
            # inspector-report runs on that copy; stuck_hang_lines(snap, h) -> {rank: [hang lines]}
        job.release(a.timeout / 3)               # rc, stdout, stderr; a job left is killed

Without --hang-rank (--hang-hold-s alone) the same job holds with nothing stuck: the control.
With hang detection on, the plugin watches ops of every size: one below
NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES (8192 by default) writes no record but gets its hang line
(hang.plugin.small); with NCCL_INSPECTOR_HANG_SECONDS=0 such ops are not tracked at all.

The hold is long (hold_s, 600 s by default; the tests give their case's time, so that a test
killed on the way leaves no process holding for long) and is ended by the test, so nothing
depends on how fast the machine is: the only waits are bounded polls for something that must
come.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

POLL_S = 0.02


def synth_ranks(args):
    """--ranks N of a synthetic command line (8 when not given: CONTRACTS.md section 1)."""
    args = list(args)
    for i, x in enumerate(args):
        if x == "--ranks" and i + 1 < len(args):
            return int(args[i + 1])
        if x.startswith("--ranks="):
            return int(x.split("=", 1)[1])
    return 8


class HangJob:
    """One replay of a hung synthetic job, started at construction, in its own process group
    (start_new_session: the test signals only the processes it started).

    wd: a harness.Workdir; the plugin writes to wd.dump (NCCL_INSPECTOR_DUMP_DIR, unless env_extra
    says otherwise), the ready files go to wd.path/ready, the truth file to wd.path/truth.jsonl
    (each name + tag). procs: one process per rank (--procs). hold_s: --hang-hold-s, an upper
    bound only: release() ends the hold."""

    def __init__(self, replay, plugin, wd, synth_args, env_extra=None, procs=True, hold_s=600,
                 enable=True, quiet=True, tag=""):
        self.wd = wd
        self.ranks = synth_ranks(synth_args)
        self.ready_dir = os.path.join(wd.path, "ready" + tag)
        self.dump = os.path.join(wd.path, "dump" + tag)
        self.truth = os.path.join(wd.path, "truth%s.jsonl" % tag)
        os.makedirs(self.ready_dir)
        os.makedirs(self.dump, exist_ok=True)
        self.env_extra = dict(env_extra or {})
        self.env = harness.make_env(self.env_extra, dump_dir=self.dump, enable=enable)
        self.cmd = harness.replay_cmd(replay, plugin, procs=procs, synthetic=list(synth_args),
                                      truth=self.truth)
        self.cmd += ["--hang-hold-s", str(hold_s), "--hang-ready-dir", self.ready_dir]
        if quiet:
            self.cmd.append("--quiet")
        self.problems = []
        self.rc = self.stdout = self.stderr = None
        self.t0 = time.time()
        # output to files, not pipes: a job that holds for long never blocks on a full pipe
        self._out = open(os.path.join(wd.path, "stdout%s.txt" % tag), "w+b")
        self._err = open(os.path.join(wd.path, "stderr%s.txt" % tag), "w+b")
        self.proc = subprocess.Popen(self.cmd, env=self.env, cwd=wd.cwd, stdout=self._out,
                                     stderr=self._err, start_new_session=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        """A job never released (the test failed on the way) is killed, not left holding."""
        if self.proc.poll() is None:
            harness._kill_group(self.proc)
            self.proc.wait()
        for f in (self._out, self._err):
            if not f.closed:
                f.close()

    # -- while it hangs ---------------------------------------------------------------------

    def ready_files(self):
        """{rank: pid} of the ready files there now (CONTRACTS.md: DIR/rank-R holds "<pid>\\n")."""
        got = {}
        for name in os.listdir(self.ready_dir):
            if not name.startswith("rank-"):
                continue
            with open(os.path.join(self.ready_dir, name)) as f:
                got[int(name[5:])] = int(f.read())
        return got

    def wait_ready(self, bound_s):
        """Until every rank's ready file is there: True; False (and a problem) if the replay
        exited first or bound_s passed (a bound for a broken replay, not a timing)."""
        deadline = time.time() + bound_s
        while True:
            if len(self.ready_files()) == self.ranks:
                return True
            if self.proc.poll() is not None:
                self.problems.append("the replay exited (rc %s) before every rank was at its stuck "
                                     "point: ready files for ranks %s"
                                     % (self.proc.returncode, sorted(self.ready_files())))
                return False
            if time.time() > deadline:
                self.problems.append("after %.0f s, ready files for %d of %d ranks"
                                     % (bound_s, len(self.ready_files()), self.ranks))
                return False
            time.sleep(POLL_S)

    def running(self):
        """Whether the replay and every process named by a ready file still run."""
        if self.proc.poll() is not None:
            return False
        for pid in set(self.ready_files().values()):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return False
        return True

    def logs(self, whole_lines=True):
        """{file name: [lines]} of the plugin's *.log files now; with whole_lines, a last line
        still being written is left out."""
        out = {}
        for name in sorted(os.listdir(self.dump)):
            if not name.endswith(".log"):
                continue
            with open(os.path.join(self.dump, name), "rb") as f:
                data = f.read()
            if whole_lines:
                data = data[:data.rfind(b"\n") + 1]
            out[name] = data.decode("utf-8", errors="replace").splitlines()
        return out

    def copy_logs_when(self, dest, ready, bound_s, whole_lines=True):
        """Polls the logs until ready(logs) is true (logs as self.logs()), then writes that very
        snapshot to dest (a new directory) and returns it; None (and a problem) when bound_s
        passed or the replay exited first. What a user copying a hung job's logs gets, taken
        while the processes run."""
        deadline = time.time() + bound_s
        while True:
            snap = self.logs(whole_lines)
            if ready(snap):
                os.makedirs(dest)
                for name, lines in snap.items():
                    with open(os.path.join(dest, name), "w") as f:
                        f.writelines(l + "\n" for l in lines)
                return snap
            if self.proc.poll() is not None or time.time() > deadline:
                self.problems.append("%s before the logs were as wanted (%d files)"
                                     % ("the replay exited" if self.proc.poll() is not None
                                        else "%.0f s passed" % bound_s, len(snap)))
                return None
            time.sleep(POLL_S)

    # -- the end ------------------------------------------------------------------------------

    def release(self, bound_s, signal_it=True):
        """Ends the hold (SIGUSR1 to the job's process group: CONTRACTS.md says it never kills
        a replay with a hang; signal_it=False: the hold ends by itself) and waits for the exit;
        kills the group after bound_s. Sets rc (None if killed), stdout, stderr, window."""
        if signal_it and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGUSR1)
            except ProcessLookupError:
                pass
        try:
            self.rc = self.proc.wait(timeout=bound_s)
        except subprocess.TimeoutExpired:
            harness._kill_group(self.proc)
            self.proc.wait()
            self.problems.append("the replay did not exit within %.0f s%s"
                                 % (bound_s, " of SIGUSR1" if signal_it else ""))
        self.window = (int(self.t0 * 1e6), int(time.time() * 1e6))
        for f, attr in ((self._out, "stdout"), (self._err, "stderr")):
            f.seek(0)
            setattr(self, attr, f.read().decode(errors="replace"))
            f.close()
        return self.rc

    def _truth(self):
        if not os.path.exists(self.truth):
            return []
        with open(self.truth) as f:
            return [json.loads(line) for line in f]

    def truth_hang(self):
        """The truth file's hang object (CONTRACTS.md section 3), or None (none, or no file)."""
        return next((o["hang"] for o in self._truth() if "hang" in o), None)

    def truth_ops(self):
        """The truth file's op lines (every line but the hang's; none without the file)."""
        return [o for o in self._truth() if "hang" not in o]


def hang_lines(lines, kind=None, func=None, sn=None):
    """The JSON objects of `lines` that have a "hang" object (the plugin's stuck-op lines,
    issue 33's contract), optionally only those for kind "coll"/"p2p", func and sn."""
    out = []
    for l in lines:
        if '"hang"' not in l:
            continue
        try:
            obj = json.loads(l)
        except ValueError:
            continue
        h = obj.get("hang")
        if not isinstance(h, dict):
            continue
        k = "p2p" if "p2p" in h else "coll"
        if kind is not None and k != kind:
            continue
        if func is not None and h.get(k) != func:
            continue
        if sn is not None and h.get(k + "_sn") != sn:
            continue
        out.append(obj)
    return out


def objects(lines):
    """The JSON objects of `lines` (a line that is not one is left out: records are checked
    elsewhere)."""
    out = []
    for l in lines:
        try:
            obj = json.loads(l)
        except ValueError:
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out


def _comm_of(obj):
    try:
        return int(obj["header"]["id"], 16)
    except (KeyError, TypeError, ValueError):
        return None


def op_key(obj, what="hang"):
    """(comm id as int, kind "coll"/"p2p", func, sn) of a hang or hang_resolved line's op."""
    h = obj.get(what) or {}
    k = "p2p" if "p2p" in h else "coll"
    return _comm_of(obj), k, h.get(k), h.get(k + "_sn")


def truth_key(h):
    """op_key of the truth file's hang object h (the stuck task: an exchange's Recv)."""
    return int(h["comm"], 16), h["kind"], h["func"], h["sn"]


def stuck_hang_lines(snap, h):
    """{rank: [hang objects, in log order]} of the lines (snap: {file: [lines]}) naming the
    truth hang h's stuck op: its communicator, kind, function and sn."""
    want = truth_key(h)
    out = {}
    for lines in snap.values():
        for obj in objects(lines):
            if "hang" in obj and op_key(obj) == want:
                out.setdefault(obj["header"].get("rank"), []).append(obj)
    return out


def idle_ranks(snap, comm):
    """The ranks of communicator `comm` (int) that wrote a comm_idle line."""
    return {obj["header"].get("rank") for lines in snap.values() for obj in objects(lines)
            if "comm_idle" in obj and _comm_of(obj) == comm}


def stuck_seen(h, idle_missing=True):
    """A copy_logs_when test for the truth hang h: a hang line for the stuck op from every
    waiting and every queued rank; with idle_missing, also a comm_idle line on its
    communicator from every missing rank (a live process's word that it has nothing
    pending, which the report uses to tell it from a dead one)."""
    want = set(h["waiting"]) | set(h["queued"])

    def ready(snap):
        if not want <= set(stuck_hang_lines(snap, h)):
            return False
        return not idle_missing or set(h["missing"]) <= idle_ranks(snap, int(h["comm"], 16))
    return ready


def unresolved_others(snap, h=None):
    """Hang lines for ops other than the truth hang h's stuck op (any op, without h) that no
    hang_resolved line of the same process resolves: "file: op" strings. An op that completed
    may have been in flight past the threshold (a stalled machine); if so the plugin says it
    resolved at its next check, long before a stuck op's first line: so once the stuck op's
    lines are there, an unresolved other is a false hang line."""
    want = truth_key(h) if h else None
    bad = []
    for name, lines in sorted(snap.items()):
        objs = objects(lines)
        resolved = {op_key(o, "hang_resolved") for o in objs if "hang_resolved" in o}
        for o in objs:
            if "hang" in o and op_key(o) != want and op_key(o) not in resolved:
                bad.append("%s: %s rank %s" % (name, op_key(o), o["header"].get("rank")))
    return sorted(set(bad))


def copy_tree(src, dest):
    """A plain copy of a log directory as it is now (no line cut: a torn last line included)."""
    shutil.copytree(src, dest)
