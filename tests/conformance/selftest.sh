#!/usr/bin/env bash
# Self-test of the conformance suite: it must fail, with the expected finding,
# on a plugin that breaks one rule on purpose. Uses the matrix host's
# misbehaving plugin (tests/integration/host/selftest, a CMake target in
# BUILD/it/), which wraps the C plugin. A clean run of the wrapper must pass.
# Run by run.sh; ends with "N passed, N failed".
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/../../scripts/lib.sh"
HOST="$BUILD/bin/ferry_it_host"
need_misbehaving_plugin
run() { "$HOST" conformance "$bad" --reference "$FERRY_IT_WRAPPED_PLUGIN" "$@" 2>&1; }

# expect MODE FINDING: with the plugin misbehaving as MODE the suite must exit
# non-zero and print a FAIL line containing FINDING.
expect() { expect_finding "$1" '^FAIL misbehaving ' "$2" "a FAIL line" run; }

if out="$(FERRY_IT_MISBEHAVE=none run)"; then
  pass "self-test clean"
else
  fail "self-test clean"
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
expect async_lenient "the checking consumer accepted a producer that broke the rule"
# async_double_release is not run: a release coming after the host took its
# verdict (the ticket is freed then) is a race no consumer can judge without a
# use after free; the C plugin's own test (it_c_async_test,
# call_after_release_is_named) and `ferry check --async` (bad_async_double_release)
# cover the rule where the order is certain.
echo "SKIPPED self-test async_double_release: a second release racing the host's verdict cannot be judged safely (see the comment above)"
finish
