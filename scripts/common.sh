# Sourced by the scripts: installs missing packages, configures and builds.
set -euo pipefail
TP_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TP_JOBS="${TP_JOBS:-$(nproc)}"
"$TP_ROOT/scripts/setup.sh"
# tp_build DIR [cmake args...]: configure (once) and build everything in DIR.
# Prints progress every 10% and any warning or error; the full log is in
# DIR/build.log. The first build takes several minutes on 2 cores.
tp_build() {
  local dir="$1"; shift
  cmake -S "$TP_ROOT" -B "$dir" -G Ninja "$@" >/dev/null
  echo "build: $dir (log: $dir/build.log)" >&2
  if ! cmake --build "$dir" -j "$TP_JOBS" 2>&1 | tee "$dir/build.log" | awk '
      /^\[[0-9]+\/[0-9]+\]/ { split(substr($1, 2), a, "/"); p = int(100 * a[1] / a[2]);
                               if (p >= last + 10) { last = p; printf "build: %d%%\n", p > "/dev/stderr" } }
      /error:|warning:|FAILED:/ { print > "/dev/stderr" }'; then
    tail -n 40 "$dir/build.log" >&2
    echo "build: FAILED in $dir" >&2
    return 1
  fi
}
