# Sourced by the scripts: installs missing packages, configures and builds.
set -euo pipefail
TP_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TP_JOBS="${TP_JOBS:-$(nproc)}"
"$TP_ROOT/scripts/setup.sh"
# tp_build DIR [cmake args...]: configure (once) and build everything in DIR.
tp_build() {
  local dir="$1"; shift
  cmake -S "$TP_ROOT" -B "$dir" -G Ninja "$@" >/dev/null
  cmake --build "$dir" -j "$TP_JOBS" 2>&1 | grep -E "error:|warning:|FAILED:" || true
  cmake --build "$dir" -j "$TP_JOBS" >/dev/null   # fail loudly if the build failed
}
