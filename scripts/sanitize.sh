#!/usr/bin/env bash
# Builds the tests under ASan+UBSan and under TSan (separate folders) and runs
# those labelled "concurrency", "parser" or "fastpath" under ASan+UBSan, and
# those labelled "concurrency" or "fastpath" (the ones with threads) under TSan.
source "$(dirname "$0")/common.sh"
san_flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRACEPIPE_BUILD_BENCH=OFF -DTRACEPIPE_BUILD_TOOLS=OFF)
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS=detect_leaks=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
for kind in asan tsan; do
  if [ "$kind" = asan ]; then
    san="address,undefined"; list=sanitize_targets.txt; labels='concurrency|parser|fastpath'
  else
    san="thread"; list=sanitize_targets_thread.txt; labels='concurrency|fastpath'
  fi
  t0=$(date +%s)
  echo "sanitize: $kind build"
  dir="$TP_ROOT/build-$kind"
  cmake -S "$TP_ROOT" -B "$dir" -G Ninja "${san_flags[@]}" -DTRACEPIPE_SANITIZE="$san" >/dev/null
  mapfile -t targets < "$dir/$list"
  if ! cmake --build "$dir" -j "$TP_JOBS" --target "${targets[@]}" >"$dir/build.log" 2>&1; then
    grep -E -A12 'FAILED:|error:' "$dir/build.log" | head -n 80; tail -n 5 "$dir/build.log"
    echo "sanitize: $kind build FAILED (log: $dir/build.log)"; exit 1
  fi
  log="$dir/ctest.log"
  if ! (cd "$dir" && ctest --output-on-failure -j "$TP_JOBS" -L "$labels" >"$log" 2>&1); then
    cat "$log"; echo "sanitize: $kind tests FAILED"; exit 1
  fi
  grep -E "tests passed|tests failed" "$log"
  echo "sanitize: $kind took $(( $(date +%s) - t0 )) s"
done
