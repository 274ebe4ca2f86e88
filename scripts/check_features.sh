#!/usr/bin/env bash
# Keeps docs/features.md true (a step of the test command). The table has one
# row per capability (the ids below, in this order) and one column per
# binding; a cell is "yes: <API>" or "no: <reason>". Each binding's features
# test file names one test per capability it can do (feature_<id>, in the
# language's own form). This fails when:
#   - the rows are not exactly the ids below, in order, or a column is missing;
#   - a cell is neither "yes: ..." nor "no: ..." with something after the colon
#     (a gap needs its reason, a yes its API);
#   - a yes cell has no feature_<id> test in the binding's file, or a no cell
#     has one, or the file has a feature test for an id that is no capability.
# The tests themselves run in each binding's own test step. Then the same
# checks run on broken copies of the table and the test files, and must fail
# on each (the checker's own self-test). A binding named
# on the table's "check_features: pending" line whose features test file does
# not exist yet is reported as NOT YET CHECKED (its helper is writing it);
# once the file exists it is checked like every other.
# Ends with "N passed, N failed".
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
TABLE="$ROOT/docs/features.md"
IDS=(export_array import_array export_stream import_stream export_c_stream import_c_stream to_host copy_to_device
     move_to_device consumer_stream_array consumer_stream_batch wrap_native_stream
     wrap_native_event dlpack_export dlpack_import arrow_array_interop arrow_stream_bridge
     validate devices export_async import_async)
BINDINGS=(c rust go java lua python)

# The features test file of a binding ("" when there is none).
test_file() {
  case "$1" in
    c) echo "$ROOT/core/test/features_test.c" ;;
    rust) echo "$ROOT/bindings/rust/ferry-arrow/tests/features.rs" ;;
    go) echo "$ROOT/bindings/go/ferry/features_test.go" ;;
    java) find "$ROOT/bindings/java/src/test/java" -name FeaturesTest.java 2>/dev/null | head -n 1 ;;
    lua) echo "$ROOT/bindings/lua/spec/features_spec.lua" ;;
    python) echo "$ROOT/bindings/python/tests/test_features.py" ;;
  esac
}

# A test of capability ID in that language (an extended regex; ID may be
# [a-z_]+ to list them all).
test_pattern() {
  case "$1" in
    c) echo "FERRY_TEST\\(feature_($2)\\)" ;;
    rust) echo "fn feature_($2)\\(" ;;
    go) echo "func TestFeature_($2)\\(" ;;
    java) echo "void feature_($2)\\(" ;;
    lua) echo "it\\([\"']feature_($2)[\"']" ;;
    python) echo "def test_feature_($2)\\(" ;;
  esac
}

