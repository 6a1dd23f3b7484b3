#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The OTLP sink at its edges, end to end through the replay driver (a C host, the plugin
dlopen'ed as NCCL does) against tests/lib/otlp_receiver.py on 127.0.0.1; helpers from test_otlp.py.
  otlp.exit-https-closing   an https:// collector on loopback whose TLS handshake never
                            succeeds (a certificate the job does not trust), so that the last
                            export at exit needs a new handshake: the job exits with status 0
                            and its log complete (the last export used to run in the library's
                            destructor, after OpenSSL's atexit cleanup: SIGSEGV every time);
                            skipped without libcurl or the openssl tool
  otlp.exit-https-closing.no-finalize  the same from a host that never finalizes its
                            communicators (a Python job often does not)
  otlp.exit-https-python-host  the same from a Python host that initialised OpenSSL itself
                            first (import ssl) and drives the plugin through ctypes (init
                            only); skipped for a sanitizer build (its runtime must come first)
  otlp.many-bodies          384 series with the body limit lowered to 20 KB (a test hook): an
                            export is about 35 bodies, more than the exporter's queue of 16;
                            the last export must still hold every series, equal to the JSON log
                            (bodies beyond the 16th used to be dropped silently)
  otlp.resource-attributes  5,000 OTEL_RESOURCE_ATTRIBUTES, 300 of them malformed: two
                            warnings, one saying how many were skipped for the limit, one how
                            many did not parse and which first (one warning per attribute
                            before)
"""
import ctypes
import os
import re
import shutil
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))  # harness, oracles, receivers
import harness  # noqa: E402
import test_otlp  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TORCH = ["2.28.9/torch-1735"]


def libcurl_loadable():
    try:
        ctypes.CDLL("libcurl.so.4")
        return True
    except OSError:
        return False


def exit_https_case(name, no_finalize):
    def fn(a):
        if not shutil.which("openssl"):
            return True, "SKIP %s: the openssl tool is not installed" % name
        if not libcurl_loadable():
            return True, "SKIP %s: libcurl.so.4 cannot be loaded (https:// needs it)" % name
        with harness.Workdir(a.keep, "otlp") as wd:
            os.makedirs(wd.dump)
            rec = test_otlp.Receiver(os.path.join(wd.path, "recv"), tls=True)
            try:
                env = harness.make_env({"NCCL_INSPECTOR_OTLP_EXPORT": "1",
                                        "OTEL_EXPORTER_OTLP_ENDPOINT": "https://127.0.0.1:%d" % rec.port,
                                        "OTEL_METRIC_EXPORT_INTERVAL": "100"}, dump_dir=wd.dump)
                cmd = harness.replay_cmd(a.replay, a.plugin, [harness.fixture(t) for t in TORCH],
                                         abi="trace")
                if no_finalize:
                    cmd.insert(1, "--no-finalize")
                r = harness.run(cmd, env, wd.cwd, a.timeout)
            finally:
                rec.stop()
            tot, _, _ = test_otlp.log_totals(wd.dump)
            out = r.stdout + r.stderr
            problems = harness.sanitizer_reports(r.stderr)
            if r.rc != 0:
                problems.append("replay rc %s%s" % (r.rc, " (SIGSEGV)" if r.rc in (-11, 139) else ""))
            if not tot:
                problems.append("no records in the JSON log")
            # the exporter's summary at stop: its last export was tried (and, untrusted, lost)
            if not re.search(r"OTLP exporter for https://127\.0\.0\.1:%d\S* stopped" % rec.port, out):
                problems.append("no summary of the exporter's stop: was the last export made?")
            if problems:
                wd.failed = True
                return False, "FAIL %s: %s\n%s" % (name, "; ".join(problems), out[-1500:])
            return True, "OK %s: exit status 0 after a last export over a new TLS handshake; %d " \
                "records in the log" % (name, sum(v[0] for d in tot.values() for v in d.values()))
    return harness.Case(name, fn, labels=["otlp"], timeout=120)


# A Python host: OpenSSL initialised by the host (import ssl) before the plugin is loaded;
# one communicator through ncclProfiler_v4's init (src/nccl/profiler_abi.h), never finalized.
PY_HOST = r"""
import ctypes, ssl, sys
lib = ctypes.CDLL(sys.argv[1])
INIT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_int),
                        ctypes.c_char_p, ctypes.c_uint64, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                        ctypes.c_void_p)
