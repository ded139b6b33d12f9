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
# TP_JOBS fuzzers at a time: each is one process on one core and runs its
# full SECONDS, so running them side by side keeps every fuzzer's time and
# takes a fraction of the wall time.
fuzz_one() {  # fuzz_one BIN: runs it; its log is $dir/<name>.log
  local name; name="$(basename "$1")"
  local work="$dir/corpus-$name"; mkdir -p "$work"
  (cd "$dir" && "$1" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 "$work" "$TP_ROOT/tests/fuzz/corpus/$name" >"$dir/$name.log" 2>&1)
}
for ((i = 0; i < ${#bins[@]}; i += TP_JOBS)); do
  batch=("${bins[@]:i:TP_JOBS}")
  pids=()
  for bin in "${batch[@]}"; do
    echo "fuzz: $(basename "$bin") for ${secs}s"
    fuzz_one "$bin" & pids+=($!)
  done
  for j in "${!batch[@]}"; do
    name="$(basename "${batch[j]}")"
    if ! wait "${pids[j]}"; then
      wait  # the rest of the batch
      tail -n 60 "$dir/$name.log"; echo "fuzz: $name FAILED (reproducer in $dir)"; exit 1
    fi
    grep -E "stat::number_of_executed_units" "$dir/$name.log" | sed "s/^/$name: /" || true
  done
done
