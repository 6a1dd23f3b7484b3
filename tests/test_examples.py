#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The deployment recipes of examples/ (docs/deploy.md), run as far as a machine without GPUs,
Slurm or Kubernetes allows: inspector-replay stands in for the training command.
  examples.sbatch.dry-run     DRY_RUN=1 bash examples/slurm-job.sbatch: the plugin, ENABLE, the
                              dump directory <log root>/<job id>, the srun + torchrun line; creates
                              nothing; every #SBATCH line comes before the first command (sbatch
                              reads no further)
  examples.sbatch.job         the script with a 2-node, 8-process synthetic job with a late rank as
                              its launch line: every record in <log root>/<job id>/, one log per
                              process, on both hosts; the report (report.txt naming the late rank,
                              report.html) written there; exit status 0
  examples.sbatch.failed-job  a launch that fails after writing: the report is still written and
                              the script exits with the launch's status
  examples.sbatch.missing     no inspector-report where the script looks: it says so before the
                              job and after it, claims no report, leaves no empty report.txt,
                              and exits with the job's status; a dry run with no plugin file warns
  examples.torchrun.dry-run   NPROC=2 examples/torchrun.sh train.py --epochs 1: torchrun
                              --standalone --nproc-per-node=2 with the arguments, quoted
  examples.torchrun.job       the script around a 4-process replay: every record in its log
                              directory, the HTML report there
  examples.k8s.pod            examples/k8s-pod.yaml parses (python3-yaml; without it, a structural
                              check of the env names): in each pod the plugin path lies in a
                              volume the init container copies it into, the dump directory in a
                              hostPath or in an emptyDir that a node exporter sidecar watches;
                              every variable is one docs/reference.md documents; a replay with the
                              trainer's environment gives no warning and writes .prom files
  examples.always-on.env      examples/always-on.env is plain KEY=VALUE lines (systemd, docker,
                              ConfigMaps read it): documented names only; a replay with them gives
                              no warning, the resolved configuration echoes every value, and the
                              .prom files carry the sampling ratio
  examples.names              every NCCL_INSPECTOR_* / OTEL_* name in examples/ and docs/deploy.md
                              is in the variable tables of docs/reference.md
