#!/usr/bin/env bash
# Tests of the `ferry` tool against the producers in core/test/producers:
# exit codes, the FAIL lines each broken producer must cause, and their
# absence for the good ones. Usage: tool_test.sh BUILD_DIR SOURCE_DIR
set -u

BUILD_DIR=${1:?usage: tool_test.sh BUILD_DIR SOURCE_DIR}
SOURCE_DIR=${2:?usage: tool_test.sh BUILD_DIR SOURCE_DIR}
FERRY="$BUILD_DIR/bin/ferry"
PRODUCERS="$BUILD_DIR/test-producers"
C_PLUGIN="$BUILD_DIR/plugins/libferry_it_c.so"
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT

passed=0
failed=0

fail() {
  echo "FAILED: $*"
  echo "  --- output ---"
  sed 's/^/  | /' "$OUT"
  failed=$((failed + 1))
}

# expect NAME EXIT_CODE [--has LINE_PREFIX]... [--lacks PATTERN]... -- ARGS...
# Runs `ferry ARGS`, checks the exit code, that each --has line prefix starts
# some output line, and that no line contains a --lacks pattern.
expect() {
  local name=$1 code=$2
  shift 2
  local has=() lacks=() either=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    case $1 in
      --has) has+=("$2"); shift 2 ;;
      --has-either) either=("$2" "$3"); shift 3 ;;
      --lacks) lacks+=("$2"); shift 2 ;;
      *) echo "bad expect argument $1"; exit 2 ;;
    esac
  done
  shift
  "$FERRY" "$@" >"$OUT" 2>&1
  local actual=$?
  if [ "$actual" -ne "$code" ]; then
    fail "$name: exit code $actual, expected $code (ferry $*)"
    return
  fi
  local line
  for line in "${has[@]+"${has[@]}"}"; do
    if ! grep -qF -- "$line" "$OUT"; then
      fail "$name: missing line \"$line\""
      return
    fi
  done
  if [ "${#either[@]}" -eq 2 ] && ! grep -qF -- "${either[0]}" "$OUT" &&
     ! grep -qF -- "${either[1]}" "$OUT"; then
    fail "$name: neither \"${either[0]}\" nor \"${either[1]}\""
    return
  fi
  for line in "${lacks[@]+"${lacks[@]}"}"; do
    if grep -qF -- "$line" "$OUT"; then
      fail "$name: unexpected \"$line\""
      return
    fi
  done
  passed=$((passed + 1))
}

# CMake names the libraries lib<name>.so; accept <name>.so as well.
p() {
  local lib="$PRODUCERS/lib$1.so"
  [ -f "$lib" ] || lib="$PRODUCERS/$1.so"
  echo "$lib:${2:-produce}"
}

# ---- good producers: exit 0, no FAIL line ----------------------------------
expect good_array 0 --has "OK, no findings" --lacks "FAIL" -- check "$(p good_array)"
expect good_stream 0 --has "OK, no findings" --lacks "FAIL" -- check --stream "$(p good_stream produce_stream)"
expect good_ferry_helpers 0 --lacks "FAIL" -- check "$(p good_ferry_helpers)"
expect good_ferry_helpers_stream 0 --lacks "FAIL" -- check --stream "$(p good_ferry_helpers produce_stream)"

# ---- broken array producers: exit 1 and the precise finding -----------------
expect bad_n_buffers 1 --has "FAIL n_buffers: root.children[0]: int32 array needs 2 buffers, found n_buffers = 3" -- check "$(p bad_n_buffers)"
expect bad_reserved 1 --has "FAIL reserved: root: reserved[1] is 0x5eed" -- check "$(p bad_reserved)"
expect bad_release_not_null 1 --has "FAIL release: root: the array's release callback did not set release to NULL" -- check "$(p bad_release_not_null)"
expect bad_child_never_released 1 --has "FAIL release: root.children[1]: array was never released" --lacks "root.children[0]: array" -- check "$(p bad_child_never_released)"
expect bad_double_release 1 --has "FAIL release: root.children[0]: array was released 2 times" -- check "$(p bad_double_release)"
expect bad_segfault 1 --has "FAIL crash: root: producer crashed with SIGSEGV during the producer call" -- check "$(p bad_segfault)"
expect bad_release_segfault 1 --has "FAIL crash: root: producer crashed with SIGSEGV during release of the array" -- check "$(p bad_release_segfault)"
expect bad_hang 1 --has "FAIL timeout: root: no answer within 2 s during the producer call" -- check --timeout 2 "$(p bad_hang)"
expect bad_utf8 1 --has "FAIL utf8: root.children[1]: value[2] is not valid UTF-8" -- check "$(p bad_utf8)"
expect bad_offsets 1 --has "FAIL offsets: root.children[1]: buffer 1 (offsets): offsets[2] = 2 is less than offsets[1] = 3" -- check "$(p bad_offsets)"
expect bad_sync_event_cpu 1 --has "FAIL sync_event: root: sync_event is" -- check "$(p bad_sync_event_cpu)"
expect bad_return_code 1 --has "FAIL return_code: root: producer returned 5 (EIO)" -- check "$(p bad_return_code)"

