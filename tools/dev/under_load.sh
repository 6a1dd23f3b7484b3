#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tools/dev/under_load.sh [HOGS] -- COMMAND...: runs COMMAND beside HOGS (default 8) processes
# that spin on the CPU, and says the load average it ran at. Why: no test may fail because the
# machine is slow (issue 38: `make test` beside 8 hogs on 2 cores, load 15+, twice green); this
# is how that is shown again after a change to a test that waits on something.
#   tools/dev/under_load.sh 8 -- make test
# The hogs run at the command's own priority (a nice'd hog would hardly load the machine) and
# are killed when COMMAND ends, whatever its end; its exit status is this script's.
set -u
hogs=8
if [ $# -gt 0 ] && [ "$1" != "--" ]; then hogs=$1; shift; fi
[ "${1:-}" = "--" ] && shift
if [ $# -eq 0 ]; then
  echo "usage: $0 [HOGS] -- COMMAND..." >&2
  exit 2
fi
pids=()
cleanup() { [ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; }
trap cleanup EXIT INT TERM
for _ in $(seq "$hogs"); do
  sh -c 'while :; do :; done' &
  pids+=($!)
done
# the load average, sampled each minute while COMMAND runs (the 1-minute figure)
( while sleep 60; do echo "under_load: load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2; done ) &
sampler=$!
start=$(date +%s)
"$@"
rc=$?
kill "$sampler" 2>/dev/null
echo "under_load: '$*' exited $rc after $(( $(date +%s) - start )) s beside $hogs hogs;" \
     "load average now $(cut -d' ' -f1-3 /proc/loadavg)" >&2
exit $rc