"""
import os
import re
import shlex
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402
from harness import Case, REPO  # noqa: E402

EX = os.path.join(REPO, "examples")
SBATCH = os.path.join(EX, "slurm-job.sbatch")
TORCHRUN = os.path.join(EX, "torchrun.sh")
K8S = os.path.join(EX, "k8s-pod.yaml")
ENVFILE = os.path.join(EX, "always-on.env")
# Variables of NCCL itself that the recipes may set.
NCCL_VARS = {"NCCL_PROFILER_PLUGIN", "NCCL_DEBUG", "NCCL_DEBUG_SUBSYS"}
JOB = "4242"


# Where the variables are documented: the reference's tables (and the README's, if it has any).
DOCS_WITH_VARIABLES = (os.path.join(REPO, "docs", "reference.md"), os.path.join(REPO, "README.md"))


def readme_variables():
    """Every variable named in the first cell of a table row of docs/reference.md or README.md."""
    names = set()
    for path in DOCS_WITH_VARIABLES:
        with open(path) as f:
            for line in f:
                if line.startswith("| `"):
                    names.update(re.findall(r"`([A-Z][A-Z0-9_]+)`", line.split("|")[1]))
    return names


def undocumented(names):
    doc = readme_variables() | NCCL_VARS
    return sorted(n for n in names if n not in doc)


def report_bin(a):
    return os.path.join(os.path.dirname(os.path.abspath(a.replay)), "inspector-report")


def sh(cmd, env, cwd, timeout):
    """Run a recipe (in its own process group, killed whole on a timeout): rc, stdout, stderr."""
    r = harness.run(cmd, env if env is not None else dict(os.environ), cwd, timeout)
    if r.timed_out:
        return -1, r.stdout, r.stderr + "\n(timed out after %ss)" % timeout
    return r.rc, r.stdout, r.stderr


def log_records(d):
    """(number of log files, coll/p2p records) in a dump directory tree."""
    files = n = 0
    for root, _, names in os.walk(d):
        for name in names:
            if name.endswith(".log"):
                files += 1
                with open(os.path.join(root, name), errors="replace") as f:
                    n += sum(1 for line in f if '"coll_perf"' in line or '"p2p_perf"' in line)
    return files, n


def truth_count(truth):
    """Records a correct plugin writes for a synthetic run, from its truth file (harness)."""
    _, recs, problems = harness.truth_expectation(truth, harness.RunConfig({}))
    return len(recs), problems


def replay_line(a, synthetic):
    """A launch line for the scripts: the replay, with the plugin the script exported."""
    return "%s --plugin \"$NCCL_PROFILER_PLUGIN\" --quiet --synthetic %s" % (
        shlex.quote(a.replay), " ".join(shlex.quote(s) for s in synthetic))


def case(name, timeout=90):
    """Register fn as a case; the scripts run in temporary folders, so the binaries' paths
    are made absolute first."""
    def deco(fn):
        def run_case(a):
            a.replay, a.plugin = os.path.abspath(a.replay), os.path.abspath(a.plugin)
            return fn(a)
        CASES.append(Case(name, run_case, labels=["examples"], timeout=timeout))
        return fn
    return deco


CASES = []


def result(name, problems, wd, ok_msg, out=""):
    if problems:
        wd.failed = True
        tail = "\n  script output (tail):\n" + out[-2000:] if out else ""
        return False, "FAIL %s:\n  %s%s" % (name, "\n  ".join(problems), tail)
    return True, "OK %s: %s" % (name, ok_msg)


# ---------------------------------------------------------------------------
# The sbatch script
# ---------------------------------------------------------------------------

def sbatch_env(a, wd, launch=None):
    env = harness.make_env(enable=False)
    env.update(SLURM_JOB_ID=JOB, SLURM_JOB_NUM_NODES="2", SLURM_GPUS_ON_NODE="4",
               INSPECTOR_LOG_ROOT=os.path.join(wd.path, "shared"), INSPECTOR_PLUGIN=a.plugin,
               INSPECTOR_REPORT=report_bin(a), HOME=wd.path)
    if launch:
        env["INSPECTOR_LAUNCH"] = launch
    return env


@case("examples.sbatch.dry-run")
def sbatch_dry_run(a):
    problems = []
    with harness.Workdir(a.keep, tag="examples") as wd:
        rc, out, err = sh(["bash", "-n", SBATCH], None, wd.cwd, a.timeout)
        if rc != 0:
            problems.append("bash -n: %s" % err.strip())
        env = sbatch_env(a, wd)
        env["DRY_RUN"] = "1"
        env["TRAIN_CMD"] = "train.py --epochs 1"
        rc, out, err = sh(["bash", SBATCH], env, wd.cwd, a.timeout)
        logs = os.path.join(wd.path, "shared", JOB)
        want = ["NCCL_PROFILER_PLUGIN=%s" % a.plugin, "NCCL_INSPECTOR_ENABLE=1",
                "NCCL_INSPECTOR_DUMP_DIR=%s" % logs]
        lines = out.splitlines()
        problems += ["no line %r in the dry run's output" % w for w in want if w not in lines]
        launch = [l for l in lines if l.startswith("launch: ")]
        if not launch or not re.search(r"srun .*torchrun --nnodes=2 --nproc-per-node=4 .*"
                                       r"--rdzv-id=%s .*train\.py --epochs 1$" % JOB, launch[0]):
            problems.append("launch line %r: not srun + torchrun over 2 nodes x 4 GPUs running "
                            "TRAIN_CMD" % launch)
        if rc != 0 or err.strip():
            problems.append("exit %d, stderr %r" % (rc, err[-500:]))
        if os.path.exists(os.path.join(wd.path, "shared")):
            problems.append("the dry run created %s" % os.path.join(wd.path, "shared"))
        # sbatch takes #SBATCH lines up to the first command only
        with open(SBATCH) as f:
            body = f.read().splitlines()
        first_cmd = next(i for i, l in enumerate(body) if l.strip() and not l.startswith("#"))
        late = [l for l in body[first_cmd:] if l.startswith("#SBATCH")]
        if late or not any(l.startswith("#SBATCH --nodes=") for l in body[:first_cmd]):
            problems.append("#SBATCH lines after the first command (sbatch ignores them): %s"
                            % late)
        if not body[0].startswith("#!/bin/bash"):
            problems.append("first line %r is not #!/bin/bash" % body[0])
        return result("sbatch.dry-run", problems, wd, "plugin, dump dir and launch line as "
                      "expected", out + err)


def sbatch_run(a, fail):
    problems = []
    with harness.Workdir(a.keep, tag="examples") as wd:
        truth = os.path.join(wd.path, "truth.jsonl")
        launch = replay_line(a, ["--procs", "--ranks", "8", "--nodes", "2", "--iters", "5",
                                 "--colls", "AllReduce", "--late-rank", "3", "--late-us", "300",
                                 "--truth", truth])
        if fail:
            launch += " && (exit 3)"
        rc, out, err = sh(["bash", SBATCH], sbatch_env(a, wd, launch), wd.cwd, a.timeout)
        logs = os.path.join(wd.path, "shared", JOB)
        files, found = log_records(logs)
        expected, tp = truth_count(truth)
        problems += tp
        want_rc = 3 if fail else 0
        if rc != want_rc:
            problems.append("exit status %d, not %d" % (rc, want_rc))
        if files != 8 or found != expected or expected == 0:
            problems.append("%s: %d logs with %d records; 8 logs with %d records expected"
                            % (logs, files, found, expected))
        hosts = {n.split("-pid")[0] for n in os.listdir(logs)} if os.path.isdir(logs) else set()
        if hosts & {"node-000", "node-001"} != {"node-000", "node-001"}:
            problems.append("logs of hosts %s, not node-000 and node-001" % sorted(hosts))
        txt = os.path.join(logs, "report.txt")
        text = open(txt).read() if os.path.exists(txt) else ""
        if not re.search(r"STRAGGLER: rank 3 on node-000", text):
            problems.append("report.txt does not name rank 3 as the straggler:\n%s" % text[:1500])
        html = os.path.join(logs, "report.html")
        if not (os.path.exists(html) and os.path.getsize(html) > 0):
            problems.append("no report.html in %s" % logs)
        if text and text not in out:
            problems.append("the report is not printed to the job's output")
        return result("sbatch.%s" % ("failed-job" if fail else "job"), problems, wd,
                      "%d logs, %d records, straggler named, exit %d" % (files, found, rc),
                      out + err)


@case("examples.sbatch.job")
def sbatch_job(a):
    return sbatch_run(a, fail=False)


@case("examples.sbatch.failed-job")
def sbatch_failed_job(a):
    return sbatch_run(a, fail=True)


@case("examples.sbatch.missing")
def sbatch_missing(a):
    problems = []
    with harness.Workdir(a.keep, tag="examples") as wd:
        launch = replay_line(a, ["--procs", "--ranks", "2", "--iters", "2", "--colls", "AllReduce"])
        env = sbatch_env(a, wd, launch)
        env["INSPECTOR_REPORT"] = os.path.join(wd.path, "no-such-inspector-report")
        rc, out, err = sh(["bash", SBATCH], env, wd.cwd, a.timeout)
        logs = os.path.join(wd.path, "shared", JOB)
        if rc != 0:
            problems.append("exit status %d, not the job's 0" % rc)
        if "no-such-inspector-report not found" not in err:
            problems.append("no warning naming the missing report tool on stderr: %r" % err[-500:])
        if "report.html" in out or "logs and report" in out:
            problems.append("it claims a report that is not there: %r" % out[-500:])
        if "no report" not in out:
            problems.append("its last words do not say there is no report: %r" % out[-300:])
        if os.path.exists(os.path.join(logs, "report.txt")):
            problems.append("an empty report.txt was left in %s" % logs)
        env = sbatch_env(a, wd)
        env.update(DRY_RUN="1", INSPECTOR_PLUGIN=os.path.join(wd.path, "no-such-plugin.so"))
        rc2, out2, err2 = sh(["bash", SBATCH], env, wd.cwd, a.timeout)
        if rc2 != 0 or "no plugin at %s" % env["INSPECTOR_PLUGIN"] not in err2:
            problems.append("a dry run with no plugin file: exit %d, stderr %r" % (rc2, err2[-300:]))
        return result("sbatch.missing", problems, wd, "the missing report and plugin said, no report "
                      "claimed, the job's status kept", out + err + out2 + err2)


# ---------------------------------------------------------------------------
# The torchrun script
# ---------------------------------------------------------------------------

def torchrun_env(a, wd):
    env = harness.make_env(enable=False)
    env.update(INSPECTOR_LOG_DIR=os.path.join(wd.path, "logs"), INSPECTOR_PLUGIN=a.plugin,
               INSPECTOR_REPORT=report_bin(a))
    return env


@case("examples.torchrun.dry-run")
def torchrun_dry_run(a):
    problems = []
    with harness.Workdir(a.keep, tag="examples") as wd:
        env = torchrun_env(a, wd)
        env.update(DRY_RUN="1", NPROC="2")
        rc, out, err = sh([TORCHRUN, "train.py", "--name", "a b"], env, wd.cwd, a.timeout)
        lines = out.splitlines()
        want = ["NCCL_PROFILER_PLUGIN=%s" % a.plugin, "NCCL_INSPECTOR_ENABLE=1",
                "NCCL_INSPECTOR_DUMP_DIR=%s" % os.path.join(wd.path, "logs"),
                "launch: torchrun --standalone --nproc-per-node=2 train.py --name a\\ b "]
        problems += ["no line %r in the dry run's output" % w for w in want if w not in lines]
        if rc != 0 or os.path.exists(os.path.join(wd.path, "logs")):
            problems.append("exit %d; created the log directory: %s"
                            % (rc, os.path.exists(os.path.join(wd.path, "logs"))))
        return result("torchrun.dry-run", problems, wd, "torchrun line as expected", out + err)


@case("examples.torchrun.job")
def torchrun_job(a):
    problems = []
    with harness.Workdir(a.keep, tag="examples") as wd:
        truth = os.path.join(wd.path, "truth.jsonl")
        env = torchrun_env(a, wd)
        env["INSPECTOR_LAUNCH"] = replay_line(a, ["--procs", "--ranks", "4", "--iters", "5",
                                                  "--truth", truth])
        rc, out, err = sh([TORCHRUN], env, wd.cwd, a.timeout)
        logs = os.path.join(wd.path, "logs")
        files, found = log_records(logs)
        expected, tp = truth_count(truth)
        problems += tp
        if rc != 0:
            problems.append("exit status %d" % rc)
        if files != 4 or found != expected or expected == 0:
            problems.append("%d logs with %d records; 4 logs with %d records expected"
                            % (files, found, expected))
        if not os.path.exists(os.path.join(logs, "report.html")):
            problems.append("no report.html in %s" % logs)
        if "Inspector report: 4 files" not in out:
            problems.append("the report is not printed")
        return result("torchrun.job", problems, wd, "%d logs, %d records, report.html" % (
            files, found), out + err)


# ---------------------------------------------------------------------------
# Environments: the Kubernetes pods' and the always-on file's, replayed
# ---------------------------------------------------------------------------

def replay_with(a, wd, variables, tag):
    """A replay of a recorded fixture with `variables` (the dump directory made a temporary
    one), not finalized so that Prometheus files stay. Returns (problems, stderr, dump dir)."""
    dump = os.path.join(wd.path, "dump-" + tag)
    env = harness.make_env(enable=False)
    env.update({k: v for k, v in variables.items() if k != "NCCL_PROFILER_PLUGIN"})
    env["NCCL_INSPECTOR_DUMP_DIR"] = dump
    cmd = [a.replay, "--plugin", a.plugin, "--no-finalize", harness.fixture("ar")]
    r = harness.run(cmd, env, wd.cwd, a.timeout)
    problems = []
    if r.timed_out or r.rc != 0:
        problems.append("replay exited with %s" % r.rc)
    warns = r.warn_lines() + [l for l in r.stderr.splitlines() if " is not " in l]
    if warns:
        problems.append("%s: the plugin warned: %s" % (tag, warns[:3]))
    problems += harness.sanitizer_reports(r.stderr)
    return problems, r.stderr, dump


def config_echo_problems(stderr, variables, tag):
    """The plugin's resolved-configuration line must show each value as given."""
    line = next((l for l in stderr.splitlines() if "loaded through profiler ABI" in l), "")
    if not line:
        return ["%s: no configuration line in the replay's output" % tag]
    problems = []
    for k, v in variables.items():
        short = k[len("NCCL_INSPECTOR_"):] if k.startswith("NCCL_INSPECTOR_") else None
        if short in (None, "ENABLE", "DUMP_DIR", "CLUSTER"):
            continue
        if not re.search(r"(^|\s)%s=%s(\s|$)" % (re.escape(short), re.escape(v)), line):
            problems.append("%s: %s=%s is not what the plugin resolved: %s" % (tag, k, v, line))
    return problems