# ---- broken stream producers --------------------------------------------------
expect bad_stream_after_end 1 --has "FAIL crash: root: producer crashed with SIGSEGV during get_next after the end of the stream" -- check --stream "$(p bad_stream_after_end produce_stream)"
expect bad_stream_no_error 1 --has "FAIL stream_error: stream: get_next call 2 returned 5 (EIO) but get_last_error returned NULL" -- check --stream "$(p bad_stream_no_error produce_stream)"
expect bad_stream_device 1 --has "FAIL device: batch[1].root: batch device_type 12 (ext_dev) differs from the stream's device_type 1 (cpu)" --lacks "batch[0]" --lacks "batch[2]" -- check --stream "$(p bad_stream_device produce_stream)"

# ---- async producers (ferry check --async): the good one passes all six runs, ------
# ---- each broken one is named by the rule it breaks --------------------------------
pa() { p "$1" produce_async; }
expect good_async 0 --has "OK run \"window 8\": 3 tasks (3 batches valid), end marker, released once" --has "OK run \"request(-1)\": 0 tasks (0 batches valid), on_error, released once" --has "OK, no findings" --lacks "FAIL" -- check --async "$(pa good_async)"
expect good_async_sync 0 --has "OK run \"cancel\": " --has "OK, no findings" --lacks "FAIL" -- check --async "$(pa good_async_sync)"
expect bad_async_task_before_schema 1 --has "FAIL async_order: run \"window 1\": on_next_task came before on_schema" -- check --async --timeout 2 "$(pa bad_async_task_before_schema)"
expect bad_async_no_producer 1 --has "FAIL async_producer: run \"window 1\": on_schema came with handler->producer NULL" --lacks "async_request" -- check --async --timeout 2 "$(pa bad_async_no_producer)"
# The burst races the tool's thread, which requests one more per task it
# extracts: the first task over the demand is task 8 or a later one.
expect bad_async_overrun 1 --has "FAIL async_demand: run \"window 8\": task " --has "requested (more tasks than requested)" -- check --async --timeout 2 "$(pa bad_async_overrun)"
expect bad_async_overlap 1 --has "FAIL async_serial: run \"window 1\": on_next_task overlapped another handler callback (concurrent handler calls)" -- check --async --timeout 2 "$(pa bad_async_overlap)"
expect bad_async_after_release 1 --has "FAIL async_after_release: run \"window 1\": on_error was called after release" -- check --async --timeout 2 "$(pa bad_async_after_release)"
expect bad_async_no_release 1 --has "FAIL async_release: run \"window 1\": HANG: the handler was never released" --has "SKIPPED run \"request(-1)\": the producer hangs" -- check --async --timeout 1 "$(pa bad_async_no_release)"
expect bad_async_double_release 1 --has "FAIL async_release: run \"window 1\": the handler was released twice" -- check --async --timeout 2 "$(pa bad_async_double_release)"
expect bad_async_malformed 1 --has "FAIL n_buffers: run \"window 1\" batch[1].root.children[0]: int32 array needs 2 buffers, found n_buffers = 3" --lacks "batch[0]" -- check --async --timeout 2 "$(pa bad_async_malformed)"
expect bad_async_null_message 1 --has "FAIL async_error: run \"request(0)\": on_error(22, EINVAL) came with a NULL message" -- check --async --timeout 2 "$(pa bad_async_null_message)"
expect bad_async_ignores_bad_request 1 --has "FAIL async_request: run \"request(0)\": request(0) got no on_error within 1 s" --has "FAIL async_request: run \"request(-1)\"" --lacks "async_release" -- check --async --timeout 1 "$(pa bad_async_ignores_bad_request)"
expect bad_async_reentrant 1 --has "FAIL async_reentry: run \"window 1\": on_next_task was called synchronously from within request or cancel" -- check --async --timeout 2 "$(pa bad_async_reentrant)"
expect bad_async_error_after_cancel 1 --has "FAIL async_cancel: run \"cancel\": on_error(ECANCELED, \"cancelled\") came after cancel" --lacks "FAIL async_cancel: run \"window" -- check --async --timeout 2 "$(pa bad_async_error_after_cancel)"
# The same task twice: caught as such when the second copy comes before the
# consumer's thread extracted the first, else as the refused second extraction.
expect bad_async_task_twice 1 --has-either "FAIL async_task: run \"window 8\": task 1 is task 0 again (the same private_data, not yet extracted)" "extract_data of task 1 returned 22 (EINVAL)" --lacks "FAIL crash" -- check --async --timeout 2 "$(pa bad_async_task_twice)"
expect usage_async_and_stream 2 --has "choose --stream or --async" -- check --async --stream "$(pa good_async)"
expect usage_inspect_async 2 --has "inspect does not take --async" -- inspect --async "$(pa good_async)"

