#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and runs each for a bounded time
# (seconds, default 60) on its seed corpus in tests/fuzz/corpus/<target>/.
source "$(dirname "$0")/common.sh"
secs="${1:-60}"
dir="$TP_ROOT/build-fuzz"
fuzz_cmake=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRACEPIPE_FUZZ=ON
  -DTRACEPIPE_BUILD_TESTS=OFF -DTRACEPIPE_BUILD_BENCH=OFF -DTRACEPIPE_BUILD_TOOLS=OFF)
# Only the fuzzers and the libraries they link (tests/fuzz/CMakeLists.txt).
CXX=clang++ cmake -S "$TP_ROOT" -B "$dir" -G Ninja "${fuzz_cmake[@]}" >/dev/null
TP_TARGETS="$(tr '\n' ' ' < "$dir/fuzz_targets.txt")" CXX=clang++ tp_build "$dir" "${fuzz_cmake[@]}"
shopt -s nullglob
bins=("$dir"/tests/fuzz/*_fuzz)
if [ "${#bins[@]}" -ne "$(grep -c . "$dir/fuzz_targets.txt")" ]; then
  echo "fuzz: built ${#bins[@]} fuzzers, tests/fuzz lists $(grep -c . "$dir/fuzz_targets.txt")"; exit 1
fi
for bin in "${bins[@]}"; do
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
