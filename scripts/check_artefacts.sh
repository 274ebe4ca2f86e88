#!/usr/bin/env bash
# What the build produced, checked once per test command (scripts/test.sh
# step "artefacts"): how every binary links and what it exports, and that no
# test code ships.
#   - every runtime's plugin (core/harness/runtimes.def) links the one shared
#     libferry.so (or, for Java, its JNI library does), carries no copy of the
#     core, and exports the six entry points of ferry/ferry_it.h and the five
#     of ferry_it_bench.h;
#   - libferry_jni.so links libferry.so, defines no ferry_ symbol but its own
#     and no test native; the jar holds the JNI library and no test class;
#   - the Lua module exports only luaopen_ferry_core;
#   - tests/hostile's libferry_hostile.so links the shared libferry.so, and
#     no product links it;
#   - the product does not depend on the test tree: nothing under core/
#     includes from tests/, and no committed symlink leaves the repository.
# (libferry.so's own exported symbols: tests/abi/exported_symbols_test.sh.)
# Ends with "N passed, N failed".
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ENTRY_POINTS="ferry_it_export_array ferry_it_check_array ferry_it_export_stream
  ferry_it_check_stream ferry_it_live_allocations ferry_it_last_error ferry_it_bench_noop
  ferry_it_bench_export_array ferry_it_bench_consume_array ferry_it_bench_export_stream
  ferry_it_bench_consume_stream"

defined() { nm -D --defined-only "$1" | awk '{print $3}'; }

# links_core LIB: NEEDED libferry.so and no ferry_ symbol of the core defined.
links_core() {
  # grep without -q in a pipeline: it reads all its input (pipefail, SIGPIPE).
  readelf -d "$1" | grep 'NEEDED.*\[libferry\.so' >/dev/null || { echo "$1 does not link libferry.so"; return 1; }
  local copied
  copied="$(defined "$1" | grep '^ferry_' | grep -v -e '^ferry_it_' -e '^ferry_jni_' | head -n 3)"
  [ -z "$copied" ] || { echo "$1 defines core symbols (a copy of the core?): $copied"; return 1; }
}

exports_entry_points() {
  local symbol missing="" symbols
  symbols="$(defined "$1")"
  for symbol in $ENTRY_POINTS; do
    grep -x "$symbol" <<<"$symbols" >/dev/null || missing="$missing $symbol"
  done
  [ -z "$missing" ] || { echo "$1 does not export:$missing"; return 1; }
}

for name in $(ferry_runtimes); do
  plugin="$BUILD/plugins/libferry_it_$name.so"
  if ! need_file "$plugin" "the $name plugin"; then
    fail "the $name plugin is built"
    continue
  fi
  # The Java plugin is a shim that starts a JVM; the JNI library links the core.
  [ "$name" = java ] || check "the $name plugin links the shared libferry.so" links_core "$plugin"
  check "the $name plugin exports the entry points" exports_entry_points "$plugin"
done

jni="$BUILD/java/libferry_jni.so"
jar="$BUILD/java/ferry-arrow.jar"
if need_file "$jni" "the JNI library" && need_file "$jar" "the binding's jar"; then
  check "libferry_jni.so links the shared libferry.so" links_core "$jni"
  check "libferry_jni.so carries no test natives" \
    bash -c '! nm -D --defined-only "$1" | grep Java_io_github_ferryarrow_ferry_jni_Testing_ >/dev/null' _ "$jni"
  entries="$(mktemp)"
  python3 -c 'import sys, zipfile; print("\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))' "$jar" >"$entries"
  check "the jar carries libferry_jni.so" grep -qx native/linux-x86_64/libferry_jni.so "$entries"
  check "the jar carries libferry.so.0" grep -qx native/linux-x86_64/libferry.so.0 "$entries"
  check "libferry_jni.so's RUNPATH is \$ORIGIN alone" \
    bash -c '[ "$(readelf -d "$1" | sed -n "s/.*(RUNPATH).*\[\(.*\)\]/\1/p")" = "\$ORIGIN" ]' _ "$jni"
  check "the jar carries no test classes (io/github/ferryarrow/ferry/it, Testing)" \
    bash -c '! grep -E "^io/github/ferryarrow/ferry/it/|/Testing[.\$]" "$1"' _ "$entries"
  rm -f "$entries"
else
  fail "the Java binding is built"
fi

lua_module="$BUILD/lua/5.4/ferry_core.so"
if need_file "$lua_module" "the Lua module"; then
  check "ferry_core.so links the shared libferry.so" links_core "$lua_module"
  check "ferry_core.so exports only luaopen_ferry_core" \
    bash -c '[ "$(nm -D --defined-only "$1" | awk "{print \$3}" | grep -v "^_" | tr "\n" " ")" = "luaopen_ferry_core " ]' _ "$lua_module"
else
  fail "the Lua module is built"
fi

# tests/hostile: the hostile producers every binding's hostile suite loads.
hostile="$BUILD/lib/libferry_hostile.so"
if need_file "$hostile" "the hostile producers (tests/hostile)"; then
  check "libferry_hostile.so links the shared libferry.so" \
    bash -c 'readelf -d "$1" | grep "NEEDED.*\[libferry\.so" >/dev/null' _ "$hostile"
  check "no product links libferry_hostile.so (test code)" \
    bash -c '! for f in "$@"; do [ -e "$f" ] && readelf -d "$f"; done | grep "NEEDED.*libferry_hostile" >/dev/null' \
    _ "$BUILD/lib/libferry.so" "$jni" "$lua_module" "$BUILD"/plugins/*.so
else
  fail "the hostile producers are built"
fi

check "nothing under core/ includes from tests/" \
  bash -c '! grep -rnE "#include .*tests/" "$1/core"' _ "$ROOT"
check "no committed symlink leaves the repository" \
  bash -c 'cd "$1" && ! git ls-files -s | awk "\$1 == 120000 {print \$4}" | while read -r l; do
             t="$(readlink -m "$l")"; case "$t" in "$1"/*) ;; *) echo "$l -> $t";; esac; done | grep .' _ "$ROOT"
finish
