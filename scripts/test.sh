#!/usr/bin/env bash
# README command 2: build everything and run every test (CTest).
source "$(dirname "$0")/common.sh"
tp_build "$TP_ROOT/build" -DCMAKE_BUILD_TYPE=Release
cd "$TP_ROOT/build"
ctest --output-on-failure --no-label-summary -j "$TP_JOBS" "$@"
