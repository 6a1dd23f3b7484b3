#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# torchrun on one machine with Inspector, then the report:
#   examples/torchrun.sh train.py --epochs 1          # every GPU of this machine
#   NPROC=2 examples/torchrun.sh train.py             # two of them
# The same as one line:
#   NCCL_PROFILER_PLUGIN=/usr/lib/libnccl-profiler-inspector.so NCCL_INSPECTOR_ENABLE=1 \
#   NCCL_INSPECTOR_DUMP_DIR=inspector-logs/run1 torchrun --standalone --nproc-per-node=8 train.py
# Overrides: INSPECTOR_PLUGIN, INSPECTOR_REPORT, INSPECTOR_LOG_DIR (default
# inspector-logs/<date-time>), NPROC (default: nvidia-smi's GPU count), INSPECTOR_LAUNCH (the
# launch line instead of torchrun; the tests put inspector-replay there), DRY_RUN=1.
set -euo pipefail

logs=${INSPECTOR_LOG_DIR:-inspector-logs/$(date +%Y%m%d-%H%M%S)}
export NCCL_PROFILER_PLUGIN=${INSPECTOR_PLUGIN:-$(pkg-config --variable=plugin inspector 2>/dev/null ||
                                                  echo /usr/lib/libnccl-profiler-inspector.so)}
export NCCL_INSPECTOR_ENABLE=1
export NCCL_INSPECTOR_DUMP_DIR=$logs
report=${INSPECTOR_REPORT:-inspector-report}
nproc=${NPROC:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)}
[ "${nproc:-0}" -gt 0 ] || nproc=1
if [ -n "${INSPECTOR_LAUNCH:-}" ]; then
  launch=$INSPECTOR_LAUNCH
else
  launch="torchrun --standalone --nproc-per-node=$nproc $(printf '%q ' "$@")"
fi

if [ -n "${DRY_RUN:-}" ]; then
  echo "NCCL_PROFILER_PLUGIN=$NCCL_PROFILER_PLUGIN"
  echo "NCCL_INSPECTOR_ENABLE=$NCCL_INSPECTOR_ENABLE"
  echo "NCCL_INSPECTOR_DUMP_DIR=$NCCL_INSPECTOR_DUMP_DIR"
  echo "launch: $launch"
  exit 0
fi

status=0
eval "$launch" || status=$?
"$report" --html "$logs/report.html" "$logs" || true
echo "logs: $logs/ (the report as a page: $logs/report.html)"
exit "$status"
