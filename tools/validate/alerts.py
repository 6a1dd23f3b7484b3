#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The alert rules (prometheus/inspector-rules.yml) against inspector-report, on planted jobs:
hit rate and false alerts, as the table of docs/VALIDATION.md ("Alerts on planted jobs").

    tools/validate/alerts.py [--build build] [--jobs full|quick] [--rules FILE] [--keep DIR] [--json OUT]

Each job is synthetic traffic (inspector-replay --synthetic --procs: one process per rank, nodes
named node-000...) with a planted fault or none, replayed once through the plugin with both
outputs on (NCCL_INSPECTOR_PROM_DUMP=1, _JSON_DUMP=1, _PROM_DUMP_RANKS=1, _PROM_DUMP_STATS=1),
SLURM_JOB_ID its name. The same run's files go two ways:
  - alerts: every job's .prom files into one textfile directory; Debian's node_exporter serves
    it, a real Prometheus scrapes it and evaluates the shipped rules with two
    substitutions, as tests/test_prom_e2e.py does (a replay lasts a second and writes each file
    once, at its exit): rate(x[5m]) read as x (the whole job's totals: the rate over a range
    holding the whole job, up to the range's length) and every for: as 0s. The firing alerts
    are read through the HTTP API once every rule group has been evaluated 3 s after the last
    job's series were there (a condition, polled, bounded);
  - inspector-report --json on the job's JSON logs.
A planted late rank is found when NcclRankLate names its rank in that job (the report: a
STRAGGLER of that rank); a planted slow link when NcclSlowLink names its node pair, either
way (the report: a SLOW LINK between those hosts). Anything else an alert or a finding names
in a job is false: another rank, another pair, a slow node that is not an end of the planted
link, NcclRecordsLost or NcclHang on these jobs. Standard library only; needs
prometheus and prometheus-node-exporter on PATH. Exit 0 when the table was made; 1 otherwise.
"""
import argparse
import datetime
import glob
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
RULES = os.path.join(ROOT, "prometheus", "inspector-rules.yml")

# name, options, planted: ("late", rank) / ("link", node a, node b) / None.
# Defaults of the generator: 20 iterations, sizes 1K:64M x4 (the plugin keeps >= 8 KiB),
# AllReduce, AllGather, ReduceScatter, Broadcast; lat 10 us, 100 GB/s.
P2PN = ["--p2p", "--p2p-pattern", "nodes"]
JOBS = [
    ("clean-8r4n", ["--ranks", "8", "--nodes", "4"] + P2PN, None),
    ("clean-16r2n", ["--ranks", "16", "--nodes", "2", "--p2p"], None),
    ("clean-8r8n", ["--ranks", "8", "--nodes", "8"] + P2PN, None),
    ("clean-32r4n-2comms", ["--ranks", "32", "--nodes", "4", "--comms", "2", "--iters", "10"] + P2PN, None),
    ("clean-offset5ms-drift", ["--ranks", "8", "--nodes", "4", "--clock-offset-ms", "5",
                               "--clock-drift-ppm", "20"] + P2PN, None),
    ("clean-ring-p2pwait", ["--ranks", "16", "--nodes", "4", "--p2p", "--p2p-wait"], None),
    # launch skew: rank 2 arrives 0..60 us late (the others within 6 us), under both the
    # report's --late-us (100) and the alert's wait (50 us): no fault
    ("clean-skew-0-60us", ["--ranks", "8", "--nodes", "4", "--late-rank", "2", "--late-us", "0",
                           "--late-jitter-us", "60"], None),
    # every transfer 3x slower from midway (the report says CHANGE, not a link or a rank)
    ("clean-degrade-midway", ["--ranks", "8", "--nodes", "4", "--order", "iters", "--degrade", "0.5:3"]
     + P2PN, None),
    ("late-8r4n-300us", ["--ranks", "8", "--nodes", "4", "--late-rank", "5", "--late-us", "300"], ("late", 5)),
    ("late-16r4n-200us", ["--ranks", "16", "--nodes", "4", "--late-rank", "9", "--late-us", "200"], ("late", 9)),
    ("late-8r8n-150us", ["--ranks", "8", "--nodes", "8", "--late-rank", "2", "--late-us", "150"], ("late", 2)),
    ("late-16r2n-300us", ["--ranks", "16", "--nodes", "2", "--late-rank", "12", "--late-us", "300"], ("late", 12)),
    ("late-100us", ["--ranks", "8", "--nodes", "4", "--late-rank", "5", "--late-us", "100"], ("late", 5)),
    ("late-offset5ms", ["--ranks", "8", "--nodes", "4", "--late-rank", "6", "--late-us", "300",
                        "--clock-offset-ms", "5"], ("late", 6)),
    ("late-jitter200", ["--ranks", "8", "--nodes", "4", "--late-rank", "1", "--late-us", "200",
                        "--late-jitter-us", "200"], ("late", 1)),
    ("late-half-the-ops", ["--ranks", "8", "--nodes", "4", "--late-rank", "3", "--late-us", "400",
                           "--late-fraction", "0.5"], ("late", 3)),
    ("late-fifth-the-ops", ["--ranks", "8", "--nodes", "4", "--late-rank", "3", "--late-us", "400",
                            "--late-fraction", "0.2"], ("late", 3)),
    ("late-from-midway", ["--ranks", "8", "--nodes", "4", "--late-rank", "4", "--late-us", "300",
                          "--late-from", "0.5"], ("late", 4)),
    ("late-coll-with-p2p", ["--ranks", "16", "--nodes", "4", "--late-rank", "7", "--late-us", "300",
                            "--late-in", "coll"] + P2PN, ("late", 7)),
    ("late-3r3n", ["--ranks", "3", "--nodes", "3", "--late-rank", "0", "--late-us", "300"], ("late", 0)),
    ("late-2r2n", ["--ranks", "2", "--nodes", "2", "--late-rank", "1", "--late-us", "300"], ("late", 1)),
    ("link-8r4n-x4", ["--ranks", "8", "--nodes", "4", "--slow-link", "1:2"] + P2PN, ("link", 1, 2)),
    ("link-8r8n-x3", ["--ranks", "8", "--nodes", "8", "--slow-link", "3:4", "--slow-factor", "3"] + P2PN,
     ("link", 3, 4)),
    ("link-16r4n-ring", ["--ranks", "16", "--nodes", "4", "--p2p", "--slow-link", "0:1"], ("link", 0, 1)),
    ("link-x2", ["--ranks", "8", "--nodes", "4", "--slow-link", "0:3", "--slow-factor", "2"] + P2PN,
     ("link", 0, 3)),
    ("link-all-pairs-offset", ["--ranks", "8", "--nodes", "4", "--p2p", "--p2p-pattern", "all",
                               "--slow-link", "1:3", "--clock-offset-ms", "3", "--iters", "10"],
     ("link", 1, 3)),
    ("link-2nodes", ["--ranks", "4", "--nodes", "2", "--slow-link", "0:1"] + P2PN, ("link", 0, 1)),
    ("link-and-late", ["--ranks", "16", "--nodes", "4", "--slow-link", "2:3", "--late-rank", "5",
                       "--late-us", "300", "--late-in", "coll"] + P2PN, ("both", 5, 2, 3)),
]
# CI's short version (prom_e2e:e2e.validate): a clean job, a hit of each kind, the two misses
QUICK = ("clean-8r4n", "late-16r4n-200us", "link-8r4n-x4", "link-x2", "late-2r2n")


def instant_rules(text, hang_s=None):
    """The rules with every rate over 5m read as the counter's total, every for: 0s, and, given
    hang_s, the hang threshold (300 s, the plugin's default NCCL_INSPECTOR_HANG_SECONDS) hang_s.
    tests/test_prom_e2e.py loads the rules through this too."""
    out, n = re.subn(r"rate\((\w+)\[5m\]\)", r"\1", text)
    out, m = re.subn(r"for: \d+m", "for: 0s", out)
    h = 1
    if hang_s is not None:
        out, h = re.subn(r"(record: nccl:alert_threshold:hang_seconds\n\s+expr: )vector\(300\)",
                         r"\g<1>vector(%d)" % hang_s, out)
    if re.search(r"\w\[5m\]", out) or n < 10 or m != 4 or h != 1:
        raise ValueError("the rules changed shape: %d rates, %d for:, %d hang thresholds" % (n, m, h))
    return out


def stop_procs(procs):
    """Terminates the daemons started (Prometheus, node_exporter), killing any that linger."""
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def api(port, path, **params):
    url = "http://127.0.0.1:%d/api/v1/%s?%s" % (port, path, urllib.parse.urlencode(params))
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read().decode())["data"]


def poll(fn, bound_s, what):
    """fn() until it is true (exceptions: not yet); the bound is for a broken setup."""
    end = time.time() + bound_s
    while time.time() < end:
        try:
            v = fn()
            if v:
                return v
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.2)
    raise RuntimeError("%s: not within %d s" % (what, bound_s))


def run_job(a, work, name, opts):
    """The job's plugin output in work/name; its .prom files also into work/textfile."""
    dump = os.path.join(work, name)
    os.makedirs(dump)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NCCL_", "SLURM_", "OTEL_"))}
    env.update({"NCCL_INSPECTOR_ENABLE": "1", "NCCL_INSPECTOR_PROM_DUMP": "1",
                "NCCL_INSPECTOR_JSON_DUMP": "1", "NCCL_INSPECTOR_PROM_DUMP_RANKS": "1",
                "NCCL_INSPECTOR_PROM_DUMP_STATS": "1", "NCCL_INSPECTOR_DUMP_DIR": dump,
                "NCCL_INSPECTOR_CLUSTER": "validate", "SLURM_JOB_ID": name})
    cmd = [a.replay, "--plugin", a.plugin, "--synthetic"] + opts + ["--procs", "--no-finalize", "--quiet"]
    r = subprocess.run(cmd, env=env, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=600)
    if r.returncode:
        raise RuntimeError("%s: replay exit %d: %s" % (name, r.returncode, r.stderr[-500:]))
    for f in glob.glob(os.path.join(dump, "*.prom")):
        shutil.copy(f, os.path.join(work, "textfile", name + "-" + os.path.basename(f)))
    return dump


def report(a, dump):
    r = subprocess.run([a.report, "--json", dump], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                       universal_newlines=True, timeout=600)
    if r.returncode:
        raise RuntimeError("inspector-report on %s: exit %d" % (dump, r.returncode))
    o = json.loads(r.stdout)
    out = []
    for s in o.get("stragglers", []):
        out.append(("late", s["rank"]))
    for s in o.get("slow_links", []):
        out.append(("link",) + tuple(sorted((s["a"], s["b"]))))
    for s in o.get("slow_nodes", []):
        out.append(("node", s.get("host") or s.get("hostname") or s.get("node") or json.dumps(s)[:60]))
    return sorted(set(out))


def prometheus_alerts(a, work, jobs):
    """{job: sorted set of (alertname, what it names)} from a real Prometheus."""
    rules = os.path.join(work, "rules.yml")
    with open(a.rules) as f, open(rules, "w") as g:
        g.write(instant_rules(f.read()))
    ne, pr = free_port(), free_port()
    cfg = os.path.join(work, "prometheus.yml")
    with open(cfg, "w") as f:
        # the full set's files are 9 MB, which node_exporter serves in a second or two here
        scrape = "2s" if len(jobs) <= 8 else "10s"
        f.write("global:\n  scrape_interval: %s\n  scrape_timeout: %s\n  evaluation_interval: 1s\n"
                "rule_files: ['%s']\n"
                "scrape_configs:\n  - job_name: node\n    static_configs:\n"
                "      - targets: ['127.0.0.1:%d']\n" % (scrape, scrape, rules, ne))
    procs = [subprocess.Popen([a.node_exporter, "--web.listen-address=127.0.0.1:%d" % ne,
                               "--collector.disable-defaults", "--collector.textfile",
                               "--collector.textfile.directory=%s" % os.path.join(work, "textfile")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        procs.append(subprocess.Popen([a.prometheus, "--config.file=%s" % cfg,
                                       "--storage.tsdb.path=%s" % os.path.join(work, "tsdb"),
                                       "--web.listen-address=127.0.0.1:%d" % pr],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

        def all_there():
            res = api(pr, "query", query="count by (slurm_job_id) (nccl_rank_collectives_total)")["result"]
            got = {x["metric"]["slurm_job_id"] for x in res}
            return res[0]["value"][0] if got >= set(jobs) else None
        t0 = float(poll(all_there, 120, "every job's series in Prometheus"))

        def evaluated():
            groups = api(pr, "rules")["groups"]
            last = [datetime.datetime.fromisoformat(re.sub(r"(\.\d{6})\d*", r"\1", g["lastEvaluation"])
                                                    .replace("Z", "+00:00")).timestamp() for g in groups]
            return len(groups) >= 5 and min(last) > t0 + 3
        poll(evaluated, 120, "every rule group evaluated after the series came")
        res = api(pr, "query", query='ALERTS{alertstate="firing"}')["result"]
    finally:
        stop_procs(procs)
    out = {j: set() for j in jobs}
    for x in res:
        m = x["metric"]
        name = m["alertname"]
        if name == "NcclRankLate":
            what = ("late", int(m["rank"]))
        elif name == "NcclSlowLink":
            what = ("link",) + tuple(sorted((m["node"], m["peer_node"])))
        else:
            what = (name, m.get("node", ""), m.get("gpu", ""), m.get("reason", ""))
        out.setdefault(m.get("slurm_job_id", "?"), set()).add(what)
    return {j: sorted(v) for j, v in out.items()}


def judge(planted, found):
    """(hits, planted count, false findings) of one job's findings against what was planted."""
    want = set()
    if planted and planted[0] in ("late", "both"):
        want.add(("late", planted[1]))
    if planted and planted[0] in ("link", "both"):
        a, b = planted[-2:]
        want.add(("link", "node-%03d" % min(a, b), "node-%03d" % max(a, b)))
    ends = {w[1] for w in want if w[0] == "link"} | {w[2] for w in want if w[0] == "link"}
    false = [f for f in found if f not in want and not (f[0] == "node" and f[1] in ends)]
    return len(want & set(found)), len(want), false


def show(found):
    def one(f):
        if f[0] == "late":
            return "rank %d" % f[1]
        if f[0] == "link":
            return "%s-%s" % (f[1][5:], f[2][5:])
        if f[0] == "node":
            return "node %s" % f[1]
        return " ".join(str(x) for x in f if x)
    return ", ".join(one(f) for f in found) or "none"


def planted_text(p):
    if not p:
        return "none"
    if p[0] == "late":
        return "rank %d late" % p[1]
    if p[0] == "link":
        return "link %03d-%03d slow" % (p[1], p[2])
    return "rank %d late, link %03d-%03d slow" % (p[1], p[2], p[3])


def shape(opts):
    def val(k, d):
        return int(opts[opts.index(k) + 1]) if k in opts else d
    r, n = val("--ranks", 8), val("--nodes", 1)
    return "%d ranks, %d nodes (%g a node)" % (r, n, r / n)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="the build directory (build)")
    ap.add_argument("--replay"), ap.add_argument("--plugin"), ap.add_argument("--report")
    ap.add_argument("--jobs", choices=("full", "quick"), default="full")
    ap.add_argument("--rules", default=RULES, help="the rules file (the shipped one)")
    ap.add_argument("--keep", help="work here (kept) instead of a temporary directory")
    ap.add_argument("--json", help="also write the results as JSON here")
    a = ap.parse_args()
    a.replay = a.replay or os.path.join(a.build, "bin", "inspector-replay")
    a.report = a.report or os.path.join(a.build, "bin", "inspector-report")
    a.plugin = a.plugin or os.path.join(a.build, "lib", "libnccl-profiler-inspector.so")
    a.replay, a.report, a.plugin = (os.path.abspath(p) for p in (a.replay, a.report, a.plugin))
    a.prometheus = shutil.which("prometheus")
    a.node_exporter = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
    if not (a.prometheus and a.node_exporter):
        print("alerts.py: needs prometheus and prometheus-node-exporter on PATH", file=sys.stderr)
        return 1
    jobs = [j for j in JOBS if a.jobs == "full" or j[0] in QUICK]
    work = a.keep or tempfile.mkdtemp(prefix="inspector-validate-alerts-")
    os.makedirs(os.path.join(work, "textfile"), exist_ok=a.keep is not None)
    t_start = time.time()
    try:
        found_report = {}
        for name, opts, _ in jobs:
            found_report[name] = report(a, run_job(a, work, name, opts))
        found_alerts = prometheus_alerts(a, work, [j[0] for j in jobs])
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    rows, tot = [], {"alerts": [0, 0, 0], "report": [0, 0, 0]}  # hits, planted, jobs with a false one
    clean = {"alerts": 0, "report": 0}
    for name, opts, planted in jobs:
        row = {"job": name, "shape": shape(opts), "planted": planted_text(planted)}
        for who, found in (("alerts", found_alerts.get(name, [])), ("report", found_report[name])):
            hits, want, false = judge(planted, found)
            tot[who][0] += hits
            tot[who][1] += want
            tot[who][2] += bool(false)
            clean[who] += not planted and not found
            row[who] = show(found)
            row[who + "_hits"], row[who + "_planted"], row[who + "_false"] = hits, want, show(false)
        rows.append(row)
    print("| job | shape | planted | alerts fired | inspector-report |")
    print("| --- | --- | --- | --- | --- |")
    for r in rows:
        def cell(who):
            mark = ""
            if r[who + "_planted"]:
                mark = " (%d/%d)" % (r[who + "_hits"], r[who + "_planted"])
            if r[who + "_false"] != "none":
                mark += " **false: %s**" % r[who + "_false"]
            return r[who] + mark
        print("| %s | %s | %s | %s | %s |" % (r["job"], r["shape"], r["planted"], cell("alerts"), cell("report")))
    n_clean = sum(1 for j in jobs if not j[2])
    print()
    print("| | faults found | jobs with a false alert or finding | clean jobs silent |")
    print("| --- | --- | --- | --- |")
    for who, label in (("alerts", "alerts (Prometheus)"), ("report", "inspector-report")):
        h, w, f = tot[who]
        print("| %s | %d of %d (%.0f%%) | %d of %d | %d of %d |" % (label, h, w, 100.0 * h / max(w, 1),
                                                                    f, len(jobs), clean[who], n_clean))
    print("\n%d jobs in %.0f s" % (len(jobs), time.time() - t_start), file=sys.stderr)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"rows": rows, "totals": tot, "clean_silent": clean}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
