#!/usr/bin/env bash
# Functions longer than 100 lines in the library (core/ buffers/ filters/) and
# in bench/ and tools/: a function that long does more than one job.
#   scripts/function_length.sh           list them, longest first ("lines file:line name")
#   scripts/function_length.sh --check   the same, and exit 1 if there is any
# Lengths are universal-ctags' extents (end line - start line of a definition),
# so a lambda counts toward the function that holds it. MAX overrides the limit.
set -euo pipefail
cd "$(dirname "$0")/.."
max="${MAX:-100}"
check=0
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac
# Exuberant ctags has no end: field; without it every extent would read as
# empty and the check would pass on nothing.
if ! ctags --version 2>/dev/null | grep -q 'Universal Ctags'; then
  echo "function_length: needs universal-ctags (scripts/setup.sh installs it)" >&2
  exit 2
fi
mapfile -t dirs < <(for d in core buffers filters bench tools; do [ -d "$d" ] && echo "$d"; done)
long=$(ctags -R --fields=+ne --kinds-c++=f --languages=C++ -f - "${dirs[@]}" |
  awk -F'\t' -v max="$max" '{
    ln = ""; en = ""
    for (i = 4; i <= NF; i++) {
      if ($i ~ /^line:/) ln = substr($i, 6)
      if ($i ~ /^end:/) en = substr($i, 5)
    }
    if (ln != "" && en != "" && en - ln > max) print en - ln, $2 ":" ln, $1
  }' | sort -k1,1rn -k2,2)
if [ -z "$long" ]; then
  echo "function_length: no function over $max lines in ${dirs[*]}"
  exit 0
fi
echo "function_length: functions over $max lines (split each into functions of one job):"
# ctags names a lambda outside any function __anon<hash>.
sed -e 's/^/  /' -e 's/__anon[0-9a-f]*$/(a lambda)/' <<<"$long"
[ "$check" = 1 ] && exit 1
exit 0
