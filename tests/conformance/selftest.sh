#!/usr/bin/env bash
# Self-test of the conformance suite: it must fail, with the expected finding,
# on a plugin that breaks one rule on purpose. Uses the integration host's
# misbehaving plugin (tests/integration/host/selftest, built by
# tests/integration/build.sh selftest into BUILD/it/), which wraps the C
# plugin. A clean run of the wrapper must pass. Ends with "N passed, N failed".
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="${FERRY_ROOT:-$(cd "$HERE/../.." && pwd)}"
BUILD="${FERRY_BUILD_DIR:-$ROOT/build}"
BIN="${FERRY_CONFORMANCE_OUT:-$BUILD/bin/ferry_conformance}"
bad="$BUILD/it/libferry_it_misbehaving.so"
export FERRY_IT_WRAPPED_PLUGIN="$BUILD/plugins/libferry_it_c.so"
passed=0; failed=0
if [ ! -f "$bad" ]; then
  bash "$ROOT/tests/integration/build.sh" selftest >/dev/null 2>&1 || true
fi
if [ ! -f "$bad" ]; then
  echo "FAIL self-test: $bad is not built (tests/integration/build.sh selftest)"
  echo "0 passed, 1 failed"; exit 1
fi
FERRY_CONFORMANCE_OUT="$BIN" bash "$HERE/build.sh" "$BUILD" || { echo "0 passed, 1 failed"; exit 1; }
run() { "$BIN" "$bad" --reference "$FERRY_IT_WRAPPED_PLUGIN" "$@" 2>&1; }

# expect MODE FINDING: with the plugin misbehaving as MODE the suite must exit
# non-zero and print a FAIL line containing FINDING.
expect() {
  local mode="$1" finding="$2" out rc
  out="$(FERRY_IT_MISBEHAVE="$mode" run)"
  rc=$?
  if [ "$rc" -ne 0 ] && grep -E '^FAIL misbehaving ' <<<"$out" | grep -F "$finding" >/dev/null; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL self-test $mode: expected a FAIL line with \"$finding\" (exit $rc); got:"
    grep -E '^FAIL|passed' <<<"$out" | head -n 5 | sed 's/^/   /'
  fi
}

if out="$(FERRY_IT_MISBEHAVE=none run)"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
  echo "FAIL self-test clean: the well-behaved wrapper did not pass:"
  grep -E '^FAIL|passed' <<<"$out" | head -n 5 | sed 's/^/   /'
fi
expect double_release "released 2 times"
expect keep_array "did not take ownership"
expect skip_wait "check_array rejects correct C reference data"
expect ignore_data "check_array accepted tampered data"
expect leak_export "ferry_it_live_allocations() of misbehaving is"
expect wrong_message "expected exactly \"injected failure at export\""
expect stop_early "check_stream accepted it"
expect swallow_failure "check_stream accepted it (the expected get_next failure never comes)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
