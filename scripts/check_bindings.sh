#!/usr/bin/env bash
# The binding contract (docs/bindings.md), what of it a grep can check: every
# binding README links the contract, and each binding's source has the
# import entry point, the FULL level and the named opt-out that the
# contract's table spells for it (so the table cannot drift from the code).
# The behaviour itself (validation by default, the same error after a stream
# error, threads, leak report) is held by each binding's own tests.
# Ends with "N passed, N failed".
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT" || exit 1

# has NAME PATTERN PATH...: the fixed string PATTERN occurs under PATH.
has() {
  local name="$1" pattern="$2"; shift 2
  if grep -rqF -- "$pattern" "$@" 2>/dev/null; then pass "$name"; else
    fail "$name: \"$pattern\" not found in $*"; fi
}

for lang in rust go java lua python; do
  has "$lang README links docs/bindings.md" "docs/bindings.md" "bindings/$lang/README.md"
  has "docs/bindings.md has a $lang row" "| $(tr '[:lower:]' '[:upper:]' <<<"${lang:0:1}")${lang:1} |" docs/bindings.md
done

rust=bindings/rust/ferry-arrow/src
has "rust: from_raw(array, &schema)" "pub unsafe fn from_raw(ptr: *mut sys::ArrowDeviceArray, schema: &SchemaView)" "$rust"
has "rust: from_raw_with + Validation::Full" "pub unsafe fn from_raw_with(" "$rust"
has "rust: from_raw_unchecked" "pub unsafe fn from_raw_unchecked(" "$rust"
go=bindings/go/ferry
has "go: ImportDeviceArray(array, schema, opts...)" "func ImportDeviceArray(array unsafe.Pointer, schema unsafe.Pointer, opts ...ImportOptions)" "$go"
has "go: ValidateFull" "ValidateFull" "$go"
has "go: ValidateNone" "ValidateNone" "$go"
java=bindings/java/src/main/java
has "java: importFrom(array, schema)" "importFrom(long deviceArrayAddress, long schemaAddress)" "$java"
has "java: Validation.FULL / NONE" "FULL" "$java/io/github/ferryarrow/ferry/Validation.java"
has "java: Validation.NONE" "NONE" "$java/io/github/ferryarrow/ferry/Validation.java"
has "lua: ferry.import(array, schema, opts)" "function ferry.import(array_in, schema_in, opts)" bindings/lua/ferry
has "lua: validate = \"full\"" 'validate == "full"' bindings/lua/ferry
has "lua: validate = \"none\"" '"none"' bindings/lua/ferry
has "python: from_c(array_address, schema_address)" "def from_c(array_address: int, schema_address: int" bindings/python/src/ferry/_native.pyi
has "python: validate=\"full\"" '"full"' bindings/python/src/ferry
finish
