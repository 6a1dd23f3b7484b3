#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The SPANK plugin (tools/spank/) on a real single-node Slurm: munged, slurmctld and slurmd
started by this test (configuration, state, logs and the munge socket in one temporary
directory; the daemons in the foreground, stopped by their pids whatever happens; the
directory removed), the plugin registered through the test's own plugstack.conf, tasks that
run inspector-replay over a recorded trace when the plugin set NCCL_PROFILER_PLUGIN.

  slurm.e2e   srun -n2 --inspector: two JSON logs in <dir>/root/<job>.<step>, the job id in
              every record (metadata.job_id), the task saw it, the directory 0755 and the user's; --inspector=prom: .prom files with
              slurm_job_id="<job>"; no option: nothing set, no directory; a link planted where
              the step's directory goes: refused, nothing written through it, the step still
              runs; the user's exported NCCL_INSPECTOR_DUMP_DIR wins over the template; sbatch
              with INSPECTOR_SLURM=json: every srun of the script on, each in its own step's
              directory; report=on: inspector-report's report.txt (of both tasks' logs) and
              report.html next to the logs of a JSON step, none for prom nor in the user's own
              directory; a report command that hangs (report_timeout=1): its process group
              killed (its child gone), the line in slurmd's log, the node idle after it.

Skipped, and passed, saying so, where Slurm (slurmctld, slurmd, srun, munged) or the SPANK
plugin is missing, or when not run as root (the daemons need it); .ci/run installs Slurm.
"""
import glob
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402

TRACE = harness.fixture("vsmall")
TOOLS = ("slurmctld", "slurmd", "srun", "sbatch", "sinfo", "munged")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


SLURM_CONF = """ClusterName=inspector-test
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={t}/munge/munge.sock
StateSaveLocation={t}/ctld
SlurmdSpoolDir={t}/slurmd
SlurmctldPidFile={t}/slurmctld.pid
SlurmdPidFile={t}/slurmd.pid
SlurmctldPort={cport}
SlurmdPort={dport}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
PlugStackConfig={t}/plugstack.conf
SlurmctldLogFile={t}/slurmctld.log
SlurmdLogFile={t}/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""

# The task: what it was given, then the replay if Inspector is on for it. (TASK_REPLAY_ARGS
# --no-finalize: a finalized communicator's .prom file is removed, one left at exit stays.)
TASK = """#!/bin/sh
env | grep -E '^(NCCL_|INSPECTOR_SLURM)' | sort > "{t}/env.$SLURM_JOB_ID.$SLURM_STEP_ID.$SLURM_PROCID"
[ -n "$NCCL_PROFILER_PLUGIN" ] || exit 0
exec {replay} --plugin "$NCCL_PROFILER_PLUGIN" --quiet $TASK_REPLAY_ARGS {trace}
"""

# A report command that hangs, with a child of its own: the kill at report_timeout must reach
# the whole process group (the child's pid, written down, must be gone after the step).
HANG = """#!/bin/sh
sleep 3001 &
echo $! > "{t}/hang.pid"
exec sleep 3002
"""


