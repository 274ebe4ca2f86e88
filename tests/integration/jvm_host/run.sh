#!/usr/bin/env bash
# Runs the JVM host (io.github.ferryarrow.ferry.it.JvmHost) over the default case list plus
# any arguments (--require, --case, --cases, --plugins ...). Its classes and
# JNI helper are CMake targets (tests/integration/CMakeLists.txt, into
# BUILD/it/jvm_host). The Java plugin, when present, finds its
# binding through libferry_it_java.conf; the same classpath and library path
# are given to this JVM so that the plugin's classes resolve in the host.
# -Xcheck:jni checks every JNI call of every runtime (its "handler modified"
# warnings about signals are expected: Go adds SA_ONSTACK to the JVM's).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/../../../scripts/lib.sh"
out="$BUILD/it/jvm_host"
need_file "$out/libferry_it_jvm_host.so" "the JVM host's JNI helper"
need_file "$out/classes/io/github/ferryarrow/ferry/it/JvmHost.class" "the JVM host's classes"
cp="$out/classes"
libpath=""
conf="$BUILD/plugins/libferry_it_java.conf"
if [ -f "$conf" ]; then
  extra_cp="$(sed -n 's/^classpath=//p' "$conf")"
  libpath="$(sed -n 's/^library_path=//p' "$conf")"
  [ -n "$extra_cp" ] && cp="$cp:$extra_cp"
fi
has_cases=0
for a in "$@"; do case "$a" in --case|--cases) has_cases=1 ;; esac; done
cases=()
[ "$has_cases" -eq 0 ] && cases=(--cases "$ROOT/tests/integration/cases.txt")
exec java ${FERRY_IT_JVM_FLAGS:--Xcheck:jni} -Xss4m \
  -Dferry.it.helper="$out/libferry_it_jvm_host.so" \
  ${libpath:+-Djava.library.path="$libpath"} \
  -cp "$cp" io.github.ferryarrow.ferry.it.JvmHost --plugin-dir "$BUILD/plugins" "${cases[@]}" "$@"