def prom_problems(dump, tag, stats):
    files = [f for f in os.listdir(dump) if f.endswith(".prom")] if os.path.isdir(dump) else []
    if not files:
        return ["%s: no .prom file in the dump directory" % tag]
    if stats:
        text = open(os.path.join(dump, files[0])).read()
        if "nccl_sampled_ratio{" not in text or 'sampling_mode="time"' not in text:
            return ["%s: %s has no nccl_sampled_ratio of time windows" % (tag, files[0])]
    return []


def mount_of(path, mounts):
    """The volumeMount whose mountPath holds path, or None."""
    best = None
    for m in mounts:
        mp = m["mountPath"].rstrip("/")
        if path == mp or path.startswith(mp + "/"):
            if best is None or len(mp) > len(best["mountPath"]):
                best = m
    return best


def check_pod(doc, tag):
    """Structure of one pod: returns (problems, the trainer's env as a dict)."""
    problems = []
    spec = doc.get("spec", {})
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    inits = spec.get("initContainers", [])
    containers = spec.get("containers", [])
    for c in inits + containers:
        for m in c.get("volumeMounts", []):
            if m["name"] not in volumes:
                problems.append("%s: container %s mounts %s, which is no volume"
                                % (tag, c["name"], m["name"]))
    trainers = [c for c in containers if any(e["name"] == "NCCL_PROFILER_PLUGIN"
                                             for e in c.get("env", []))]
    if len(trainers) != 1:
        return problems + ["%s: %d containers set NCCL_PROFILER_PLUGIN" % (tag, len(trainers))], {}
    t = trainers[0]
    env = {e["name"]: str(e.get("value", "")) for e in t.get("env", [])}
    mounts = t.get("volumeMounts", [])
    # the plugin: in a volume an init container writes, and its command names the file
    plugin = env["NCCL_PROFILER_PLUGIN"]
    m = mount_of(plugin, mounts)
    writer = [c for c in inits
              if m and any(x["name"] == m["name"] for x in c.get("volumeMounts", []))]
    if not m or not writer:
        problems.append("%s: %s is in no volume an init container writes" % (tag, plugin))
    else:
        wm = next(x for x in writer[0]["volumeMounts"] if x["name"] == m["name"])
        target = wm["mountPath"].rstrip("/") + plugin[len(m["mountPath"].rstrip("/")):]
        cmd = writer[0].get("command", []) + writer[0].get("args", [])
        dests = {x.rstrip("/") for x in cmd}
        if not any(x.endswith("/" + os.path.basename(plugin)) for x in cmd) or not (
                dests & {target, os.path.dirname(target)}):
            problems.append("%s: init container %s does not copy %s to %s (command %s)"
                            % (tag, writer[0]["name"], os.path.basename(plugin), target, cmd))
    # the dump directory: a hostPath, or an emptyDir a node exporter sidecar watches
    dump = env.get("NCCL_INSPECTOR_DUMP_DIR", "")
    m = mount_of(dump, mounts)
    if not m:
        problems.append("%s: the dump directory %s is in no volume" % (tag, dump))
    else:
        vol = volumes.get(m["name"], {})
        if "hostPath" in vol:
            pass
        elif "emptyDir" in vol:
            watchers = []
            for c in containers:
                if c is t:
                    continue
                for x in c.get("volumeMounts", []):
                    if x["name"] != m["name"]:
                        continue
                    d = x["mountPath"].rstrip("/") + dump[len(m["mountPath"].rstrip("/")):]
                    if "--collector.textfile.directory=%s" % d in c.get("args", []):
                        watchers.append(c["name"])
            if not watchers:
                problems.append("%s: no node exporter watches the emptyDir %s" % (tag, m["name"]))
        else:
            problems.append("%s: the dump directory's volume %s is neither hostPath nor emptyDir"
                            % (tag, m["name"]))
    if env.get("NCCL_INSPECTOR_ENABLE") != "1" or env.get("NCCL_INSPECTOR_PROM_DUMP") != "1":
        problems.append("%s: ENABLE and PROM_DUMP are not both 1" % tag)
    return problems, env


