#!/usr/bin/env bash
# Builds examples/c_api_rust.rs (std only, the C API declared by hand)
# against libtracepipe_c and runs it; exit 77 when no Rust compiler.
set -euo pipefail
lib=$1 src=$2 work=$3
rustc=$(command -v rustc || true)
[ -z "$rustc" ] && [ -x "$HOME/.cargo/bin/rustc" ] && rustc=$HOME/.cargo/bin/rustc
if [ -z "$rustc" ]; then echo "SKIP: no rustc on this machine"; exit 77; fi
rm -rf "$work"; mkdir -p "$work"; cd "$work"
libdir=$(dirname "$lib")
"$rustc" --edition 2021 -O "$src" -o c_api_rust -L "$libdir" -l tracepipe_c -C link-args=-Wl,-rpath,"$libdir"
./c_api_rust | tee out.txt
grep -q "kept 5 of 10" out.txt
trace-cmd report c_api_rust.dat >report.txt 2>/dev/null
grep -qE "sample: +seq=4 tag=rust" report.txt
echo "c_api (rust): trace-cmd report shows the records"
