#!/usr/bin/env bash
# Lists the headers <tracepipe/tracepipe.h> includes, directly or not: the
# ones `cmake --install` installs (cmake/public_headers.txt).
#   scripts/public_headers.sh          print the list
#   scripts/public_headers.sh --write  rewrite cmake/public_headers.txt
#   scripts/public_headers.sh --check  exit 1 if the file is stale
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/inc/tracepipe"
for top in core buffers filters; do ln -s "$root/$top" "$tmp/inc/tracepipe/$top"; done
ln -s "$root/core/tracepipe.h" "$tmp/inc/tracepipe/tracepipe.h"
echo '#include <tracepipe/tracepipe.h>' > "$tmp/u.cc"
list="$(${CXX:-c++} -std=c++20 -I"$tmp/inc" -MM "$tmp/u.cc" | tr ' \\' '\n\n' |
  sed -n "s#^$tmp/inc/tracepipe/##p" | grep -v '^tracepipe.h$' | sort -u)"
file="$root/cmake/public_headers.txt"
body="# Installed headers: what <tracepipe/tracepipe.h> includes, directly or not.
# Regenerate: scripts/public_headers.sh --write (a test fails when this list is stale).
$list"
case "${1:-}" in
  --write) printf '%s\n' "$body" > "$file" ;;
  --check)
    if [ "$body" != "$(cat "$file")" ]; then
      echo "cmake/public_headers.txt is stale; run scripts/public_headers.sh --write. Difference:" >&2
      diff <(printf '%s\n' "$body") "$file" >&2 || true
      exit 1
    fi
    echo "cmake/public_headers.txt: $(printf '%s\n' "$list" | wc -l) headers, current" ;;
  *) printf '%s\n' "$list" ;;
esac
