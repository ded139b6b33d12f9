#!/usr/bin/env bash
# libtracepipe_c exports exactly the functions tracepipe_c.h declares
# (TRACEPIPE_C_API ... name(), all tracepipe_*), each at version
# TRACEPIPE_C_1, and nothing else but that version node. With no-static-tls
# (TLS descriptors in the build): no initial-exec thread-local access
# either (no STATIC_TLS flag, no TPOFF relocation), so dlopen() takes the
# library however little static TLS the loader has left.
set -euo pipefail
lib=$1 header=$2 tls=${3:-any-tls}
want=$(tr '\n' ' ' <"$header" | grep -o 'TRACEPIPE_C_API [^(;#]*(' | sed -E 's/.*[ *]([a-z_0-9]+)\($/\1/' | grep -v '^__attribute__' | sort)
have=$(nm -D --defined-only --with-symbol-versions "$lib" | awk '{print $3}' | sort)
bad=$(grep -v -E '^(tracepipe_[a-z_0-9]+@@TRACEPIPE_C_1|TRACEPIPE_C_1(@@TRACEPIPE_C_1)?)$' <<<"$have" || true)
if [ -n "$bad" ]; then echo "exported beyond tracepipe_*@@TRACEPIPE_C_1:"; echo "$bad"; exit 1; fi
names=$(sed -n 's/^\(tracepipe_[a-z_0-9]*\)@@.*/\1/p' <<<"$have" | sort)
if [ "$names" != "$want" ]; then
  echo "exported and declared differ (< declared only, > exported only):"
  diff <(echo "$want") <(echo "$names") || true
  exit 1
fi
if [ "$tls" = no-static-tls ]; then
  if readelf -dW "$lib" | grep -q STATIC_TLS; then echo "the library needs static TLS (DF_STATIC_TLS)"; exit 1; fi
  ie=$(readelf -rW "$lib" | grep -c -E 'R_(X86_64|AARCH64)_(TPOFF|TLS_TPREL)' || true)
  if [ "$ie" != 0 ]; then echo "$ie initial-exec TLS relocations:"; readelf -rW "$lib" | grep -E 'TPOFF|TPREL'; exit 1; fi
fi
echo "exports: $(wc -l <<<"$names") functions, all tracepipe_*@@TRACEPIPE_C_1; SONAME $(readelf -d "$lib" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')"
