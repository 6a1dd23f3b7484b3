#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Prometheus mode end to end, against the real programs (Debian's prometheus and
prometheus-node-exporter, installed by .ci/run; the cases skip with a note when absent):
  e2e.stack     replays of recorded traffic (AllReduce, AllGather, ReduceScatter, Send/Recv,
                plus a communicator named  a"b\\c<newline>nccl_fake 1 ) in Prometheus mode into
                a textfile directory; `promtool check metrics` finds nothing in any file but
                the naming lint on the seed's _microseconds metric names;
                node_exporter (textfile collector, loopback, free port) exposes the samples;
                Prometheus (loopback, scraping it every second) returns them; every variable
                query of the Grafana dashboard returns values and every panel expression, with
                the variables substituted, runs, and returns data for the intra-node rows the
                replays cover; there is no nccl_fake series. Both servers are stopped.
  e2e.periodic  a 36-second job (synthetic, paced) with NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_
                MICROSECONDS=30000000: the .prom files appear at the 30-second dump (never
                before), while the job still runs, holding that window's samples; with the
                last window's, every collective of the job (a loaded machine only delays)
  e2e.alerts    planted jobs replayed through the plugin in Prometheus mode (one process per
                rank, a host name per node, NCCL_INSPECTOR_PROM_DUMP_RANKS=1 and _STATS=1): rank
                5 of 8 late by 300 us, a slow link between node-001 and node-002, records
                dropped (rings of 16, no dump thread), and a clean job; node_exporter and
                Prometheus with prometheus/inspector-rules.yml, its rates read as the totals
                (rate(x[5m]) -> x) and its for: as 0s, since a replay is over in a second and
                writes each file once (the rates, the for: and one slow op are the promtool
                unit tests', prom_rules:*): through the HTTP API, NcclRankLate names job late's
                rank 5 (node-002, GPU1), NcclSlowLink the pairs (node-001, node-002) and
                (node-002, node-001), NcclRecordsLost job lost's collectives (dropped), and
                nothing else fires, nothing at all for the clean job; the dashboard's late-rank,
                slow-link and records-lost panels show those jobs. And a hung job, its processes
                holding while Prometheus scrapes their files (tests/lib/hang_common.py: 8 ranks, two
                communicators, NCCL_INSPECTOR_HANG_SECONDS=1 and the rules' hang threshold 1 s
                in place of 300): on the second communicator rank 5 never issues an AllReduce,
                rank 2's never starts; NcclHang names that communicator's comm_id and ranks 0-4,
                6, 7 with their node and GPU, not rank 5 (nothing in flight), not the first
                communicator, whose gauges are there at 0 as the clean job's are. Bounded waits
                only: for the ready files, then until what fires is what was planted.
  e2e.validate  tools/validate/alerts.py --jobs quick (docs/VALIDATION.md, "Alerts on planted
                jobs"): a clean job, a late rank and a slow link found by both the alerts and
                inspector-report, a link at half speed and a late rank of two found by the report
                only; no false finding on either side
  e2e.rewrite   a reader reads the .prom files in a loop while a process with 300
                communicators per GPU tears them down one by one (each teardown rewrites the
                file), five times: every read is a whole, valid file.
"""
import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

sys.dont_write_bytecode = True
ALERTS = importlib.util.module_from_spec(importlib.util.spec_from_file_location(  # instant_rules, stop_procs
    "alerts", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "validate", "alerts.py")))
ALERTS.__spec__.loader.exec_module(ALERTS)
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "lib"))  # harness, oracles, receivers
import grafana_queries  # noqa: E402
import harness  # noqa: E402
import hang_common  # noqa: E402
from test_prom import NASTY, parse_prom, strip_finalize  # noqa: E402

DASHBOARD = os.path.join(HERE, "..", "grafana", "nccl-inspector-job-performance-template.json")
NODE_EXPORTER = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")
ENV = {"NCCL_INSPECTOR_PROM_DUMP": "1", "SLURM_JOB_ID": "4242",
       "NCCL_INSPECTOR_CLUSTER": "testcluster"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, timeout=2):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def wait_for(fn, seconds):
    end = time.time() + seconds
    while time.time() < end:
        try:
            v = fn()
            if v:
                return v
        except Exception:
            pass
        time.sleep(0.2)
    return None


def query(port, expr):
    q = urllib.parse.urlencode({"query": expr})
    return json.loads(get("http://127.0.0.1:%d/api/v1/query?%s" % (port, q)))


def label_values(port, label, match):
    q = urllib.parse.urlencode({"match[]": match}) if match else ""
    return json.loads(get("http://127.0.0.1:%d/api/v1/label/%s/values?%s" % (port, label, q)))


def make_files(a, wd, problems):
    """Replays into wd.dump (textfile dir); returns the host name label."""
    os.makedirs(wd.dump)
    tmp = os.path.join(wd.path, "traces")
    os.makedirs(tmp)
    runs = [["2.28.9/ar"], ["2.28.9/ag"], ["2.28.9/rs"], ["2.28.9/sr"]]
    for i, fx in enumerate(runs):
        t = os.path.join(tmp, "t%d.jsonl" % i)
        strip_finalize(harness.fixture(fx[0]), t)     # records written at exit: files stay
        env = harness.make_env(ENV, dump_dir=wd.dump)
        r = harness.run(harness.replay_cmd(a.replay, a.plugin, [t]), env, wd.cwd, a.timeout)
        if r.rc:
            problems.append("replay of %s failed: %s" % (fx[0], r.rc))
    t = os.path.join(tmp, "nasty.jsonl")
    strip_finalize(harness.fixture("2.28.9/ar"), t, rename=NASTY)
    r = harness.run(harness.replay_cmd(a.replay, a.plugin, [t]),
                    harness.make_env(ENV, dump_dir=wd.dump), wd.cwd, a.timeout)
    if r.rc:
        problems.append("replay with the nasty name failed: %s" % r.rc)
    return socket.gethostname()


def stack(a):
    if not (NODE_EXPORTER and PROMETHEUS and PROMTOOL):
        return True, "OK e2e.stack: skipped (prometheus, promtool or node_exporter not installed)"
    problems, procs = [], []
    with harness.Workdir(a.keep, "prome2e") as wd:
        try:
            host = make_files(a, wd, problems)
            files = sorted(f for f in os.listdir(wd.dump) if f.endswith(".prom"))
            if not files:
                problems.append("no .prom files written")
            for f in files:
                with open(os.path.join(wd.dump, f)) as fh:
                    r = subprocess.run([PROMTOOL, "check", "metrics"], stdin=fh,
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       universal_newlines=True, timeout=30)
                # promtool lints names too: the seed's metric names end in _microseconds, which
                # its naming lint flags (it wants seconds). That one finding is expected;
                # anything else (a parsing error above all) fails.
                found = [l for l in r.stdout.splitlines() if l.strip() and not re.fullmatch(
                    r'nccl_(collective|p2p)_exec_time_microseconds use base unit "seconds" '
                    r'instead of "microseconds"', l.strip())]
                if found or (r.returncode and not r.stdout.strip()):
                    problems.append("promtool check metrics %s: %s" % (f, "; ".join(found)))
            ne_port, pr_port = free_port(), free_port()
            procs.append(subprocess.Popen(
                [NODE_EXPORTER, "--web.listen-address=127.0.0.1:%d" % ne_port,
                 "--collector.disable-defaults", "--collector.textfile",
                 "--collector.textfile.directory=%s" % wd.dump],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            metrics = wait_for(lambda: get("http://127.0.0.1:%d/metrics" % ne_port), 20)
            if not metrics or "nccl_bus_bandwidth_gbs{" not in metrics:
                problems.append("node_exporter does not expose nccl_bus_bandwidth_gbs")
            if metrics and re.search(r"^nccl_fake", metrics, re.M):
                problems.append("node_exporter exposes an nccl_fake sample")
            cfg = os.path.join(wd.path, "prometheus.yml")
            with open(cfg, "w") as f:
                f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                        "scrape_configs:\n  - job_name: node\n    static_configs:\n"
                        "      - targets: ['127.0.0.1:%d']\n" % ne_port)
            procs.append(subprocess.Popen(
                [PROMETHEUS, "--config.file=%s" % cfg,
                 "--storage.tsdb.path=%s" % os.path.join(wd.path, "tsdb"),
                 "--web.listen-address=127.0.0.1:%d" % pr_port],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            got = wait_for(lambda: query(pr_port, "nccl_bus_bandwidth_gbs")["data"]["result"], 40)
            if not got:
                problems.append("Prometheus returned no nccl_bus_bandwidth_gbs series")
            else:
                for metric in ("nccl_p2p_bus_bandwidth_gbs", "nccl_collective_exec_time_microseconds",
                               "nccl_p2p_exec_time_microseconds"):
                    if not query(pr_port, metric)["data"]["result"]:
                        problems.append("Prometheus has no %s series" % metric)
                if query(pr_port, '{__name__=~"nccl_fake.*"}')["data"]["result"]:
                    problems.append("an nccl_fake series reached Prometheus")
                # the dashboard: variables top to bottom, then every panel expression
                values = {"datasource": "Prometheus", "cluster": "testcluster",
                          "slurm_job_id": "4242", "node": host}
                for name, q in grafana_queries.variable_queries(DASHBOARD):
                    m = re.fullmatch(r"\s*label_values\((.*),\s*(\w+)\)\s*", q or "")
                    if not m:
                        continue
                    match = grafana_queries.substitute(
                        m.group(1), grafana_queries._variables(grafana_queries._load(DASHBOARD)),
                        values)
                    res = label_values(pr_port, m.group(2), match)
                    if res.get("status") != "success" or not res.get("data"):
                        problems.append("variable %s (%s) has no values" % (name, q))
                n_panels = n_data = 0
                for title, expr in grafana_queries.queries(DASHBOARD, values):
                    n_panels += 1
                    res = query(pr_port, expr)
                    if res.get("status") != "success":
                        problems.append("panel %r: %s failed: %s" % (title, expr, res))
                        continue
                    intra = 'n_nodes="1"' in expr
                    if intra and not res["data"]["result"]:
                        problems.append("panel %r (intra-node) returns no data: %s" % (title, expr))
                    n_data += bool(res["data"]["result"])
                if not n_panels:
                    problems.append("the dashboard has no panel expressions")
        finally:
            ALERTS.stop_procs(procs)
        if problems:
            wd.failed = True
            return False, "FAIL e2e.stack:\n  " + "\n  ".join(problems[:20])
        return True, ("OK e2e.stack: %d files pass promtool; %d panel expressions run, %d with data"
                      % (len(files), n_panels, n_data))


RULES = os.path.join(HERE, "..", "prometheus", "inspector-rules.yml")
# (job id, synthetic options): each replayed one process per rank, nodes named node-000...
ALERT_JOBS = [
    ("late", ["--ranks", "8", "--nodes", "4", "--late-rank", "5", "--late-us", "300"]),
    ("link", ["--ranks", "8", "--nodes", "4", "--p2p", "--p2p-pattern", "nodes", "--slow-link", "1:2",
              "--colls", "AllReduce", "--sizes", "1M:4M"]),
    ("clean", ["--ranks", "8", "--nodes", "4", "--p2p", "--p2p-pattern", "nodes", "--sizes", "1M:4M"]),
]


# The hung job: 8 ranks on 4 nodes, two communicators; on the second, rank 5 never issues an
# AllReduce, rank 2 issues it and none of its channels start, the 6 others wait in its kernel.
# Every process holds there (ready files) until the test releases it (hang_common.HangJob).
HANG_OPTS = ["--ranks", "8", "--nodes", "4", "--comms", "2", "--colls", "AllReduce",
             "--sizes", "16K:256K", "--hang-rank", "5", "--hang-queued-rank", "2", "--hang-comm", "1"]
HANG_S = 1   # NCCL_INSPECTOR_HANG_SECONDS of the hung job, and the rules' hang threshold here


def instant_rules(text):
    """The shipped rules as the tests load them (tools/validate/alerts.py), with the hung job's
    threshold."""
    return ALERTS.instant_rules(text, HANG_S)


def synth_place(rank, ranks, nodes):
    """(node, gpu) labels of a synthetic rank with one process per rank (inspector-replay(1): rank
    r is on node floor(r x nodes / ranks); a process's GPU is its index among its node's ranks)."""
    node = rank * nodes // ranks
    first = min(r for r in range(ranks) if r * nodes // ranks == node)
    return "node-%03d" % node, "GPU%d" % (rank - first)


def alert_files(a, wd, problems):
    """The planted jobs' .prom files in wd.dump (every process exits without finalize)."""
    os.makedirs(wd.dump)
    extra = {"NCCL_INSPECTOR_PROM_DUMP_RANKS": "1", "NCCL_INSPECTOR_PROM_DUMP_STATS": "1"}
    for job, opts in ALERT_JOBS:
        env = harness.make_env(dict(ENV, SLURM_JOB_ID=job, **extra), dump_dir=wd.dump)
        cmd = harness.replay_cmd(a.replay, a.plugin, procs=True, synthetic=opts) + ["--no-finalize"]
        r = harness.run(cmd, env, wd.cwd, a.timeout)
        if r.rc:
            problems.append("replay of job %s failed: %s %s" % (job, r.rc, r.stderr[-300:]))
    t = os.path.join(wd.path, "ar.jsonl")
    strip_finalize(harness.fixture("2.28.9/ar"), t)
    env = harness.make_env(dict(ENV, SLURM_JOB_ID="lost", NCCL_INSPECTOR_DUMP_THREAD_ENABLE="0",
                                NCCL_INSPECTOR_DUMP_COLL_RING_SIZE="16", **extra), dump_dir=wd.dump)
    r = harness.run(harness.replay_cmd(a.replay, a.plugin, [t]), env, wd.cwd, a.timeout)
    if r.rc:
        problems.append("replay of job lost failed: %s" % r.rc)


def firing(port):
    """The firing alerts' identifying labels (NcclHang's with its comm_id, as a number)."""
    res = query(port, 'ALERTS{alertstate="firing"}')["data"]["result"]
    out = []
    for x in res:
        m = x["metric"]
        keep = [(k, v) for k, v in m.items()
                if k in ("alertname", "slurm_job_id", "node", "gpu", "rank", "comm_name",
                         "peer_node", "message_size", "kind", "reason")]
        if m.get("alertname") == "NcclHang":
            keep.append(("comm_id", int(m.get("comm_id", "-1"), 16)))
        out.append(tuple(sorted(keep)))
    return sorted(out)


def hang_want(h, problems):
    """The NcclHang alerts the hung job must fire: every rank of the stuck communicator but the
    missing one (HANG_OPTS: its waiting ranks, and queued rank 2, whose op is in flight too),
    with its node and GPU; the truth file gives the communicator's id (a hash)."""
    ranks = hang_common.synth_ranks(HANG_OPTS)
    if (h["missing"], h["queued"], h["kind"]) != ([5], [2], "coll"):
        problems.append("the hung job is not as planted: %s" % h)
    want = set()
    for r in set(range(ranks)) - {5}:
        node, gpu = synth_place(r, ranks, 4)
        want.add((("alertname", "NcclHang"), ("comm_id", int(h["comm"], 16)),
                  ("comm_name", "synthetic"), ("gpu", gpu), ("node", node), ("rank", str(r)),
                  ("slurm_job_id", "hang")))
    return want


def hang_controls(port, h, problems):
    """The series NcclHang must not fire on are there, at 0: the clean job's, and the hung
    job's first communicator's (its ops all completed; the processes hold on the second)."""
    for sel, what in (('{slurm_job_id="clean"}', "the clean job"),
                      ('{slurm_job_id="hang",comm_id!="%s"}' % h["comm"],
                       "the hung job's other communicator")):
        res = query(port, "nccl_inflight_oldest_seconds" + sel)["data"]["result"]
        vals = [float(x["value"][1]) for x in res]
        if len(vals) < 6 or any(vals):
            problems.append("nccl_inflight_oldest_seconds of %s: %s (expected 0 on 6 ranks or more)"
                            % (what, vals))


def alerts(a):
    if not (NODE_EXPORTER and PROMETHEUS):
        return True, "OK e2e.alerts: skipped (prometheus or node_exporter not installed)"
    problems, procs = [], []
    want = {
        (("alertname", "NcclRankLate"), ("comm_name", "synthetic"), ("gpu", "GPU1"),
         ("node", "node-002"), ("rank", "5"), ("slurm_job_id", "late")),
    }
    for gpu in ("GPU0", "GPU1"):  # the fixture's two ranks, each with rings of 16
        want.add((("alertname", "NcclRecordsLost"), ("gpu", gpu), ("kind", "collective"),
                  ("node", socket.gethostname()), ("reason", "dropped"), ("slurm_job_id", "lost")))
    for size in ("1-2MB", "4-5MB"):
        for n, p in (("node-001", "node-002"), ("node-002", "node-001")):
            want.add((("alertname", "NcclSlowLink"), ("message_size", size), ("node", n),
                      ("peer_node", p), ("slurm_job_id", "link")))
    with harness.Workdir(a.keep, "promalerts") as wd:
        got, job, h = [], None, None
        try:
            alert_files(a, wd, problems)
            # the hung job writes into the same directory while its processes hold; its files
            # are rewritten every HANG_S while an op is in flight (docs/reference.md)
            env = dict(ENV, SLURM_JOB_ID="hang", NCCL_INSPECTOR_HANG_SECONDS=str(HANG_S),
                       NCCL_INSPECTOR_DUMP_DIR=wd.dump, NCCL_INSPECTOR_PROM_DUMP_RANKS="1",
                       NCCL_INSPECTOR_PROM_DUMP_STATS="1")
            job = hang_common.HangJob(a.replay, a.plugin, wd, HANG_OPTS, env_extra=env,
                                      hold_s=int(a.timeout), tag="-hang")
            if job.wait_ready(a.timeout / 4):
                h = job.truth_hang()
            if not h:
                problems.extend(job.problems or ["the hung job's truth file has no hang"])
            else:
                want |= hang_want(h, problems)
            rules = os.path.join(wd.path, "rules.yml")
            with open(RULES) as f, open(rules, "w") as g:
                g.write(instant_rules(f.read()))
            ne_port, pr_port = free_port(), free_port()
            procs.append(subprocess.Popen(
                [NODE_EXPORTER, "--web.listen-address=127.0.0.1:%d" % ne_port,
                 "--collector.disable-defaults", "--collector.textfile",
                 "--collector.textfile.directory=%s" % wd.dump],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            cfg = os.path.join(wd.path, "prometheus.yml")
            with open(cfg, "w") as f:
                f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                        "rule_files: ['%s']\n"
                        "scrape_configs:\n  - job_name: node\n    static_configs:\n"
                        "      - targets: ['127.0.0.1:%d']\n" % (rules, ne_port))
            procs.append(subprocess.Popen(
                [PROMETHEUS, "--config.file=%s" % cfg,
                 "--storage.tsdb.path=%s" % os.path.join(wd.path, "tsdb"),
                 "--web.listen-address=127.0.0.1:%d" % pr_port],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            # wait (bounded) until what fires is what was planted: the finished jobs' files
            # never change, so what they fire is the same at every evaluation; the hung job's
            # are rewritten while it holds (an earlier op's file may still be there when
            # Prometheus starts), so its answer is the one it settles on. The bound is for a
            # broken build, not a timing: a wrong alert that stays fails, whatever the machine.
            if not wait_for(lambda: set(firing(pr_port)) == want, 90):
                problems.append("what fires was not what was planted within 90 s")
            got = firing(pr_port)
            if h:
                hang_controls(pr_port, h, problems)
                if not job.running():
                    problems.append("the hung job's processes ended before the alerts were read")
            # the dashboard's alert panels show the planted jobs (the rules' series)
            # (panel, job, the labels its top series must have; top: the largest value, or
            # the smallest with -1)
            for prefix, job_id, sign, top in (("Late ranks", "late", 1, {"rank": "5"}),
                                              ("Slow links", "link", -1, {"node": "node-001|node-002",
                                                                          "peer_node": "node-001|node-002"}),
                                              ("Records lost", "lost", 1, {"reason": "dropped"})):
                values = {"datasource": "Prometheus", "cluster": "testcluster", "slurm_job_id": job_id,
                          "node": "All"}
                exprs = [e for t, e in grafana_queries.queries(DASHBOARD, values) if t.startswith(prefix)]
                res = query(pr_port, exprs[0])["data"]["result"] if len(exprs) == 1 else []
                best = max(res, key=lambda x: sign * float(x["value"][1])) if res else None
                if not best or not all(re.fullmatch(v, best["metric"].get(k, "")) for k, v in top.items()):
                    problems.append("dashboard panel %r, job %s: top series %s, expected %s"
                                    % (prefix, job_id, best and best["metric"], top))
        finally:
            if job:
                if job.proc.poll() is None:
                    job.release(a.timeout / 4)
                    if job.rc != 0:
                        problems.append("the hung job exited %s after SIGUSR1: %s"
                                        % (job.rc, (job.stderr or "")[-300:]))
                job.__exit__(None, None, None)
            ALERTS.stop_procs(procs)
        for w in sorted(want - set(got)):
            problems.append("did not fire: %s" % dict(w))
        for g in got:
            if g not in want:
                problems.append("fired, not planted: %s" % dict(g))
        if any(dict(g).get("slurm_job_id") == "clean" for g in got):
            problems.append("an alert fired for the clean job")
        if problems:
            wd.failed = True
            return False, "FAIL e2e.alerts:\n  " + "\n  ".join(problems[:20])
        return True, ("OK e2e.alerts: %d alerts fired, each planted (%d NcclHang, on the hung job's "
                      "stuck communicator while it held); none for the clean job"
                      % (len(got), sum(dict(g)["alertname"] == "NcclHang" for g in got)))


def rewrite(a):
    problems, reads = [], [0]
    with harness.Workdir(a.keep, "promrw") as wd:
        os.makedirs(wd.dump)
        stop = threading.Event()

        def reader():
            while not stop.is_set():
                time.sleep(0.0002)          # leave the interpreter to the main thread too
                for f in os.listdir(wd.dump):
                    if not f.endswith(".prom"):
                        continue
                    try:
                        with open(os.path.join(wd.dump, f)) as fh:
                            text = fh.read()
                    except FileNotFoundError:
                        continue            # removed at the last teardown: fine
                    reads[0] += 1
                    try:
                        parse_prom(text, f)
                        if not text:
                            raise ValueError("empty file")
                    except ValueError as e:
                        problems.append("a read saw a broken file: %s" % e)
                        stop.set()
        t = threading.Thread(target=reader)
        t.start()
        try:
            env = harness.make_env(dict(ENV, NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES="0"),
                                   dump_dir=wd.dump)
            cmd = harness.replay_cmd(a.replay, a.plugin, synthetic=[
                "--ranks", "2", "--comms", "300", "--iters", "2", "--sizes", "1K:1M"])
            for _ in range(5):
                r = harness.run(cmd, env, wd.cwd, a.timeout)
                if r.rc:
                    problems.append("synthetic replay failed: %s" % r.rc)
        finally:
            stop.set()
            t.join()
        if not reads[0]:
            problems.append("the reader never saw a file")
        if problems:
            wd.failed = True
            return False, "FAIL e2e.rewrite: " + "; ".join(problems[:5])
        return True, "OK e2e.rewrite: %d reads during 5 x 600 teardowns, all whole" % reads[0]


def periodic(a):
    """A 30 s interval writes a file during the job, at the periodic dump, and the last one
    has every collective. Judged on what the plugin decided, not when: a loaded machine
    slows the paced job down, so the file may come later than 30 s and hold fewer ops; it
    can never come before the interval (a dump before it would be a bug)."""
    problems = []
    with harness.Workdir(a.keep, "promper") as wd:
        os.makedirs(wd.dump)
        env = harness.make_env(dict(ENV, NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS="30000000"),
                               dump_dir=wd.dump)
        cmd = harness.replay_cmd(a.replay, a.plugin, synthetic=[
            "--ranks", "2", "--iters", "45", "--sizes", "1M:1M"]) + ["--pace-us", "100000"]
        t0 = time.time()
        p = subprocess.Popen(cmd, env=env, cwd=wd.cwd, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, universal_newlines=True)
        seen_at, fams, still_running = None, None, False
        deadline = max(a.timeout, 120)  # generous: the job is paced to last about 36 s
        while p.poll() is None and time.time() - t0 < deadline:
            files = [f for f in os.listdir(wd.dump) if f.endswith(".prom")]
            if files and seen_at is None:
                seen_at = time.time() - t0
                with open(os.path.join(wd.dump, sorted(files)[0])) as f:
                    fams = parse_prom(f.read(), files[0])
                still_running = p.poll() is None
            time.sleep(0.25)
        if p.poll() is None:
            p.kill()
        p.wait(timeout=30)
        if p.returncode:
            problems.append("replay failed: %s %s" % (p.returncode, p.stderr.read()[-500:]))
        want = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast"}

        def colls(fs):
            return {l.get("collective") for l, _ in fs.get("nccl_bus_bandwidth_gbs", {}).get("samples", [])}
        if seen_at is None:
            problems.append("no .prom file appeared while the job ran")
        elif seen_at < 28:
            problems.append("the first file appeared after %.1f s, before the 30 s interval" % seen_at)
        elif not still_running:
            problems.append("the file appeared only at the end of the job")
        elif not colls(fams) or not colls(fams) <= want:
            problems.append("the periodic file has collectives %s, expected some of %s" % (colls(fams), want))
        files = sorted(f for f in os.listdir(wd.dump) if f.endswith(".prom"))
        if files:
            with open(os.path.join(wd.dump, files[0])) as f:
                last = colls(parse_prom(f.read(), files[0]))
            # windows: the periodic one and the last one (the job's end) have every collective
            if fams is not None and colls(fams) | last != want:
                problems.append("the two windows have collectives %s and %s, expected %s together"
                                % (colls(fams), last, want))
        if problems:
            wd.failed = True
            return False, "FAIL e2e.periodic: " + "; ".join(problems)
        return True, "OK e2e.periodic: first file at %.1f s, during the job, with %d collectives; all 4 by the end" % (
            seen_at, len(colls(fams)))


VALIDATE = os.path.join(HERE, "..", "tools", "validate", "alerts.py")
# tools/validate/alerts.py --jobs quick: (alerts' hits, the report's hits) of what was planted
VALIDATE_QUICK = {"clean-8r4n": (0, 0), "late-16r4n-200us": (1, 1), "link-8r4n-x4": (1, 1),
                  "link-x2": (0, 1),     # half speed is the alert's threshold, not below it
                  "late-2r2n": (0, 1)}   # 2 ranks: the alert cannot say which one is late


def validate(a):
    if not (NODE_EXPORTER and PROMETHEUS):
        return True, "OK e2e.validate: skipped (prometheus or node_exporter not installed)"
    problems = []
    with harness.Workdir(a.keep, "promval") as wd:
        out = os.path.join(wd.path, "table.json")
        report = os.path.join(os.path.dirname(a.replay), "inspector-report")
        r = harness.run([sys.executable, VALIDATE, "--jobs", "quick", "--replay", a.replay,
                         "--plugin", a.plugin, "--report", report, "--json", out,
                         "--keep", os.path.join(wd.path, "work")], os.environ.copy(), wd.cwd, a.timeout)
        if r.rc or not os.path.exists(out):
            problems.append("alerts.py exit %s: %s" % (r.rc, r.stderr[-800:]))
        else:
            with open(out) as f:
                rows = {x["job"]: x for x in json.load(f)["rows"]}
            if set(rows) != set(VALIDATE_QUICK):
                problems.append("jobs %s, expected %s" % (sorted(rows), sorted(VALIDATE_QUICK)))
            for job, (ah, rh) in sorted(VALIDATE_QUICK.items()):
                x = rows.get(job)
                if x and (x["alerts_hits"], x["report_hits"]) != (ah, rh):
                    problems.append("%s: hits (alerts, report) %s, expected %s"
                                    % (job, (x["alerts_hits"], x["report_hits"]), (ah, rh)))
                if x and (x["alerts_false"], x["report_false"]) != ("none", "none"):
                    problems.append("%s: false findings %s" % (job, (x["alerts_false"], x["report_false"])))
            if "| late-16r4n-200us | 16 ranks, 4 nodes (4 a node) | rank 9 late | rank 9 (1/1) |" not in r.stdout:
                problems.append("the table lacks late-16r4n-200us's row: %s" % r.stdout[:600])
        if problems:
            wd.failed = True
            return False, "FAIL e2e.validate:\n  " + "\n  ".join(problems[:20])
        return True, "OK e2e.validate: %d planted jobs, the hits and misses of docs/VALIDATION.md" % len(rows)


def cases():
    return [harness.Case("e2e.stack", stack, labels=["prom"], timeout=120),
            harness.Case("e2e.alerts", alerts, labels=["prom"], timeout=240),
            harness.Case("e2e.validate", validate, labels=["prom"], timeout=240),
            harness.Case("e2e.rewrite", rewrite, labels=["prom"], timeout=120),
            harness.Case("e2e.periodic", periodic, labels=["prom"], timeout=120)]


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))
