#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The demo (`make demo`): what Inspector writes and what inspector-report makes of it, on any
# machine, no GPU. It builds only the plugin and the two tools (quietly: the compiler's output is
# shown only if the build fails), replays real NCCL traffic recorded on 2 x H200 and a synthetic
# 16-rank job on 4 nodes with a late rank and a slow link planted, prints one record and the
# report, and leaves everything in demo-output/. Under 30 s on 2 cores once built.
#   tools/demo.sh [BUILD_DIR]      (default build; JOBS=N for the build's parallelism)
#   tools/demo.sh --help | --version
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

usage() {
  cat <<EOF
usage: tools/demo.sh [BUILD_DIR]     (make demo)
       tools/demo.sh --help | --version

What Inspector writes and what inspector-report makes of it, on any machine, with no GPU:
builds the plugin, inspector-replay and inspector-report in BUILD_DIR (default: build, under
the source tree when relative), replays NCCL traffic recorded on 2 x H200 and a synthetic
16-rank job on 4 nodes with a late rank and a slow link planted, prints one record and the
report, and leaves the logs, an HTML page and a timeline in demo-output/.
  -h, --help   this text
  --version    the version and git revision the build records (as the plugin's)
environment: JOBS=N  the build's parallelism (default: every online CPU)
EOF
}
# The version as the build sets it: project() of CMakeLists.txt, and the git revision by the
# build's own rule (cmake/git_rev.cmake: this tree's commit, never an enclosing checkout's).
version() {
  local v rev=unknown
  v=$(sed -n 's/^project(inspector VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
  if command -v cmake >/dev/null; then
    rev=$(cmake -DINS_GIT_REV_SOURCE_DIR="$root" -P "$root/cmake/git_rev.cmake" 2>/dev/null) || rev=unknown
  fi
  echo "demo.sh ${v:-unknown} (git ${rev:-unknown})"
}
case ${1:-} in
  -h | --help) usage; exit 0 ;;
  --version) version; exit 0 ;;
  -*) echo "tools/demo.sh: unknown option '$1' (--help: usage)" >&2; exit 2 ;;
