#!/usr/bin/env bash
# What a user pays to include tracepipe: installed headers, the tracepipe
# lines one EventDecl pulls in, and the time to compile the umbrella alone
# and examples/quickstart.cc at -O2 (median of N runs in CPU seconds, ccache
# bypassed).
#   scripts/compile_cost.sh [N]        default N=5; CXX picks the compiler
# Prints one `key: value` line per figure (docs/measurements.md quotes them).
# Where the time goes: the standard headers the umbrella's headers include,
# compiled alone; and quickstart without its one emit call (the difference
# is that emit site's inlined write path: parse, instantiation and codegen).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
runs="${1:-5}"
cxx="${CXX:-c++}"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT

# The tree's include root (made by CMake's configure; made here if absent).
inc="$tmp/inc"; mkdir -p "$inc/tracepipe"
for top in core buffers filters; do ln -s "$root/$top" "$inc/tracepipe/$top"; done
ln -s "$root/core/tracepipe.h" "$inc/tracepipe/tracepipe.h"
flags=(-std=c++20 -O2 -I"$inc" -fsyntax-only)

# Tracepipe headers a translation unit reads, and their lines.
closure() {  # closure <file>
  "$cxx" -std=c++20 -I"$inc" -MM "$1" | tr ' \\' '\n\n' | grep "^$inc/tracepipe/" | sort -u
}
lines_of() { local n=0 f; for f in "$@"; do n=$((n + $(wc -l < "$f"))); done; echo "$n"; }

# CPU seconds (user + sys), not wall time: on a machine shared with other
# builds the wall time grows with their load, the CPU time much less.
median_time() {  # median_time <file> [extra flags]: CPU seconds to compile to an object at -O2
  local src="$1"; shift
  local ts=() i
  for ((i = 0; i < runs; ++i)); do
    ts+=("$(/usr/bin/time -f '%U %S' "$cxx" -std=c++20 -O2 -I"$inc" "$@" -c "$src" -o "$tmp/o.o" 2>&1 |
      tail -1 | awk '{print $1 + $2}')")
  done
  printf '%s\n' "${ts[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%.2f s (min %.2f, max %.2f, n %d)", a[int((NR+1)/2)], a[1], a[NR], NR}'
}
peak_mb() {  # peak resident memory of one compile, MB
  /usr/bin/time -f %M "$cxx" -std=c++20 -O2 -I"$inc" -c "$1" -o "$tmp/o.o" 2>&1 >/dev/null | tail -1 |
    awk '{printf "%d MB", $1 / 1024}'
}

echo '#include <tracepipe/tracepipe.h>' > "$tmp/umbrella.cc"
cat > "$tmp/decl.cc" <<'EOF'
#include <tracepipe/core/instance/event_decl.h>
EOF

# Installed headers: one per line of cmake/public_headers.txt (the tree
# before the public tier installed every header of the umbrella's closure,
# listed one per line, plus the umbrella itself).
if grep -q '^tracepipe.h ' "$root/cmake/public_headers.txt"; then
  echo "installed headers: $(grep -c '^[a-z]' "$root/cmake/public_headers.txt")"
else
  echo "installed headers: $(( $(grep -c '^[a-z]' "$root/cmake/public_headers.txt") + 1 ))"
fi
mapfile -t u < <(closure "$tmp/umbrella.cc")
# The standard and system headers those headers include themselves.
sed -n 's/^#include \(<[^>]*>\).*/#include \1/p' "${u[@]}" | sort -u > "$tmp/std.cc"
# quickstart with its emit statement removed.
grep -v '::emit(' "$root/examples/quickstart.cc" > "$tmp/quickstart_no_emit.cc"
echo "umbrella closure: ${#u[@]} headers, $(lines_of "${u[@]}") lines"
mapfile -t d < <(closure "$tmp/decl.cc")
echo "EventDecl closure: ${#d[@]} headers, $(lines_of "${d[@]}") lines"
echo "umbrella compile -O2: $(median_time "$tmp/umbrella.cc"), $(peak_mb "$tmp/umbrella.cc")"
echo "quickstart compile -O2: $(median_time "$root/examples/quickstart.cc"), $(peak_mb "$root/examples/quickstart.cc")"
echo "standard headers the umbrella includes ($(wc -l < "$tmp/std.cc")), alone -O2: $(median_time "$tmp/std.cc")"
echo "quickstart without its emit call -O2: $(median_time "$tmp/quickstart_no_emit.cc")"
echo "compiler: $("$cxx" --version | head -1)"
echo "host: $(lscpu | sed -n 's/^Model name: *//p'); load: $(cut -d' ' -f1-3 /proc/loadavg)"
