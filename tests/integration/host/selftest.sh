#!/usr/bin/env bash
# Self-test of ferry_it_host: each assertion of the host must fail when a
# plugin breaks the rule it guards. The misbehaving plugin (selftest/) wraps
# the real C plugin, is loaded in the place of the "rust" runtime, and breaks
# one rule per run; the host must exit non-zero and print the expected
# finding. A clean run of the same plugin (no misbehaviour) must pass.
# The host and the plugin are CMake targets. Ends with "N passed, N failed".
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/../../../scripts/lib.sh"
host="$BUILD/bin/ferry_it_host"
need_misbehaving_plugin

cases=(--case int32 --case "utf8:device=sim:nulls=3" --case "int32:fail=export"
       --case "float64:fail=get_next@2" --case "reject lenght int32:lenght=3")

# expect MODE "FINDING": the host, with the plugin misbehaving as MODE, must
# fail and print a FAIL line containing FINDING for a pair that involves it.
expect() {
  expect_finding "$1" '^FAIL (c|rust)->rust|^FAIL rust->' "$2" "a failure" \
    "$host" --plugins c,rust --plugin "rust=$bad" "${cases[@]}"
}

# expect_clean MODE: the host must pass with the plugin behaving as MODE
# ("" : the wrapper alone; else a behaviour the specification allows).
expect_clean() {
  local mode="$1" out
  if out="$(FERRY_IT_MISBEHAVE="$mode" "$host" --plugins c,rust --plugin "rust=$bad" "${cases[@]}" 2>&1)"; then
    pass "self-test clean${mode:+ $mode}"
  else
    fail "self-test clean${mode:+ $mode}"
    echo "FAIL self-test clean${mode:+ $mode}: the well-behaved plugin did not pass:"
    grep -E '^FAIL|passed' <<<"$out" | head -n 5 | sed 's/^/   /'
  fi
}

# The wrapper itself is harmless: with no misbehaviour everything passes.
expect_clean ""
# Batches sharing one private_data, moved by the consumer and held two at a
# time, released at reused addresses: still counted once each.
expect_clean move_and_hold
expect double_release "was released 2 times"
expect keep_array "still live (it must take ownership)"
expect skip_wait "consumer check failed"
expect swap_buffers "released with other buffers than the producer exported"
expect ignore_data "did not read the producer's buffers"
expect leak_export "leak: ferry_it_live_allocations() of rust"
expect wrong_message "expected a message with \"injected failure at export\""
expect stop_early "batches crossed, the case has"
expect swallow_failure "fail=get_next@2: no get_next call failed"
# Async pairs: a hung producer is one bounded FAIL line and the run goes on;
# a double release of the handler and a leak are named.
async_cases=(--case int32 --async-case "int32:window=2" --async-case "int32:batches=4:cancel=1"
             --async-case "int32:fail=export" --async-timeout-ms 300)
expect_async() {
  local mode="$1" finding="$2" out rc
  out="$(FERRY_IT_MISBEHAVE="$mode" "$host" --plugins c,rust --plugin "rust=$bad" \
         "${async_cases[@]}" 2>&1)"
  rc=$?
  if [ "$rc" -ne 0 ] && grep -E '^FAIL rust->(c|rust) async' <<<"$out" | grep -F "$finding" >/dev/null &&
     grep -E '^async: 3 cases' <<<"$out" >/dev/null; then
    pass "self-test $mode"
  else
    fail "self-test $mode"
    echo "FAIL self-test $mode: expected an async failure with \"$finding\" (exit $rc); got:"
    grep -E '^FAIL|passed|^async' <<<"$out" | head -n 5 | sed 's/^/   /'
  fi
}
if out="$("$host" --plugins c,rust --plugin "rust=$bad" "${async_cases[@]}" 2>&1)" &&
   grep -E '^async: 3 cases; 12 passed, 0 failed' <<<"$out" >/dev/null; then
  pass "self-test clean async"
else
  fail "self-test clean async"
  grep -E '^FAIL|passed|^async' <<<"$out" | head -n 5 | sed 's/^/   /'
fi
expect_async async_hang "HUNG: no verdict from the consumer after 300 ms"
expect_async async_double_release "released the handler 2 times, expected once"
expect_async async_leak "leak: ferry_it_live_allocations() of rust"
# A missing required runtime is a failure, not a skip.
if out="$("$host" --plugins c,go --plugin-dir /nonexistent --require c,go --case int32 2>&1)"; then
  fail "self-test require: a missing required runtime passed"
elif grep '^FAIL required runtime c is not loaded' <<<"$out" >/dev/null &&
     grep '^SKIPPED runtime go: /nonexistent/libferry_it_go.so not built' <<<"$out" >/dev/null; then
  pass "self-test require"
else
  fail "self-test require"; sed 's/^/   /' <<<"$out" | head
fi
finish
