#!/usr/bin/env bash
# README command 2: build everything and run every test (CTest).
source "$(dirname "$0")/common.sh"
tp_build "$TP_ROOT/build" -DCMAKE_BUILD_TYPE=Release
cd "$TP_ROOT/build"
# Skipped tests print their reason ("SKIPPED: ..."); CTest keeps it in its log.
rc=0
ctest --output-on-failure --no-label-summary -j "$TP_JOBS" "$@" >ctest.out 2>&1 || rc=$?
body="$(grep -v -E '^[0-9]+% tests passed|^Total Test time' ctest.out)"
printf '%s\n' "$body"
if grep -q "SKIPPED:" Testing/Temporary/LastTest.log 2>/dev/null; then
  echo "Skip reasons:"
  grep -h "SKIPPED:" Testing/Temporary/LastTest.log | sort | uniq -c | sed 's/^/  /'
fi
grep -E '^Total Test time' ctest.out || true
grep -E '^[0-9]+% tests passed' ctest.out || true
exit "$rc"
