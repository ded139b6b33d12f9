#!/usr/bin/env bash
# The installed headers (cmake/public_headers.txt) and the rules they keep.
#   scripts/public_headers.sh --bundle DIR   write the installed headers into DIR/tracepipe/
#                                            (what `cmake --install` installs)
#   scripts/public_headers.sh --check        exit 1, naming the problem, if:
#     - more than 20 headers are installed;
#     - an installed header reaches a tracepipe header no installed one carries,
#       or one that two carry;
#     - an installed header does not compile alone (-fsyntax-only, installed tree);
#     - a test hook is in an installed header (a `*test_hook*`, a `set_*_for_testing`,
#       a `Hooks` parameter outside detail::, an `on_pass` callback);
#     - a public declaration names a type declared in internal/ (outside
#       detail:: and private:, comments ignored);
#     - inline asm in an installed header outside an architecture guard
#       (`#if ... __x86_64__` or TRACEPIPE_RSEQ_ASM).
# CXX picks the compiler (default c++).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
list="$root/cmake/public_headers.txt"
max_installed=20

declare -A owner=()   # in-tree header -> the installed header carrying it
declare -a installed=()
declare -A members=()
while read -r inst rest; do
  [[ -z "$inst" || "$inst" == \#* ]] && continue
  installed+=("$inst")
  members[$inst]="$rest"
  for m in $rest; do
    if [[ -n "${owner[$m]:-}" ]]; then
      echo "public_headers: $m is carried by both ${owner[$m]} and $inst" >&2
      exit 1
    fi
    owner[$m]="$inst"
  done
done < "$list"

# The in-tree file an include spelling "tracepipe/X" names.
source_of() { if [[ "$1" == tracepipe.h ]]; then echo core/tracepipe.h; else echo "$1"; fi; }

# bundle_one INSTALLED: the installed header's text on stdout.
bundle_one() {
  local inst="$1"
  declare -A seen=() linked=()
  local missing=0
  emit() {
    local h="$1" line inc
    seen[$h]=1
    while IFS= read -r line || [[ -n "$line" ]]; do
      [[ "$line" =~ ^[[:space:]]*#[[:space:]]*pragma[[:space:]]+once ]] && continue
      if [[ "$line" =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*[\"\<]tracepipe/([^\"\>]+)[\"\>] ]]; then
        inc="$(source_of "${BASH_REMATCH[1]}")"
        local carrier="${owner[$inc]:-}"
        if [[ -z "$carrier" ]]; then
          echo "public_headers: $h (installed as $inst) includes $inc, which no installed header carries" >&2
          missing=1
        elif [[ "$carrier" == "$inst" ]]; then
          [[ -z "${seen[$inc]:-}" ]] && emit "$inc"
        elif [[ -z "${linked[$carrier]:-}" ]]; then
          linked[$carrier]=1
          echo "#include \"tracepipe/$carrier\""
        fi
        continue
      fi
      printf '%s\n' "$line"
    done < "$root/$h"
  }
  echo "#pragma once"
  echo "// Installed tracepipe header, made from: ${members[$inst]}"
  for m in ${members[$inst]}; do [[ -z "${seen[$m]:-}" ]] && emit "$m"; done
  return "$missing"
}

bundle() {  # bundle DIR
  local dir="$1" inst
  for inst in "${installed[@]}"; do
    mkdir -p "$(dirname "$dir/tracepipe/$inst")"
    bundle_one "$inst" > "$dir/tracepipe/$inst"
  done
}

# Text of a header without // comments.
code_of() { sed -e 's#//.*$##' "$@"; }

check() {
  local tmp fail=0 inst
  tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' RETURN
  bundle "$tmp/inc"
  local n=${#installed[@]}
  if (( n > max_installed )); then
    echo "public_headers: $n installed headers, more than $max_installed" >&2; fail=1
  fi
  # Each installed header compiles alone, from the installed tree only;
  # TP_JOBS (default: the cores) of them at a time, reported in order.
  local jobs="${TP_JOBS:-$(nproc)}" i j pids
  for ((i = 0; i < n; i += jobs)); do
    [[ -n "${TP_HEADERS_NO_COMPILE:-}" ]] && break  # (a quicker look at the other rules)
    pids=()
    for ((j = i; j < i + jobs && j < n; ++j)); do
      echo "#include <tracepipe/${installed[j]}>" > "$tmp/one$j.cc"
      "${CXX:-c++}" -std=c++20 -fsyntax-only -I"$tmp/inc" "$tmp/one$j.cc" 2> "$tmp/err$j" &
      pids+=($!)
    done
    for ((j = i; j < i + jobs && j < n; ++j)); do
      if ! wait "${pids[j - i]}"; then
        echo "public_headers: tracepipe/${installed[j]} does not compile alone:" >&2
        head -20 "$tmp/err$j" >&2; fail=1
      fi
    done
  done
  # Test hooks.
  local hooks
  hooks="$(cd "$tmp/inc" && grep -rnE 'test_hook|TestHook|set_[a-z_]+_for_testing|\bon_pass\b|\bInstanceTesting\b[^;]*\{' \
    --include=*.h . | grep -vE '^[^:]+:[0-9]+:\s*//' || true)"
  # A Hooks parameter with a default (how an API offers it) outside detail::
  # and private: the lanes' own Hooks parameters are private, without one.
  hooks+=$'\n'"$(cd "$tmp/inc" && for f in $(find . -name '*.h' ! -path './tracepipe/internal/*'); do
    awk -v f="$f" '
      /^namespace .*detail/ {d=1} /^}  \/\/ namespace .*detail/ {d=0}
      /^ (private|protected):/ {p=1} /^ public:/ {p=0} /^};/ {p=0}
      !d && !p && (/class Hooks = / || /[Hh]ooks = \{\}/) && !/^\s*\/\// {print f ":" FNR ": " $0}' "$f"; done)"
  hooks="$(printf '%s' "$hooks" | sed '/^$/d')"
  if [[ -n "$hooks" ]]; then echo "public_headers: test hooks in installed headers:" >&2; echo "$hooks" >&2; fail=1; fi
  # Types declared in internal/ named by public declarations.
  local types
  types="$(code_of "$tmp/inc/tracepipe/internal/"*.h | grep -oE '^(class|struct|enum class|using) [A-Z][A-Za-z0-9_]*' |
    awk '{print $NF}' | sort -u)"
  # The declarations' visible text: outside detail::, private: sections and
  # function bodies (brace kinds tracked: namespace, class, other).
  local visible_awk='
    FNR == NR {  # first pass: the types this header declares itself are its own
      if (match($0, /^(class|struct|enum class|using) [A-Z][A-Za-z0-9_]*/)) {
        w = substr($0, RSTART, RLENGTH); sub(/^.* /, "", w); own[w] = 1 }
      next }
    FNR == 1 { n = split(types, t, "\n"); for (i = 1; i <= n; i++) want[t[i]] = 1; top = 0; stmt = "" }
    /^ (private|protected):/ { priv[top] = 1; next }
    /^ public:/ { priv[top] = 0; next }
    {
      line = $0; sub(/\/\/.*/, "", line); gsub(/"([^"\\]|\\.)*"/, "\"\"", line); gsub(/'"'"'.'"'"'/, "0", line)
      if (line ~ /^[ \t]*#/) next
      vis = ""; member_def = 0
      for (i = 1; i <= length(line); i++) {
        c = substr(line, i, 1)
        hidden = 0; for (k = 1; k <= top; k++) if (kind[k] == "d" || kind[k] == "f" || priv[k]) hidden = 1
        if (c == "{") {
          if (stmt ~ /[A-Z][A-Za-z0-9_]*::~?[a-z_][A-Za-z0-9_]*[ \t]*\(/) member_def = 1
          if (stmt ~ /namespace[ \t]+[A-Za-z_:]*detail[ \t]*$/) kd = "d"
          else if (stmt ~ /namespace/) kd = "n"
          else if (stmt ~ /(^|[^A-Za-z_])(class|struct)[ \t]+[A-Z][A-Za-z0-9_]*::/) kd = "d"
          else if (stmt ~ /(^|[^A-Za-z_])(class|struct|union)[ \t]/ && stmt !~ /\)[ \t]*(const)?[ \t]*(noexcept)?[ \t]*$/ && stmt !~ /=[ \t]*$/) kd = "c"
          else kd = "f"
          if (!hidden) vis = vis " "
          kind[++top] = kd; priv[top] = 0; stmt = ""; continue
        }
        if (c == "}") { if (top > 0) top--; stmt = ""; continue }
        if (c == ";") { stmt = ""; if (!hidden) vis = vis c; continue }
        stmt = stmt c
        if (!hidden) vis = vis c
      }
      stmt = stmt " "
      # An out-of-line definition of a member (Class::name(...)): access is
      # given where the member is declared.
      if (member_def || stmt ~ /[A-Z][A-Za-z0-9_]*::~?[a-z_][A-Za-z0-9_]*[ \t]*\(/) next
      s = vis
      while (match(s, /[A-Za-z_][A-Za-z0-9_:]*/)) {
        w = substr(s, RSTART, RLENGTH); s = substr(s, RSTART + RLENGTH)
        if (w ~ /(^|::)detail::/) continue
        sub(/^.*::/, "", w)
        if ((w in want) && !(w in own)) { print f ":" FNR ": " w ": " $0; break }
      }
    }'
  # Opaque handles: a type a public header declares without defining it
  # (the kernel's struct trace_buffer) may be named; its layout stays internal.
  local opaque
  opaque="$(cd "$tmp/inc" && find . -name '*.h' ! -path './tracepipe/internal/*' -exec grep -hoE '^(class|struct) [A-Z][A-Za-z0-9_]*;' {} + |
    sed -E 's/^(class|struct) //; s/;$//' | sort -u)"
  types="$(comm -23 <(printf '%s\n' "$types") <(printf '%s\n' "$opaque"))"
  local leaks=""
  for f in $(cd "$tmp/inc" && find . -name '*.h' ! -path './tracepipe/internal/*'); do
    leaks+="$(awk -v f="$f" -v types="$types" "$visible_awk" "$tmp/inc/$f" "$tmp/inc/$f")"$'\n'
  done
  leaks="$(printf '%s' "$leaks" | sed '/^$/d')"
  if [[ -n "$leaks" ]]; then
    echo "public_headers: public declarations name types declared in internal/:" >&2; echo "$leaks" >&2; fail=1
  fi
  # Inline asm outside an architecture guard.
  local asm
  asm="$(cd "$tmp/inc" && for f in $(find . -name '*.h'); do
    awk -v f="$f" '
      /^#\s*if/ {depth++; g[depth] = ($0 ~ /__x86_64__|__aarch64__|__i386__|TRACEPIPE_RSEQ_ASM/)}
      /^#\s*elif/ {g[depth] = ($0 ~ /__x86_64__|__aarch64__|__i386__|TRACEPIPE_RSEQ_ASM/)}
      /^#\s*endif/ {depth--}
      /(^|[^_a-z])asm( |\(| goto| volatile)/ && !/^\s*\/\// {
        ok = 0; for (i = 1; i <= depth; i++) if (g[i]) ok = 1
        if (!ok) print f ":" NR ": " $0 }' "$f"; done)"
  if [[ -n "$asm" ]]; then echo "public_headers: inline asm without an architecture guard:" >&2; echo "$asm" >&2; fail=1; fi
  if (( fail == 0 )); then echo "public_headers: $n installed headers (at most $max_installed), rules kept"; fi
  return "$fail"
}

case "${1:-}" in
  --bundle) bundle "${2:?usage: public_headers.sh --bundle DIR}" ;;
  --check) check ;;
  *) printf '%s\n' "${installed[@]}" ;;
esac
