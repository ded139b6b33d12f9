#!/usr/bin/env bash
# Installs tracepipe's build and test dependencies from Debian packages.
# Idempotent and silent when everything is already present; called by the
# README's commands and by .ci/run, so nothing is ever installed by hand.
set -euo pipefail

PKGS=(
  build-essential cmake ninja-build pkg-config ccache
  libtbb-dev libre2-dev libfmt-dev catch2 libbenchmark-dev
  libtomlplusplus-dev libcli11-dev libzstd-dev zlib1g-dev
  libdw-dev   # elfutils: symbol names for the stacktrace trigger's call chains
  trace-cmd clang libclang-rt-14-dev clang-format
  universal-ctags   # scripts/function_length.sh measures functions by its extents
  libkshark-dev libjson-c-dev   # KernelShark's library: tests open tracepipe's trace.dat files with it
  babeltrace2 protobuf-compiler # the readers `tracepipe convert`'s tests check its CTF and Perfetto output with
)
# Optional peers for `tracepipe bench --peers` and `tracepipe_record_bench --peers lttng`
# (babeltrace2, in PKGS, reads its LTTng traces back); install failures are not fatal.
OPTIONAL=(lttng-tools liblttng-ust-dev)

# The kernel's tracefs: tests that compare with the kernel need it mounted.
# Mounting needs root; without it those tests skip with a reason.
if [ -d /sys/kernel/tracing ] && [ ! -e /sys/kernel/tracing/trace ]; then
  mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
fi

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
opt_missing=()
if [ "${TRACEPIPE_NO_PEERS:-0}" != 1 ]; then
  for p in "${OPTIONAL[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || opt_missing+=("$p")
  done
fi
[ ${#missing[@]} -eq 0 ] && [ ${#opt_missing[@]} -eq 0 ] && exit 0

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "setup: installing ${missing[*]} ${opt_missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if [ ${#opt_missing[@]} -gt 0 ]; then
  $SUDO apt-get install -y -qq --no-install-recommends "${opt_missing[@]}" >/dev/null \
    || echo "setup: optional peers (${opt_missing[*]}) unavailable; bench --peers will skip them" >&2
fi