class Cluster:
    """munged, slurmctld and slurmd in t, in the foreground: their Popen objects are ours."""

    def __init__(self, t, spank, plugin, dir_tmpl, site_args=""):
        self.t, self.procs = t, []
        self.env = dict(os.environ, SLURM_CONF=os.path.join(t, "slurm.conf"))
        for k in list(self.env):  # a test run inside a job must not leak its own
            if k.startswith(("SLURM_", "NCCL_", "INSPECTOR_SLURM")) and k != "SLURM_CONF":
                del self.env[k]
        for d in ("ctld", "slurmd", "munge"):
            os.makedirs(os.path.join(t, d))
        mu = pwd.getpwnam("munge")
        os.chown(t, 0, 0)
        os.chmod(t, 0o755)
        os.chown(os.path.join(t, "munge"), mu.pw_uid, mu.pw_gid)
        self.host = host = socket.gethostname().split(".")[0]
        with open(os.path.join(t, "slurm.conf"), "w") as f:
            f.write(SLURM_CONF.format(host=host, t=t, cport=free_port(), dport=free_port(),
                                      cpus=max(2, os.cpu_count() or 2)))
        self.spank, self.plugin, self.dir_tmpl = spank, plugin, dir_tmpl
        self.plugstack(site_args)

    def plugstack(self, site_args):
        """The plugin's plugstack.conf line (each step's slurmstepd reads it anew)."""
        with open(os.path.join(self.t, "plugstack.conf"), "w") as f:
            f.write("optional %s plugin=%s dir=%s %s\n" % (self.spank, self.plugin, self.dir_tmpl, site_args))

    def start(self):
        t = self.t
        # munged as munge (it refuses root), its socket in t (AuthInfo above)
        self.procs.append(subprocess.Popen(
            ["runuser", "-u", "munge", "--", "munged", "-F", "--socket=%s/munge/munge.sock" % t,
             "--pid-file=%s/munge/munged.pid" % t, "--log-file=%s/munge/munged.log" % t,
             "--seed-file=%s/munge/seed" % t], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT))
        self.wait_for(lambda: os.path.exists(t + "/munge/munge.sock"), "munged's socket")
        for d in ("slurmctld", "slurmd"):
            self.procs.append(subprocess.Popen([d, "-D", "-f", t + "/slurm.conf"] +
                                               (["-c", "-i"] if d == "slurmctld" else []),
                                               env=self.env, stdout=subprocess.DEVNULL,
                                               stderr=subprocess.STDOUT))
        self.wait_for(lambda: "idle" in self.run(["sinfo", "-h", "-o", "%t"], check=False).stdout,
                      "the node idle in sinfo")

    def wait_for(self, ready, what, limit=60.0):
        end = time.monotonic() + limit
        while not ready():
            for p in self.procs:
                if p.poll() is not None:
                    raise RuntimeError("%s exited (%s) before %s; logs in %s" %
                                       (p.args[3] if p.args[0] == "runuser" else p.args[0],
                                        p.returncode, what, self.t))
            if time.monotonic() > end:
                raise RuntimeError("no %s after %.0f s" % (what, limit))
            time.sleep(0.2)

    def run(self, cmd, check=True, env=None, timeout=120):
        r = subprocess.run(cmd, env=dict(self.env, **(env or {})), cwd=self.t, timeout=timeout,
                           capture_output=True, text=True)
        if check and r.returncode != 0:
            raise RuntimeError("%s: exit %d\n%s%s" % (" ".join(cmd), r.returncode, r.stdout, r.stderr))
        return r

    def steps_done(self):
        """No slurmstepd of ours left: each keeps a socket in the spool directory
        (<node>_<job>.<step>) until it has told slurmctld its step ended, after srun returns."""
        return not glob.glob(os.path.join(self.t, "slurmd", self.host + "_*"))

    def stop(self):
        try:
            if len(self.procs) == 3:
                self.wait_for(self.steps_done, "end of every slurmstepd", limit=60.0)
        except RuntimeError as ex:
            print("warning: %s (%s)" % (ex, os.listdir(os.path.join(self.t, "slurmd"))), file=sys.stderr)
        for p in reversed(self.procs):  # slurmd, slurmctld, munged: by the pids we started
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in reversed(self.procs):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def env_files(t):
    out = {}
    for p in glob.glob(os.path.join(t, "env.*")):
        _, job, step, rank = os.path.basename(p).split(".")
        with open(p) as f:
            out[(job, step, rank)] = dict(l.rstrip("\n").split("=", 1) for l in f if "=" in l)
        os.unlink(p)
    return out