# ---- inspect and devices ---------------------------------------------------------
expect inspect_good 0 --has "root.children[1]: format \"u\" length 4 null_count 0 offset 0 n_buffers 3" --has "device: cpu (device_type 1) device_id -1 sync_event" --has "bytes)" -- inspect "$(p good_array)"
expect inspect_stream 0 --has "end of stream after 3 batches" -- inspect --stream "$(p good_stream produce_stream)"
expect inspect_crash 1 --has "FAIL crash: root: producer crashed with SIGSEGV" -- inspect "$(p bad_segfault)"
expect devices 0 --has "cpu    available" --has "sim    available" -- devices
expect version 0 --has "ferry 0.1" -- --version
expect help 0 --has "usage: ferry" -- help

# ---- usage errors: exit 2 --------------------------------------------------------
expect usage_none 2 --
expect usage_unknown_command 2 --has "unknown command \"frob\"" -- frob
expect usage_unknown_flag 2 --has "unknown option \"--frob\"" -- check --frob "$(p good_array)"
expect usage_missing_target 2 --has "check needs LIB.so:SYMBOL" -- check
expect usage_bad_target 2 --has "is not LIB.so:SYMBOL" -- check "$PRODUCERS/good_array.so"
expect usage_missing_library 2 --has "cannot load" -- check "$PRODUCERS/no_such_producer.so:produce"
expect usage_missing_symbol 2 --has "has no symbol \"no_such_symbol\"" -- check "$(p good_array no_such_symbol)"
expect usage_bad_timeout 2 --has "--timeout needs a whole number" -- check --timeout 0 "$(p good_array)"
expect usage_plugin_without_case 2 --has "--plugin needs --case CASE" -- check --plugin "$C_PLUGIN"

# ---- plugin cases (the C plugin as producer and as value checker) ------------------
if [ -f "$C_PLUGIN" ]; then
  for case_spec in "int32" "utf8:nulls=3:offset=2" "list_int32:length=40:nulls=4" \
                   "struct_int32_utf8:device=sim" "dict_int32_utf8:nulls=2" "bool:length=0"; do
    expect "plugin_$case_spec" 0 --has "OK, no findings" --lacks "FAIL" -- check --plugin "$C_PLUGIN" --case "$case_spec"
    expect "plugin_stream_$case_spec" 0 --has "OK, no findings" --lacks "FAIL" -- check --plugin "$C_PLUGIN" --case "$case_spec:batches=2" --stream
  done
  expect plugin_fail_export 0 --has "OK injected failure: injected failure at export" --lacks "FAIL" -- check --plugin "$C_PLUGIN" --case "int32:fail=export"
  expect plugin_stream_fail_get_next 0 --has "OK injected failure: injected failure at get_next 2" --lacks "FAIL" -- check --plugin "$C_PLUGIN" --case "int32:fail=get_next@2" --stream
  # A failure injected at the end-of-stream call is met; one beyond it never
  # is (a consumer stops at the end): a plain stream (it_case_failing_get_next).
  expect plugin_stream_fail_at_end 0 --has "OK injected failure: injected failure at get_next 3" --lacks "FAIL" -- check --plugin "$C_PLUGIN" --case "int8:batches=2:fail=get_next@3" --stream
  expect plugin_stream_fail_beyond_end 0 --has "OK, no findings" --lacks "FAIL" -- check --plugin "$C_PLUGIN" --case "int8:batches=2:fail=get_next@9" --stream
  expect plugin_stream_fail_get_schema 0 --has "OK injected failure: injected failure at get_schema" --lacks "FAIL" -- check --plugin "$C_PLUGIN" --case "utf8:fail=get_schema" --stream
  # --async: the plugin's ferry_it_export_async through the strict checking consumer.
  for case_spec in "int32:window=4:batches=5" "utf8:device=sim:nulls=3:batches=3:cancel=1" \
                   "int32:batches=4:fail=consumer@2" "int32:batches=3:fail=get_next@2:window=2"; do
    expect "plugin_async_$case_spec" 0 --has "OK async: the strict checking consumer accepted the stream" --lacks "FAIL" -- check --plugin "$C_PLUGIN" --case "$case_spec" --async
  done
  expect plugin_async_fail_export 0 --has "OK injected failure: injected failure at export" --lacks "FAIL" -- check --plugin "$C_PLUGIN" --case "int32:fail=export" --async
  expect plugin_bad_case 1 --has "FAIL return_code: root: ferry_it_export_array returned" -- check --plugin "$C_PLUGIN" --case "int33"
  expect plugin_missing 2 --has "cannot load plugin" -- check --plugin "$PRODUCERS/no_such_plugin.so" --case int32
  # The value checker is found next to the tool by default; a wrong override is a finding.
  FERRY_IT_C_PLUGIN=/nonexistent/libferry_it_c.so expect plugin_no_checker 1 --has "FAIL values: root: cannot load the C checker plugin" -- check --plugin "$C_PLUGIN" --case int32
else
  echo "SKIPPED: plugin cases: $C_PLUGIN was not built (tests/integration/c missing)"
  failed=$((failed + 1))
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
