#!/usr/bin/env bash
# README command 1: build what is needed, then run the main job,
# `tracepipe bench` on its embedded defaults. Extra arguments go to the bench.
source "$(dirname "$0")/common.sh"
tp_build "$TP_ROOT/build" -DCMAKE_BUILD_TYPE=Release
exec "$TP_ROOT/build/tools/tracepipe" bench "$@"
