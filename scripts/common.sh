# Sourced by the scripts: installs missing packages, configures and builds.
set -euo pipefail
TP_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TP_JOBS="${TP_JOBS:-$(nproc)}"
"$TP_ROOT/scripts/setup.sh"
# tp_build DIR [cmake args...]: configure (once) and build in DIR: everything,
# or only the targets named in TP_TARGETS (space-separated).
# Prints progress every 10% and any warning or error; the full log is in
# DIR/build.log. The first build takes several minutes on 2 cores.
tp_build() {
  local dir="$1"; shift
  cmake -S "$TP_ROOT" -B "$dir" -G Ninja "$@" >/dev/null
  echo "build: $dir (log: $dir/build.log)" >&2
  # A bash loop, not awk: Debian's mawk reads a pipe in blocks, so its
  # progress lines came in bursts at the end.
  local targets=()
  [ -n "${TP_TARGETS:-}" ] && targets=(--target $TP_TARGETS)
  if ! cmake --build "$dir" -j "$TP_JOBS" "${targets[@]}" 2>&1 | tee "$dir/build.log" | {
      last=0
      while IFS= read -r line; do
        if [[ $line =~ ^\[([0-9]+)/([0-9]+)\] ]]; then
          p=$((100 * BASH_REMATCH[1] / BASH_REMATCH[2]))
          if ((p >= last + 10)); then last=$p; echo "build: $p%" >&2; fi
        fi
        if [[ $line == *error:* || $line == *warning:* || $line == *FAILED:* ]]; then echo "$line" >&2; fi
      done
    }; then
    tail -n 40 "$dir/build.log" >&2
    echo "build: FAILED in $dir" >&2
    return 1
  fi
}
