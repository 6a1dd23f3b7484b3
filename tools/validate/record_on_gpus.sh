#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Record NCCL callback traces on the GPU machine with the recording plugin
# (tests/plugins/trace_plugin.c), for new fixtures and for debugging:
#   tools/validate/record_on_gpus.sh OUTDIR
set -euo pipefail
out=${1:?usage: record_on_gpus.sh OUTDIR rec NAME SCRIPT [ARGS...]}
shift
mkdir -p "$out" && out=$(cd "$out" && pwd)   # absolute: gpu_common.sh changes directory
source "$(dirname "$0")/gpu_common.sh"
rec() { # name, script and args
  local name=$1; shift
  local d=/tmp/inspector-traces/$name
  rm -rf "$d"; mkdir -p "$d"
  NCCL_PROFILER_PLUGIN=$trace INSPECTOR_TRACE_DIR=$d run "$@" >"$d.log" 2>&1 || { tail -30 "$d.log"; return 1; }
  local i=0
  for f in "$d"/trace-*.jsonl; do
    gzip -9 -c "$f" > "$out/$name-$i.jsonl.gz"; i=$((i + 1))
  done
  echo "$name: $(ls "$d" | wc -l) files, $(cat "$d"/*.jsonl | wc -l) lines"
}
"$@"