def env_names_fallback(text):
    """Without python3-yaml: the env names of the file (`- name: X` followed by `value:`)."""
    lines = text.splitlines()
    return [m.group(1) for i, l in enumerate(lines[:-1])
            for m in [re.match(r"^\s*- name: ([A-Z][A-Z0-9_]*)\s*$", l)]
            if m and re.match(r"^\s*value(From)?:", lines[i + 1])]


@case("examples.k8s.pod")
def k8s_pod(a):
    problems = []
    with open(K8S) as f:
        text = f.read()
    with harness.Workdir(a.keep, tag="examples") as wd:
        try:
            import yaml
        except ImportError:
            names = env_names_fallback(text)
            problems += ["undocumented variable %s" % n for n in undocumented(names)]
            if not names or "NCCL_PROFILER_PLUGIN" not in names:
                problems.append("no env list with NCCL_PROFILER_PLUGIN found")
            return result("k8s.pod", problems, wd, "structural check only (no python3-yaml): "
                          "%d env names documented" % len(names))
        docs = [d for d in yaml.safe_load_all(text) if d]
        if len(docs) < 1 or any(d.get("kind") != "Pod" for d in docs):
            problems.append("not a list of Pods: %s" % [d.get("kind") for d in docs])
        for i, d in enumerate(docs):
            tag = d.get("metadata", {}).get("name", "document %d" % (i + 1))
            p, env = check_pod(d, tag)
            problems += p
            problems += ["%s: undocumented variable %s" % (tag, n) for n in undocumented(env)]
            if env:
                p, err, dump = replay_with(a, wd, env, tag)
                problems += p + config_echo_problems(err, env, tag)
                problems += prom_problems(dump, tag,
                                          env.get("NCCL_INSPECTOR_PROM_DUMP_STATS") == "1")
        return result("k8s.pod", problems, wd, "%d pods: plugin and textfile volumes wired, "
                      "environments accepted by the plugin" % len(docs))


