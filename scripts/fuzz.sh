#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and runs each for a bounded time
# (seconds, default 60) on its seed corpus in tests/fuzz/corpus/<target>/.
source "$(dirname "$0")/common.sh"
secs="${1:-60}"
dir="$TP_ROOT/build-fuzz"
CXX=clang++ tp_build "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRACEPIPE_FUZZ=ON \
  -DTRACEPIPE_BUILD_TESTS=OFF -DTRACEPIPE_BUILD_BENCH=OFF -DTRACEPIPE_BUILD_TOOLS=OFF
shopt -s nullglob
for bin in "$dir"/tests/fuzz/*_fuzz; do
  name="$(basename "$bin")"
  corpus="$TP_ROOT/tests/fuzz/corpus/$name"
  work="$dir/corpus-$name"; mkdir -p "$work"
  echo "fuzz: $name for ${secs}s"
  log="$dir/$name.log"
  if ! (cd "$dir" && "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 "$work" "$corpus" >"$log" 2>&1); then
    tail -n 60 "$log"; echo "fuzz: $name FAILED (reproducer in $dir)"; exit 1
  fi
  grep -E "stat::number_of_executed_units" "$log" || true
done