esac
if [ $# -gt 1 ]; then
  echo "tools/demo.sh: one BUILD_DIR at most, got $# arguments (--help: usage)" >&2
  exit 2
fi
build=${1:-build}
case $build in /*) bdir=$build ;; *) bdir=$root/$build ;; esac
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
bin=$bdir/bin
plugin=$bdir/lib/libnccl-profiler-inspector.so
out=$root/demo-output
data=$root/tests/data/nccl-2.28.9-h200x2

# A path as the user would type it from here.
show() { case $1 in "$PWD"/*) printf '%s\n' "${1#"$PWD"/}" ;; *) printf '%s\n' "$1" ;; esac; }
# "N logs, M records" of a dump directory
summary() {
  set -- "$1" "$1"/*.log
  echo "$(($# - 1)) logs, $(cat "${@:2}" | grep -c '_perf"' || true) records"
}

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }
t0=$(now)
printf 'building the plugin, inspector-replay and inspector-report in %s ... ' "$(show "$bdir")"
mkdir -p "$bdir"
log=$bdir/demo-build.log
# configured as `make build` does (Makefile), so that `make test` in the same tree builds only
# the tests on top, not everything again with other flags
if ! { [ -f "$bdir/CMakeCache.txt" ] || cmake -S "$root" -B "$bdir" -DINSPECTOR_WERROR=ON -DBUILD_TESTING=ON; } >"$log" 2>&1 ||
   ! cmake --build "$bdir" -j "$jobs" --target rccl-profiler-inspector inspector-replay \
       inspector-report >>"$log" 2>&1; then
  echo "failed:"
  grep -v '^\[ *[0-9]*%\]' "$log" | tail -n 40   # the errors, not the progress lines
  echo "(the whole output: $(show "$log"); the tools need zlib and jansson: make deps)"
  exit 1
fi
echo "done ($(since "$t0"))"

rm -rf "$out"
mkdir -p "$out"
export NCCL_INSPECTOR_ENABLE=1
unset NCCL_INSPECTOR_DUMP_DIR NCCL_INSPECTOR_PROM_DUMP NCCL_INSPECTOR_OTLP_EXPORT \
      NCCL_INSPECTOR_JSON_DUMP NCCL_INSPECTOR_TRACE_DIR

echo
echo "== 1. Real traffic: NCCL 2.28.9 on 2 x H200 (nccl-tests all_reduce_perf and sendrecv_perf, a"
echo "      PyTorch job), recorded and replayed through the plugin"
for t in ar-1483 sr-1576; do
  NCCL_INSPECTOR_DUMP_DIR=$out/recorded "$bin/inspector-replay" --quiet --plugin "$plugin" \
    "$data/$t.jsonl.gz"
done
# The PyTorch job ran one process per GPU: replayed the same way.
NCCL_INSPECTOR_DUMP_DIR=$out/recorded "$bin/inspector-replay" --quiet --procs --plugin "$plugin" \
  "$data/torch-1735.jsonl.gz" "$data/torch-1736.jsonl.gz"
echo "   $(summary "$out/recorded"): $(show "$out/recorded")/"
# One line of one file: the all_reduce_perf log holds the 1 MiB AllReduce. (grep -m1 over several
# files gives a line per file, which json.tool refuses whole.)
line=""
for f in "$out"/recorded/*.log; do
  line=$(grep -m1 -h '"coll":"AllReduce","coll_sn":[0-9]*,"coll_msg_size_bytes":1048576,' "$f" || true)
  [ -n "$line" ] && break
done
[ -n "$line" ] || line=$(cat "$out"/recorded/*.log | grep -m1 '"coll_perf"' || true)
echo "   one record (a line of the log), pretty-printed:"
printf '%s\n' "$line" | { python3 -m json.tool --indent 2 2>/dev/null || printf '%s\n' "$line"; } |
  sed 's/^/   /'

echo
echo "== 2. A synthetic job: 16 ranks on 4 nodes, one process each, with two faults planted: rank 5"
echo "      starts every collective 300 us late, the link node-001 <-> node-002 is 4 x slower"
NCCL_INSPECTOR_DUMP_DIR=$out/synthetic "$bin/inspector-replay" --quiet --plugin "$plugin" \
  --synthetic --procs --ranks 16 --nodes 4 --p2p --p2p-pattern nodes --clock-offset-ms 2 \
  --late-rank 5 --late-us 300 --slow-link 1:2 --colls AllReduce --sizes 1M:16M --iters 10 --seed 1
echo "   $(summary "$out/synthetic"): $(show "$out/synthetic")/"

echo
echo "== 3. What inspector-report says about the synthetic job (it finds both faults)"
echo "   \$ $(show "$bin")/inspector-report --html $(show "$out")/report.html --trace $(show "$out")/timeline.json $(show "$out/synthetic")"
echo
"$bin/inspector-report" --html "$out/report.html" --trace "$out/timeline.json" "$out/synthetic"
echo
echo "   its HTML page: $(show "$out/report.html"); its timeline: $(show "$out/timeline.json") (ui.perfetto.dev)"
echo "   the real traffic's report: $(show "$bin")/inspector-report $(show "$out/recorded")"

echo
echo "What to try next:"
echo "  your own job:  NCCL_PROFILER_PLUGIN=$plugin NCCL_INSPECTOR_ENABLE=1 NCCL_INSPECTOR_DUMP_DIR=logs/\$SLURM_JOB_ID torchrun ...  (Slurm, Kubernetes: docs/deploy.md)"
echo "  the HTML page: open $(show "$out/report.html") in a browser: busbw by size, per-rank lateness, links, bandwidth over time"
echo "  Prometheus:    NCCL_INSPECTOR_PROM_DUMP=1 NCCL_INSPECTOR_DUMP_DIR=<node exporter textfile dir>: .prom files written every 30 s"
echo "                 (the least interval) while a job runs and removed when it ends, so that a finished job is never"
echo "                 served: a job shorter than 30 s leaves none. To watch them appear (a 40 s paced job):"
echo "                 mkdir -p /tmp/prom && NCCL_INSPECTOR_ENABLE=1 NCCL_INSPECTOR_PROM_DUMP=1 NCCL_INSPECTOR_DUMP_DIR=/tmp/prom \\"
echo "                   $(show "$bin")/inspector-replay --quiet --plugin $(show "$plugin") --synthetic --ranks 2 --colls AllReduce \\"
echo "                   --sizes 1M:1M --iters 20 --pace-us 1000000 & sleep 32; cat /tmp/prom/*.prom"
echo "                 (docs/reference.md: Prometheus output; Sampled timing for always-on use)"
echo "  OTLP:          NCCL_INSPECTOR_OTLP_EXPORT=1 OTEL_EXPORTER_OTLP_ENDPOINT=http://<collector>:4318 (docs/reference.md: OTLP output)"
echo "(the demo took $(since "$t0"))"
