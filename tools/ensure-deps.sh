#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Install the build and test dependencies if they are missing (Debian/Ubuntu).
# The plugin itself needs only a C compiler, CMake and libc, and to build its OTLP
# exporter libcurl's and zlib's headers (it links neither: it loads them at run
# time); the replay and report tools need zlib and jansson; the tests need python3. With the argument
# `test` (make test, the quick tier) also protoc and python3-yaml (small: OTLP bodies are
# decoded against the official schema, the Kubernetes example parsed); with `check`
# (make check, what CI runs) besides Prometheus and its node exporter (the end-to-end test
# of Prometheus mode runs the real programs), clang with libFuzzer for `make fuzz`
# (Debian's clang only recommends libclang-rt-dev, which holds libFuzzer) and Chromium (the
# report's HTML page is rendered in it): the tests that need those skip, saying so, where
# they are missing. With `bench` valgrind (callgrind counts the benchmark's instructions per
# callback).
set -euo pipefail
missing=()
command -v cmake >/dev/null || missing+=(cmake)
command -v cc >/dev/null || missing+=(gcc)
command -v python3 >/dev/null || missing+=(python3)
command -v pkg-config >/dev/null || missing+=(pkg-config)
if command -v pkg-config >/dev/null; then
  pkg-config --exists zlib || missing+=(zlib1g-dev)
  pkg-config --exists jansson || missing+=(libjansson-dev)
  # either flavour's headers do (libcurl4-gnutls-dev too): both have libcurl.pc
  pkg-config --exists libcurl || missing+=(libcurl4-openssl-dev)
else
  missing+=(zlib1g-dev libjansson-dev libcurl4-openssl-dev)
fi
if [ "${1:-}" = test ] || [ "${1:-}" = check ]; then
  # OTLP request bodies are decoded against the official schema (tests/test_otlp.py)
  command -v protoc >/dev/null || missing+=(protobuf-compiler)
  # the Kubernetes example is parsed as YAML (tests/test_examples.py)
  python3 -c 'import yaml' 2>/dev/null || missing+=(python3-yaml)
  # the man pages are rendered, warnings checked (tests/test_cli.py, tests/test_package.py)
  command -v groff >/dev/null || missing+=(groff-base)
fi
if [ "${1:-}" = check ]; then
  command -v prometheus >/dev/null || missing+=(prometheus)
  command -v prometheus-node-exporter >/dev/null || missing+=(prometheus-node-exporter)
  # the report's HTML page is checked in headless Chromium (report_views:views.chromium)
  command -v chromium >/dev/null || missing+=(chromium fonts-dejavu-core)
  # a real single-node Slurm and the SPANK plugin's header (tests/test_slurm.py)
  command -v slurmctld >/dev/null || missing+=(slurm-wlm slurmctld)
  command -v slurmd >/dev/null || missing+=(slurmd)
  command -v munged >/dev/null || missing+=(munge)
  [ -f /usr/include/slurm/spank.h ] || missing+=(libslurm-dev)
  # clang prints the bare name back when it has no such file
  if ! command -v clang >/dev/null; then
    missing+=(clang libclang-rt-dev)
  elif [ ! -f "$(clang -print-file-name="libclang_rt.fuzzer-$(uname -m).a")" ]; then
    missing+=(libclang-rt-dev)
  fi
fi
if [ "${1:-}" = bench ]; then
  command -v valgrind >/dev/null || missing+=(valgrind)
  [ -f /usr/include/valgrind/callgrind.h ] || missing+=(valgrind)
fi
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq "${missing[@]}" >/dev/null
