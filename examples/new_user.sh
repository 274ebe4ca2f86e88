# Sourced by examples/<lang>/test.sh, the new-user tests: what they share.
# The caller sets HERE (its own folder), EXAMPLE (the language, for messages)
# and USER_UNSET (the variables of that language a new user would not have
# set, besides ferry's own); this defines ROOT, BUILD, a scratch folder $tmp
# (removed on exit), its $log, pass/fail counting, and `user CMD...`, which
# runs CMD in a new user's shell: none of the repository's variables, no
# loader path. Each test ends with `echo "$passed passed, $failed failed"`.
ROOT="${FERRY_ROOT:-$(cd "$HERE/../.." && pwd)}"
BUILD="${FERRY_BUILD_DIR:-$ROOT/build}"
passed=0
failed=0
tmp="$(mktemp -d)"
# Go's module cache is read-only: make it removable first.
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
log="$tmp/log"

pass() { passed=$((passed + 1)); echo "$EXAMPLE example: ok: $*"; }
fail() {
  failed=$((failed + 1)); echo "$EXAMPLE example: FAILED: $*"
  [ -s "$log" ] && tail -40 "$log" | sed 's/^/    | /'
}
user() {
  local unset_args=() name
  for name in FERRY_BUILD_DIR FERRY_ROOT LD_LIBRARY_PATH FERRY_CUDA_LIBRARY FERRY_HIP_LIBRARY \
              "${USER_UNSET[@]}"; do
    unset_args+=(-u "$name")
  done
  env "${unset_args[@]}" "$@"
}
# need_core: ends the test with a failure when the core is not built, and
# sets pc, the build's pkg-config folder (what a new user puts in
# PKG_CONFIG_PATH).
need_core() {
  pc="$BUILD/lib/pkgconfig"
  [ -f "$BUILD/lib/libferry.so" ] && return 0
  echo "$EXAMPLE example: $BUILD/lib/libferry.so is missing: build the core first (scripts/build.sh)"
  echo "0 passed, 1 failed"
  exit 1
}
# copy_example EXCLUDE...: copies the example (this folder but test.sh and
# each EXCLUDE, a build output) out of the tree into $app, as a new user has it.
copy_example() {
  local excludes=(--exclude=./test.sh) name
  for name in "$@"; do excludes+=("--exclude=./$name"); done
  app="$tmp/ferry-example"
  mkdir -p "$app"
  (cd "$HERE" && tar cf - "${excludes[@]}" .) | (cd "$app" && tar xf -)
}
# prints DIR DEVICE_PATTERN CMD...: 0 when CMD, run in DIR, succeeds and its
# output (kept in $tmp/out) passes the caller's `expect_output FILE
# DEVICE_PATTERN`; the output is in $log either way.
prints() {
  local dir="$1" device="$2"
  shift 2
  (cd "$dir" && "$@") >"$log" 2>&1 && cp "$log" "$tmp/out" && expect_output "$tmp/out" "$device"
}
# expect_lines FILE PATTERN...: 0 when every extended regex PATTERN matches a
# line of FILE; each one that does not is written to $log.
expect_lines() {
  local file="$1" missing=0 pattern
  shift
  for pattern in "$@"; do
    grep -Eq -- "$pattern" "$file" || { echo "    missing: $pattern" >>"$log"; missing=1; }
  done
  return "$missing"
}
