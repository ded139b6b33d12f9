#!/usr/bin/env bash
# clang-format over every C, C++ source and header that git tracks (the style is
# .clang-format's). With --check it changes nothing and fails, listing the files,
# if any is not formatted; CI runs it so.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.h' '*.cc' '*.c' | grep -v '^tests/fuzz/corpus/')
if [ "${1:-}" = --check ]; then
  if ! out=$(clang-format --dry-run -Werror "${files[@]}" 2>&1); then
    echo "format: not clang-formatted (run ./scripts/format.sh):"
    printf '%s\n' "$out" | sed -n 's/^\([^: ]*\):[0-9]*:[0-9]*: error:.*/  \1/p' | sort -u
    exit 1
  fi
  echo "format: ${#files[@]} files clang-formatted"
else
  clang-format -i "${files[@]}"
fi