def check_report(bad, d, logs):
    """inspector-report's text and page in d: written as the job's user (root here), from the
    step's logs (each of the step's tasks' logs read)."""
    txt, html = os.path.join(d, "report.txt"), os.path.join(d, "report.html")
    for p in (txt, html):
        if not os.path.isfile(p) or os.path.getsize(p) == 0:
            bad.append("the end-of-step report: %s missing or empty (%s)" % (p, os.listdir(d)))
            return
    with open(txt) as f:
        text = f.read()
    with open(html) as f:
        page = f.read()
    if not text.startswith("Inspector report: %d files, " % logs):
        bad.append("the end-of-step report: %s is not a report of the %d tasks' logs:\n%s" % (txt, logs, text[:600]))
    if "<html" not in page[:500].lower():
        bad.append("the end-of-step report: %s is not an HTML page" % html)


def case_e2e(a):
    missing = [x for x in TOOLS if not shutil.which(x)]
    spank = os.path.join(os.path.dirname(os.path.abspath(a.plugin)), "inspector_spank.so")
    if missing:
        return True, "SKIP slurm.e2e: %s not installed (Debian: apt-get install slurm-wlm slurmd " \
                     "slurmctld libslurm-dev munge; .ci/run does)" % ", ".join(missing)
    if not os.path.exists(spank):
        return True, "SKIP slurm.e2e: no SPANK plugin built (%s; needs libslurm-dev)" % spank
    if os.geteuid() != 0:
        return True, "SKIP slurm.e2e: the Slurm daemons need root"
    t = tempfile.mkdtemp(prefix="ins-slurm.")
    logs = os.path.join(t, "logs")
    os.mkdir(logs, 0o755)  # the template's fixed part is the site's to make (spank_dir.h)
    report = os.path.join(os.path.dirname(os.path.abspath(a.replay)), "inspector-report")
    c = Cluster(t, spank, os.path.abspath(a.plugin), logs + "/%u/%j.%s",
                "report=on report_cmd=%s report_timeout=120" % report)
    with open(os.path.join(t, "hang.sh"), "w") as f:
        f.write(HANG.format(t=t))
    os.chmod(os.path.join(t, "hang.sh"), 0o755)
    with open(os.path.join(t, "task.sh"), "w") as f:
        f.write(TASK.format(t=t, replay=os.path.abspath(a.replay), trace=TRACE))
    os.chmod(os.path.join(t, "task.sh"), 0o755)
    task = os.path.join(t, "task.sh")
    bad = []
    try:
        c.start()
        # 1. srun -n2 --inspector: two logs in the step's directory, the job id seen by both
        c.run(["srun", "-n2", "--inspector", task])
        seen = env_files(t)
        (e,) = [v for k, v in seen.items() if k[2] == "0"]
        if len(seen) != 2:
            bad.append("srun -n2 --inspector: tasks %s ran" % sorted(seen))
        job = [k for k in glob.glob(logs + "/root/*")]
        if len(job) != 1:
            bad.append("srun --inspector: step directories %s, one expected" % job)
        else:
            d = job[0]
            jid = os.path.basename(d).split(".")[0]
            if sorted(seen) != [(jid, "0", "0"), (jid, "0", "1")]:
                bad.append("srun -n2 --inspector: the tasks of %s ran, job %s's expected" % (sorted(seen), jid))
            want = {"NCCL_PROFILER_PLUGIN": os.path.abspath(a.plugin), "NCCL_INSPECTOR_ENABLE": "1",
                    "NCCL_INSPECTOR_DUMP_DIR": d, "NCCL_INSPECTOR_JSON_DUMP": "1"}
            if e != want:
                bad.append("srun --inspector: the task's variables %s, expected %s" % (e, want))
            st = os.stat(d)
            if (st.st_mode & 0o7777, st.st_uid) != (0o755, 0):
                bad.append("%s: mode %o owner %d" % (d, st.st_mode & 0o7777, st.st_uid))
            # the report is written after the tasks end, by the step's slurmstepd, which
            # outlives srun a little: its end is when the report is done, or given up
            c.wait_for(c.steps_done, "end of the step's slurmstepd")
            every = sorted(os.listdir(d))
            got = [n for n in every if n.endswith(".log")]
            if len(got) != 2 or len(every) != 4:
                bad.append("srun -n2 --inspector: %s in %s, two .log and the report expected" % (every, d))
            # 1b. the end-of-step report (report=on): text and HTML next to the logs, the user's
            check_report(bad, d, 2)
            for n in got:
                with open(os.path.join(d, n)) as f:
                    recs = [json.loads(l) for l in f if '"coll_perf"' in l]
                if not recs:
                    bad.append("%s: no records" % n)
                # the job's id in every record (metadata.job_id: SLURM_JOB_ID, as Slurm set it)
                ids = sorted({r["metadata"].get("job_id") for r in recs}, key=str)
                if recs and ids != [jid]:
                    bad.append("%s: metadata.job_id %s in its records, [%r] expected" % (n, ids, jid))
        # 2. --inspector=prom: .prom files labelled with the job id
        c.run(["srun", "-n2", "--inspector=prom", task], env={"TASK_REPLAY_ARGS": "--no-finalize"})
        env_files(t)
        steps = sorted(glob.glob(logs + "/root/*"), key=os.path.getmtime)
        d = steps[-1]
        jid = os.path.basename(d).split(".")[0]
        proms = glob.glob(d + "/**/*.prom", recursive=True)
        if not proms:
            bad.append("--inspector=prom: no .prom file in %s (%s)" % (d, os.listdir(d)))
        c.wait_for(c.steps_done, "end of the step's slurmstepd")
        if [n for n in os.listdir(d) if n.startswith("report.")]:
            bad.append("--inspector=prom: a report in %s (no JSON logs to read)" % d)
        for p in proms:
            with open(p) as f:
                if 'slurm_job_id="%s"' % jid not in f.read():
                    bad.append("%s: no slurm_job_id=\"%s\"" % (p, jid))
        # 3. no option: nothing set, no new directory
        before = set(glob.glob(logs + "/root/*"))
        c.run(["srun", "-n2", task])
        e = env_files(t)
        if any(v for v in e.values()) or set(glob.glob(logs + "/root/*")) != before:
            bad.append("srun without --inspector: %s set, directories %s" %
                       (e, set(glob.glob(logs + "/root/*")) - before))
        # 4. the user's own NCCL_INSPECTOR_DUMP_DIR wins over the template
        own = os.path.join(t, "own")
        os.mkdir(own)
        c.run(["srun", "-n1", "--inspector", task], env={"NCCL_INSPECTOR_DUMP_DIR": own})
        e = env_files(t)
        if [v.get("NCCL_INSPECTOR_DUMP_DIR") for v in e.values()] != [own] or not os.listdir(own):
            bad.append("the user's NCCL_INSPECTOR_DUMP_DIR: the task saw %s, %s has %s" %
                       (e, own, os.listdir(own)))
        c.wait_for(c.steps_done, "end of the step's slurmstepd")
        if [n for n in os.listdir(own) if n.startswith("report.")]:
            bad.append("the user's NCCL_INSPECTOR_DUMP_DIR: a report written into it (%s)" % os.listdir(own))
        # 5. sbatch with INSPECTOR_SLURM=json: each srun of the script on, in its own step's dir
        script = os.path.join(t, "job.sh")
        with open(script, "w") as f:
            f.write("#!/bin/sh\nexport INSPECTOR_SLURM=json\nsrun -n2 %s\nsrun -n1 %s\n" % (task, task))
        r = c.run(["sbatch", "-n2", "--parsable", "--wait", "-o", t + "/batch.out", script])
        bj = r.stdout.strip().split(";")[0]
        e = env_files(t)
        c.wait_for(c.steps_done, "end of the job's slurmstepds")
        counts = {s: len([n for n in os.listdir(os.path.join(logs, "root", "%s.%s" % (bj, s)))
                          if n.endswith(".log")])
                  if os.path.isdir(os.path.join(logs, "root", "%s.%s" % (bj, s))) else None
                  for s in ("0", "1")}
        if counts != {"0": 2, "1": 1}:
            bad.append("sbatch with INSPECTOR_SLURM=json: logs per step %s, {0: 2, 1: 1} expected" % counts)
        if sorted(k for k in e if k[0] == bj) != [(bj, "0", "0"), (bj, "0", "1"), (bj, "1", "0")]:
            bad.append("sbatch: the tasks that ran %s" % sorted(e))
        # 6. a link planted where the step's own directory goes (<logs>/root): refused
        shutil.rmtree(os.path.join(logs, "root"))
        target = os.path.join(t, "target")
        os.mkdir(target)
        os.symlink(target, os.path.join(logs, "root"))
        r = c.run(["srun", "-n2", "--inspector", task])
        e = env_files(t)
        if os.listdir(target) or any(v for v in e.values()):
            bad.append("a planted link: %s written through it, the tasks saw %s" % (os.listdir(target), e))
        with open(t + "/slurmd.log", errors="replace") as f:
            if "is a symbolic link where the step's own directory goes" not in f.read():
                bad.append("a planted link: no refusal in slurmd's log")
        os.unlink(os.path.join(logs, "root"))
        # 7. a report command that hangs: killed at report_timeout with its process group,
        # said in slurmd's log; the step ends well and the node takes the next step
        c.wait_for(c.steps_done, "end of the step's slurmstepd")
        c.plugstack("report=on report_cmd=%s/hang.sh report_timeout=1" % t)
        c.run(["srun", "-n1", "--inspector", task])
        env_files(t)
        c.wait_for(lambda: os.path.exists(t + "/hang.pid"), "the hanging report's start")
        c.wait_for(c.steps_done, "end of the step's slurmstepd (the hanging report killed)")
        (hd,) = glob.glob(logs + "/root/*")
        hj = os.path.basename(hd)
        with open(t + "/slurmd.log", errors="replace") as f:
            want = "inspector: report for step %s: %s/hang.sh did not finish in 1 s (report_timeout): " \
                   "its process group killed" % (hj, t)
            if want not in f.read():
                bad.append("a hanging report: no line '%s' in slurmd's log" % want)
        with open(t + "/hang.pid") as f:
            hp = f.read().strip()
        try:
            with open("/proc/%s/cmdline" % hp, "rb") as f:
                if b"3001" in f.read():
                    bad.append("a hanging report: its child %s (sleep 3001) outlived the step" % hp)
        except FileNotFoundError:
            pass
        # the job's completing state passes; a step that failed would drain the node
        state = lambda: c.run(["sinfo", "-h", "-o", "%t"]).stdout.strip()  # noqa: E731
        c.wait_for(lambda: state() not in ("comp", "alloc", "mix"), "the node out of the job")
        if state() != "idle":
            bad.append("a hanging report: the node is %s after it, not idle" % state())
        c.plugstack("")
        c.run(["srun", "-n1", "true"])
    except Exception as ex:  # noqa: BLE001 - reported with the daemons' logs' place
        bad.append("%s" % ex)
    finally:
        c.stop()
        if bad and a.keep:
            print("kept " + t)
        else:
            shutil.rmtree(t, ignore_errors=True)
    if bad:
        return False, "FAIL slurm.e2e:\n" + "\n".join(bad)
    return True, "OK slurm.e2e: --inspector json and prom, off, the user's directory, sbatch, a planted link, " \
                 "the end-of-step report, a hanging report killed"


CASES = [harness.Case("slurm.e2e", case_e2e, labels=("slurm",), timeout=300)]

if __name__ == "__main__":
    sys.exit(harness.main_cases(CASES, __doc__))
