#!/usr/bin/env bash
# The install target and the pkg-config file work for a C user: install into
# a temporary prefix, then compile, link and run a program against the
# installed headers and library found only through `pkg-config ferry`.
# Args: BUILD_DIR SOURCE_DIR
set -uo pipefail
BUILD="$1"; SRC="$2"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
passed=0; failed=0
ok() { passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }

if cmake --install "$BUILD" --prefix "$tmp/prefix" >"$tmp/install.log" 2>&1; then ok; else
  cat "$tmp/install.log"; bad "cmake --install failed"; fi
pc="$(find "$tmp/prefix" -name ferry.pc | head -1)"
[ -n "$pc" ] && ok || bad "no ferry.pc installed"
for h in ferry.h arrow_c_device_abi.h ferry_version.h ferry_it.h; do
  [ -f "$tmp/prefix/include/ferry/$h" ] && ok || bad "header $h not installed"
done
[ -x "$tmp/prefix/bin/ferry" ] && ok || bad "the ferry tool is not installed"

cat >"$tmp/app.c" <<'C'
#include <ferry/ferry.h>
#include <stdio.h>
static int hooks;
static void on_release(void* user_data) { hooks += (user_data != NULL); }
int main(void) {
  static int32_t values[3] = {7, 8, 9};
  const void* buffers[2] = {NULL, values};
  struct ArrowArray array = {0};
  struct ArrowDeviceArray out = {0};
  if (ferry_array_init(&array, 3, 0, 0, 2, buffers, 0, on_release, values, NULL) != FERRY_OK)
    return 1;
  if (ferry_device_array_init(&out, &array, ARROW_DEVICE_CPU, -1, NULL, NULL, NULL, NULL) != FERRY_OK)
    return 1;
  int same = ferry_array_buffer(ferry_device_array_array(&out), 1) == values;
  ferry_device_array_release(&out);
  printf("%s %d %d\n", ferry_version(), same, hooks);
  return same && hooks == 1 ? 0 : 1;
}
C
export PKG_CONFIG_PATH="$(dirname "$pc")"
# A sanitizer build installs an instrumented library: the program needs the
# same runtime, so it is built with the build's own -fsanitize flags.
san="$(sed -n 's/^FERRY_SANITIZE:STRING=//p' "$BUILD/CMakeCache.txt" 2>/dev/null)"
san_flags=()
[ -n "$san" ] && san_flags=("-fsanitize=$san")
if cc -std=c11 "${san_flags[@]}" "$tmp/app.c" -o "$tmp/app" $(pkg-config --cflags --libs ferry) \
     -Wl,-rpath,"$(pkg-config --variable=libdir ferry)" 2>"$tmp/cc.log"; then ok; else
  cat "$tmp/cc.log"; bad "a program does not build against the installed ferry"; fi
# It must find the installed library, not the build tree's.
if [ -x "$tmp/app" ] && out="$("$tmp/app")" && [ "$out" = "$(cat "$SRC/core/include/ferry/ferry_version.h" | sed -n 's/#define FERRY_VERSION_STRING "\(.*\)"/\1/p') 1 1" ]; then
  ok
else
  bad "the installed program did not run correctly: ${out:-no output}"
fi
if [ -x "$tmp/app" ] && grep -F "$tmp/prefix" <<<"$(ldd "$tmp/app")" >/dev/null; then ok; else bad "the program does not use the installed libferry"; fi
# The installed ferry.pc is relocatable: moved elsewhere, the prefix moves
# with it (its paths come from ${pcfiledir}, none is written in).
mv "$tmp/prefix" "$tmp/moved"
PKG_CONFIG_PATH="$(dirname "${pc/$tmp\/prefix/$tmp/moved}")"
if [ -f "$PKG_CONFIG_PATH/ferry.pc" ] && ! grep -F "$tmp/prefix" "$PKG_CONFIG_PATH/ferry.pc" >/dev/null &&
   [ "$(realpath "$(pkg-config --variable=includedir ferry)")" = "$(realpath "$tmp/moved/include")" ]; then ok; else
  bad "ferry.pc is not relocatable: $(cat "$PKG_CONFIG_PATH/ferry.pc" 2>/dev/null | head -3 | tr '\n' ' ')"; fi
for f in LICENSE NOTICE; do
  [ -f "$tmp/moved/share/doc/ferry/$f" ] && ok || bad "$f is not installed"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
