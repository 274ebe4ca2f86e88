#!/usr/bin/env bash
# Builds and tests the core with Bazel (offline, Debian's bazel-bootstrap),
# then builds, tests and runs the consumer workspace tests/bazel_consumer,
# which depends on this repository as a user's project does (the README's
# Bazel section: local_repository plus ferry_offline_repositories), and
# checks that the consumer links the shared libferry.so.0 (NEEDED, and no
# ferry_ symbol defined in the binary: one library, one device registry per
# process). Ends with "N passed, N failed".
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# bazel_in DIR ARGS...: one Bazel command in workspace DIR, its progress
# chatter filtered out; the server is shut down afterwards (2 cores).
bazel_in() {
  local dir="$1" rc log
  shift
  log="$(mktemp)"
  (cd "$dir" && bazel "$@" --noshow_progress) >"$log" 2>&1
  rc=$?
  grep -vE '^(Loading|Analyzing|INFO: (From|Found|Analyzed|Elapsed|[0-9]+ processes))' "$log"
  rm -f "$log"
  return "$rc"
}

check "bazel test //... (the core)" bazel_in "$ROOT" test //...
(cd "$ROOT" && bazel shutdown)
consumer="$ROOT/tests/bazel_consumer"
check "bazel test //... (the consumer workspace)" bazel_in "$consumer" test //...
check "bazel run //app:handoff" bazel_in "$consumer" run //app:handoff
app="$(cd "$consumer" && bazel info bazel-bin 2>/dev/null)/app/handoff"
if need_file "$app" "the consumer's binary"; then
  dynamic="$(readelf -d "$app")"
  check "the consumer links libferry.so.0 (NEEDED)" grep -F '[libferry.so.0]' <<<"$dynamic"
  defined="$(nm --defined-only "$app" | awk '$3 ~ /^ferry_/ {print $3}')"
  if [ -z "$defined" ]; then
    pass "the consumer defines no ferry_ symbol (a shared link, not a static copy)"
  else
    fail "the consumer defines $(wc -l <<<"$defined") ferry_ symbols (a static copy): $(head -n 3 <<<"$defined" | tr '\n' ' ')"
  fi
  undefined="$(nm --undefined-only "$app" | grep -c ' U ferry_')"
  [ "$undefined" -gt 0 ] && pass "the consumer's ferry_ symbols are undefined ($undefined, resolved from libferry.so.0)" ||
    fail "the consumer has no undefined ferry_ symbol"
else
  fail "the consumer's binary was built"
fi
(cd "$consumer" && bazel shutdown)
finish
