#!/usr/bin/env bash
# Builds tests/core/capi/c_api_test.c against libtracepipe_c, runs it, and
# reads what it wrote back with `trace-cmd report`.
#   run_c_api.sh pkgconfig BIN SRC WORK   install the c_api component, gcc + pkg-config
#   run_c_api.sh cmake     BIN SRC WORK   install, a C project with find_package(tracepipe-c)
#   run_c_api.sh run       EXE SRC WORK   an already built test program (in-tree, sanitizers)
set -euo pipefail
mode=$1 bin=$2 src=$3 work=$4
rm -rf "$work"; mkdir -p "$work/out"
cflags=(-std=c11 -Wall -Wextra -Werror -pedantic -O2)
test_c=$src/tests/core/capi/c_api_test.c
example_c=$src/examples/c_api.c
install() { cmake --install "$bin" --component c_api --prefix "$work/prefix" >/dev/null; }
case $mode in
  pkgconfig)
    install
    pcdir=$(dirname "$(find "$work/prefix" -name tracepipe-c.pc)")
    export PKG_CONFIG_PATH=$pcdir
    libdir=$(pkg-config --variable=libdir tracepipe-c)
    gcc "${cflags[@]}" $(pkg-config --cflags tracepipe-c) "$test_c" -o "$work/c_api_test" \
      $(pkg-config --libs tracepipe-c) -pthread -Wl,-rpath,"$libdir"
    exe=$work/c_api_test ;;
  cmake)
    install
    cmake -S "$src/tests/core/capi/project" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" \
      -DTEST_SOURCE="$test_c" -DEXAMPLE_SOURCE="$example_c" -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$work/build" >/dev/null
    (cd "$work/out" && "$work/build/c_api_example") | tee "$work/example.txt"
    grep -q "kept 2 of 3" "$work/example.txt" || { echo "example: unexpected output"; exit 1; }
    exe=$work/build/c_api_test ;;
  run) exe=$bin ;;
  *) echo "unknown mode $mode"; exit 2 ;;
esac
line=$("$exe" "$work/out")
echo "$line"
get() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" <<<"$line"; }
# Each report once, into a file (grep -q on a pipe would cut trace-cmd short).
for f in record snapshot flight; do
  trace-cmd report "$work/out/$f.dat" >"$work/$f.txt" 2>"$work/$f.err"
done
count() { grep -c " $2: " "$work/${1%.dat}.txt" || true; }
fail=0
expect() { if [ "$2" != "$3" ]; then echo "FAIL: $1: trace-cmd report shows $2, expected $3"; fail=1; fi; }
expect "record.dat ticks" "$(count record.dat tick)" "$(get ticks)"
expect "record.dat requests" "$(count record.dat request)" "$(get requests)"
expect "snapshot.dat ticks" "$(count snapshot.dat tick)" "$(get snapshot)"
expect "flight.dat ticks" "$(count flight.dat tick)" "$(get flight)"
want=${line#*request_line=}
if ! grep -qF "$want" "$work/record.txt"; then echo "FAIL: record.dat has no line with: $want"; fail=1; fi
if ! grep -qF "path=/packed" "$work/record.txt"; then echo "FAIL: record.dat lacks the packed record"; fail=1; fi
if ! grep -qE "tick: +seq=99 thread=99 tag=flight" "$work/flight.txt"; then echo "FAIL: flight.dat lacks seq=99"; fail=1; fi
[ $fail = 0 ] && echo "c_api: trace-cmd report agrees"
exit $fail