class Table(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("init", INIT), ("start", ctypes.c_void_p),
                ("stop", ctypes.c_void_p), ("record", ctypes.c_void_p), ("finalize", ctypes.c_void_p)]
t = Table.in_dll(lib, "ncclProfiler_v4")
ctx, mask = ctypes.c_void_p(), ctypes.c_int(0)
rc = t.init(ctypes.byref(ctx), ctypes.byref(mask), b"pyhost", 42, 1, 2, 0, None)
print("init rc %d context %s" % (rc, "set" if ctx.value else "NULL"), flush=True)
"""


def sanitizer_build(plugin):
    with open(plugin, "rb") as f:
        data = f.read()
    return b"libasan.so" in data or b"libtsan.so" in data


def exit_https_python_case():
    name = "otlp.exit-https-python-host"

    def fn(a):
        if not shutil.which("openssl"):
            return True, "SKIP %s: the openssl tool is not installed" % name
        if not libcurl_loadable():
            return True, "SKIP %s: libcurl.so.4 cannot be loaded (https:// needs it)" % name
        if sanitizer_build(a.plugin):
            return True, "SKIP %s: a sanitizer build cannot be loaded into python" % name
        with harness.Workdir(a.keep, "otlp") as wd:
            os.makedirs(wd.dump)
            rec = test_otlp.Receiver(os.path.join(wd.path, "recv"), tls=True)
            try:
                env = harness.make_env({"NCCL_INSPECTOR_OTLP_EXPORT": "1",
                                        "OTEL_EXPORTER_OTLP_ENDPOINT": "https://127.0.0.1:%d" % rec.port,
                                        "OTEL_METRIC_EXPORT_INTERVAL": "100"}, dump_dir=wd.dump)
                r = harness.run([sys.executable, "-B", "-c", PY_HOST, a.plugin], env, wd.cwd, a.timeout)
            finally:
                rec.stop()
            out = r.stdout + r.stderr
            problems = []
            if r.rc != 0:
                problems.append("python rc %s%s" % (r.rc, " (SIGSEGV)" if r.rc in (-11, 139) else ""))
            if "init rc 0 context set" not in r.stdout:
                problems.append("the plugin's init did not track the communicator")
            if not re.search(r"OTLP exporter for https://127\.0\.0\.1:%d\S* stopped" % rec.port, out):
                problems.append("no summary of the exporter's stop: was the last export made?")
            if problems:
                wd.failed = True
                return False, "FAIL %s: %s\n%s" % (name, "; ".join(problems), out[-1500:])
            return True, "OK %s: exit status 0 after a last export over a new TLS handshake" % name
    return harness.Case(name, fn, labels=["otlp"], timeout=120)


# 4 communicators x 8 ranks x 2 collectives x 6 size buckets
MANY_ARGS = ["--comms", "4", "--ranks", "8", "--colls", "AllReduce,AllGather", "--sizes", "64K:64M",
             "--iters", "3"]
MANY_SERIES = 4 * 8 * 2 * 6
QUEUE_MAX = 16  # src/sink/otlp/otlp.c


def many_bodies_case():
    name = "otlp.many-bodies"

    def fn(a):
        if not shutil.which("protoc"):
            return True, "SKIP %s: protoc not installed (Debian: protobuf-compiler)" % name
        with harness.Workdir(a.keep, "otlp") as wd:
            os.makedirs(wd.dump)
            rec = test_otlp.Receiver(os.path.join(wd.path, "recv"))
            try:
                env = harness.make_env(test_otlp.env_for(rec.port, {"INSPECTOR_OTLP_MAX_BODY_BYTES": "20000"}),
                                       dump_dir=wd.dump)
                cmd = harness.replay_cmd(a.replay, a.plugin, synthetic=MANY_ARGS)
                r = harness.run(cmd, env, wd.cwd, a.timeout)
            finally:
                rec.stop()
            exports, problems = test_otlp.last_exports(rec, False)
            problems += harness.sanitizer_reports(r.stderr)
            if r.rc:
                problems.append("replay rc %s: %s" % (r.rc, r.stderr[-500:]))
            p2, n = test_otlp.compare(wd.dump, exports)
            problems += p2
            bodies = [d["bodies"] for d in exports.values()]
            series = [len(d["metrics"]["nccl.operations"]) for d in exports.values()]
            if series != [MANY_SERIES]:
                problems.append("series in the last export: %s, want [%d]" % (series, MANY_SERIES))
            if not bodies or bodies[0] <= QUEUE_MAX:
                problems.append("the last export came in %s bodies: not more than the queue's %d, "
                                "so this tested nothing" % (bodies, QUEUE_MAX))
            if "WARN" in r.stderr and "OTLP" in r.stderr:
                problems.append("an OTLP warning: %s" % [l for l in r.stderr.splitlines() if "WARN" in l][:3])
            if problems:
                wd.failed = True
                return False, "FAIL %s: %s" % (name, "; ".join(problems[:6]))
            return True, "OK %s: %d series, %d operations in the last export (%s bodies), equal to the " \
                "log" % (name, series[0], n, bodies)
    return harness.Case(name, fn, labels=["otlp"], timeout=120)


def resource_attributes_case():
    name = "otlp.resource-attributes"

    def fn(a):
        with harness.Workdir(a.keep, "otlp") as wd:
            os.makedirs(wd.dump)
            attrs = ["k%d=v%d" % (i, i) for i in range(4700)] + ["bad%d" % i for i in range(300)]
            env = harness.make_env({"NCCL_INSPECTOR_OTLP_EXPORT": "1",
                                    "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
                                    "OTEL_EXPORTER_OTLP_TIMEOUT": "100",
                                    "OTEL_RESOURCE_ATTRIBUTES": ",".join(attrs)}, dump_dir=wd.dump)
            cmd = harness.replay_cmd(a.replay, a.plugin, [harness.fixture(t) for t in TORCH], abi="trace")
            r = harness.run(cmd, env, wd.cwd, a.timeout)
            lines = [l for l in (r.stdout + r.stderr).splitlines() if "OTEL_RESOURCE_ATTRIBUTES" in l
                     and "WARN" in l]
            problems = harness.sanitizer_reports(r.stderr)
            if r.rc:
                problems.append("replay rc %s" % r.rc)
            # 4,700 parse: 32 kept, 4,668 over the limit; 300 do not parse, the first is entry 4,701
            want = [r"more than 32 attributes: the 4668 from 'k32' on are skipped",
                    r"300 entries are not key=value \(URL-encoded\), the first entry 4701 'bad0'"]
            for w in want:
                if not any(re.search(w, l) for l in lines):
                    problems.append("no warning matching %r" % w)
            if len(lines) != len(want):
                problems.append("%d warnings about OTEL_RESOURCE_ATTRIBUTES, want %d" % (len(lines), len(want)))
            if problems:
                wd.failed = True
                return False, "FAIL %s: %s\n%s" % (name, "; ".join(problems), "\n".join(lines[:5]))
            return True, "OK %s: %d warnings for 5,000 attributes:\n%s" % (name, len(lines), "\n".join(lines))
    return harness.Case(name, fn, labels=["otlp"], timeout=60)


def cases():
    return [exit_https_case("otlp.exit-https-closing", False),
            exit_https_case("otlp.exit-https-closing.no-finalize", True), exit_https_python_case(),
            many_bodies_case(), resource_attributes_case()]


if __name__ == "__main__":
    sys.exit(harness.main_cases(cases(), __doc__.splitlines()[0]))