@case("examples.always-on.env")
def always_on_env(a):
    problems = []
    variables = {}
    with open(ENVFILE) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            m = re.fullmatch(r"([A-Z][A-Z0-9_]*)=([^\s'\"$`\\]*)", line)
            if not m:
                problems.append("always-on.env:%d is not a plain KEY=VALUE line: %r" % (n, line))
                continue
            variables[m.group(1)] = m.group(2)
    problems += ["undocumented variable %s" % n for n in undocumented(variables)]
    if variables.get("NCCL_PROFILER_PLUGIN") != "/usr/lib/libnccl-profiler-inspector.so":
        problems.append("NCCL_PROFILER_PLUGIN is not the package's /usr/lib path")
    with harness.Workdir(a.keep, tag="examples") as wd:
        p, err, dump = replay_with(a, wd, variables, "always-on.env")
        problems += p + config_echo_problems(err, variables, "always-on.env")
        problems += prom_problems(dump, "always-on.env", True)
        return result("always-on.env", problems, wd, "%d variables, all accepted as given"
                      % len(variables))


@case("examples.names")
def names(a):
    found = {}
    paths = [os.path.join(EX, f) for f in sorted(os.listdir(EX))]
    paths.append(os.path.join(REPO, "docs", "deploy.md"))
    for p in paths:
        with open(p, errors="replace") as f:
            for n in re.findall(r"\b((?:NCCL_INSPECTOR|OTEL)_[A-Z0-9_]*[A-Z0-9])\b", f.read()):
                found.setdefault(n, os.path.relpath(p, REPO))
    bad = undocumented(found)
    if bad:
        return False, "FAIL names: not in the variable tables of docs/reference.md: %s" % (
            ", ".join("%s (%s)" % (n, found[n]) for n in bad))
    return True, "OK names: %d variable names, all documented" % len(found)


if __name__ == "__main__":
    sys.exit(harness.main_cases(CASES, __doc__.split("\n")[0]))
