#!/usr/bin/env bash
# README command 1: build only what the main job runs (the `tracepipe`
# command and the libraries it links), then run it: `tracepipe bench` on its
# embedded defaults. Extra arguments go to the bench.
source "$(dirname "$0")/common.sh"
TP_TARGETS=tracepipe_cli tp_build "$TP_ROOT/build" -DCMAKE_BUILD_TYPE=Release
exec "$TP_ROOT/build/tools/tracepipe" bench "$@"
