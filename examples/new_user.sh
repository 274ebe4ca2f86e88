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
