#!/usr/bin/env bash
# The flight recorder's long torture run (docs/flight.md): KILLS SIGKILLs
# (default 10000) of a child writing sequence-numbered records, each
# recovered and checked. The CI runs the same test with 200.
source "$(dirname "$0")/common.sh"
kills="${1:-10000}"
dir="$TP_ROOT/build"
TP_TARGETS=recover_torture_tests tp_build "$dir" -DCMAKE_BUILD_TYPE=Release
TP_FLIGHT_KILLS="$kills" "$dir/tests/core/recover/recover_torture_tests"