trim() { local s="$1"; s="${s#"${s%%[![:space:]]*}"}"; echo "${s%"${s##*[![:space:]]}"}"; }

need_file "$TABLE" "the capability table" || { fail "docs/features.md exists"; finish; exit 1; }
pending=" $(sed -n 's/.*check_features: pending \([a-z ]*\) -->.*/\1/p' "$TABLE") "

# ---- the table ------------------------------------------------------------------
columns=() # binding of each cell column, from the header
rows=()    # ids in table order
declare -A cell
while IFS= read -r line; do
  [[ "$line" == "|"* ]] || continue
  IFS='|' read -ra fields <<<"$line"
  first="$(trim "${fields[1]}")"
  if [ "$first" = id ]; then
    for ((i = 2; i < ${#fields[@]}; i++)); do
      columns+=("$(trim "${fields[i]}" | tr '[:upper:]' '[:lower:]')")
    done
    continue
  fi
  [ "${#columns[@]}" -gt 0 ] || continue # tables before the capability table
  [[ "$first" =~ ^-+$ ]] && continue
  [[ "$first" =~ ^[a-z_]+$ ]] || break # the end of the table
  rows+=("$first")
  for ((i = 2; i < ${#fields[@]} && i - 2 < ${#columns[@]}; i++)); do
    cell["$first/${columns[i - 2]}"]="$(trim "${fields[i]}")"
  done
done <"$TABLE"

if [ "${columns[*]}" = "${BINDINGS[*]}" ]; then
  pass "the columns are ${BINDINGS[*]}"
else
  fail "the table's columns are \"${columns[*]}\", expected \"${BINDINGS[*]}\""
fi
if [ "${rows[*]}" = "${IDS[*]}" ]; then
  pass "the rows are the ${#IDS[@]} capabilities, in order"
else
  fail "the table's rows are \"${rows[*]}\", expected \"${IDS[*]}\""
fi

# ---- each binding's column against its tests --------------------------------------
for binding in "${BINDINGS[@]}"; do
  file="$(test_file "$binding")"
  if [ -z "$file" ] || [ ! -f "$file" ]; then
    if [[ "$pending" == *" $binding "* ]]; then
      echo "NOT YET CHECKED: $binding: its features test file ${file:-(none)} is not written yet (pending in docs/features.md)"
    else
      fail "$binding: the features test file ${file:-(none)} does not exist"
    fi
    continue
  fi
  problems=()
  yes=0
  for id in "${IDS[@]}"; do
    value="${cell["$id/$binding"]:-}"
    has_test=0
    grep -E "$(test_pattern "$binding" "$id")" "$file" >/dev/null && has_test=1
    if [[ "$value" =~ ^yes:[[:space:]]*[^[:space:]] ]]; then
      yes=$((yes + 1))
      [ "$has_test" -eq 1 ] || problems+=("$id is yes but $file has no feature_$id test")
    elif [[ "$value" =~ ^no:[[:space:]]*[^[:space:]] ]]; then
      [ "$has_test" -eq 0 ] || problems+=("$id is no but $file has a feature_$id test")
    else
      problems+=("$id: the cell \"$value\" is neither \"yes: <API>\" nor \"no: <reason>\"")
    fi
  done
  # Tests for ids that are no capability (a typo would pass unnoticed).
  while read -r found; do
    [ -z "$found" ] && continue
    [[ " ${IDS[*]} " == *" $found "* ]] || problems+=("$file tests feature_$found, which is no capability of the table")
  done < <(grep -oE "$(test_pattern "$binding" "[a-z_]+")" "$file" | sed -E 's/.*[Ff]eature_([a-z_]+).*/\1/')
  if [ "${#problems[@]}" -eq 0 ]; then
    pass "$binding: $yes yes cells, each with its test; $(( ${#IDS[@]} - yes )) no cells with a reason and no test"
  else
    fail "$binding: ${problems[0]}"
    for p in "${problems[@]:1}"; do echo "    also: $p"; done
  fi
done

# ---- the checker's self-test: each breakage below must make it fail -------------------
if [ -z "${FERRY_FEATURES_SELFTEST:-}" ]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  # broken NAME SED_ON_TABLE [FILE SED_ON_FILE]: a copy with one breakage.
  broken() {
    local name="$1" table_edit="$2" file="${3:-}" file_edit="${4:-}" copy="$tmp/$1"
    mkdir -p "$copy/docs"
    sed -E "$table_edit" "$TABLE" >"$copy/docs/features.md"
    local b f
    for b in "${BINDINGS[@]}"; do
      f="$(test_file "$b")"
      [ -n "$f" ] && [ -f "$f" ] || continue
      mkdir -p "$copy/$(dirname "${f#"$ROOT"/}")"
      cp "$f" "$copy/${f#"$ROOT"/}"
    done
    [ -n "$file" ] && sed -i -E "$file_edit" "$copy/$file"
    if FERRY_FEATURES_SELFTEST=1 FERRY_ROOT="$copy" bash "${BASH_SOURCE[0]}" >"$copy/out" 2>&1; then
      fail "self-test: the check passed a table with $name"
    else
      pass "self-test: $name fails the check"
    fi
  }
  broken "a yes cell whose test is missing" 's/^/&/' \
    bindings/python/tests/test_features.py 's/def test_feature_validate\(/def test_validate(/'
  broken "a no cell that has a test" 's/^(\| dlpack_import \|.*\| )yes: `ferry.from_dlpack\(x\)` \|$/\1no: pretend \|/'
  broken "a no cell without a reason" 's/no: C has no Arrow library of its own: ferry.s structs[^|]*/no: /'
  broken "a test of no capability" 's/^/&/' \
    bindings/rust/ferry-arrow/tests/features.rs 's/fn feature_devices\(/fn feature_device\(/'
  broken "rows out of order" '/^\| to_host \|/{h;d};/^\| copy_to_device \|/G'
fi
finish
