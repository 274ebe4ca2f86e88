# scripts/lib.sh: what the repository's shell scripts share. Source it:
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"       (from scripts/)
# It sets ROOT and BUILD (exported as FERRY_ROOT and FERRY_BUILD_DIR), PLUGINS
# and SAN (the plugin folder and the sanitizer tree under BUILD), and provides:
#   counting    pass / fail / skip MESSAGE, check NAME COMMAND..., add_counts LOG,
#               finish (prints "N passed, N failed[, N skipped]", returns the status)
#   runtimes    ferry_runtimes, ferry_runtime_builder NAME, ferry_runtime_asan NAME
#               (read from core/harness/runtimes.def, the one list of runtimes)
#   building    cmake_generator (Ninja when present)
#   packages    apt_install WHY PKG... (Debian packages not yet installed, quietly
#               when all are; scripts/deps.sh and scripts/deps.d/)
#   other       in_ci, need_file PATH WHAT (a missing build output fails loudly),
#               selected NAME (NAME is one of the script's arguments, or there are none)
# Scripts only orchestrate: every C artefact is a CMake target (CMakeLists.txt).

ROOT="${FERRY_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
BUILD="${FERRY_BUILD_DIR:-$ROOT/build}"
export FERRY_ROOT="$ROOT" FERRY_BUILD_DIR="$BUILD"
# The runtime plugins (scripts/build_plugins.sh) and the sanitizer tree
# (scripts/build.sh --sanitize address,undefined) that the suites load.
PLUGINS="$BUILD/plugins"
SAN="$BUILD/san-address-undefined"

# ---- counting -------------------------------------------------------------------
FERRY_PASSED=0
FERRY_FAILED=0
FERRY_SKIPPED=0

pass() { FERRY_PASSED=$((FERRY_PASSED + 1)); echo "ok: $*"; }
fail() { FERRY_FAILED=$((FERRY_FAILED + 1)); echo "FAILED: $*"; }
skip() { FERRY_SKIPPED=$((FERRY_SKIPPED + 1)); echo "SKIPPED: $*"; }

# check NAME COMMAND...: one check, passing when COMMAND succeeds; its output
# is shown (last 40 lines) only when it fails.
check() {
  local name="$1"; shift
  local log
  log="$(mktemp)"
  if "$@" >"$log" 2>&1; then
    pass "$name"
  else
    fail "$name"; sed 's/^/    | /' "$log" | tail -n 40
  fi
  rm -f "$log"
}

# add_counts LOG: adds the last "N passed, N failed" line of LOG to the
# counts; a log without one is one failure. Returns 1 when nothing was added.
add_counts() {
  local line p f
  line="$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$1" | tail -n 1)"
  if [ -z "$line" ]; then
    FERRY_FAILED=$((FERRY_FAILED + 1))
    return 1
  fi
  read -r p _ f _ <<<"$line"
  FERRY_PASSED=$((FERRY_PASSED + p))
  FERRY_FAILED=$((FERRY_FAILED + ${f%,}))
  return 0
}

# finish: the closing line of a test script; succeeds when nothing failed
# and something passed.
finish() {
  if [ "$FERRY_SKIPPED" -gt 0 ]; then
    echo "$FERRY_PASSED passed, $FERRY_FAILED failed, $FERRY_SKIPPED skipped"
  else
    echo "$FERRY_PASSED passed, $FERRY_FAILED failed"
  fi
  [ "$FERRY_FAILED" -eq 0 ] && [ "$FERRY_PASSED" -gt 0 ]
}

# ---- the runtimes (core/harness/runtimes.def) -------------------------------------
FERRY_RUNTIMES_DEF="$ROOT/core/harness/runtimes.def"

# Prints "NAME BUILDER TRAITS ASAN" per runtime, in load order (ASAN: "yes"
# when the runtime is loaded under AddressSanitizer).
ferry_runtime_table() {
  sed -n 's/^FERRY_IT_RUNTIME(\([a-z0-9_]*\), *"\([^"]*\)", *\([^,]*\), *\(.*\))$/\1\t\2\t\3\t\4/p' \
    "$FERRY_RUNTIMES_DEF" |
    awk -F'\t' '{ traits = $3; gsub(/ /, "", traits); print $1, $2, traits, ($4 == "NULL" ? "yes" : "no") }'
}

# The runtime names in load order, space-separated.
ferry_runtimes() { ferry_runtime_table | awk '{print $1}' | paste -sd' ' -; }

# ferry_runtimes_or NAME...: the NAMEs given, or every runtime without one
# (the default of the scripts that take runtimes as arguments).
ferry_runtimes_or() { if [ "$#" -gt 0 ]; then echo "$*"; else ferry_runtimes; fi; }

# What builds NAME's plugin: "cmake" or a script relative to the root.
ferry_runtime_builder() { ferry_runtime_table | awk -v n="$1" '$1 == n {print $2}'; }

# Succeeds when NAME is loaded under AddressSanitizer.
ferry_runtime_asan() { [ "$(ferry_runtime_table | awk -v n="$1" '$1 == n {print $4}')" = yes ]; }

# ---- Debian packages ------------------------------------------------------------------

# apt_install WHY PKG...: installs the packages that are not installed yet
# (apt-get update only when the first attempt fails); prints nothing when all
# are there. WHY names the component in the one line printed otherwise.
apt_install() {
  local why="$1"; shift
  local p missing=()
  for p in "$@"; do
    [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" == *"install ok installed"* ]] ||
      missing+=("$p")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  echo "deps: installing ${missing[*]} ($why)"
  local sudo="" log=/tmp/ferry-apt.log
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  if ! $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >"$log" 2>&1; then
    $sudo apt-get update -qq >/dev/null 2>&1
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >"$log" 2>&1 ||
      { cat "$log"; return 1; }
  fi
}

# ---- building and other helpers -----------------------------------------------------
cmake_generator() { command -v ninja >/dev/null && echo "-G Ninja"; }

in_ci() { [ -n "${CI:-}" ]; }

# selected NAME: succeeds when the array SELECTION (the script's arguments:
# the steps or benchmarks asked for) is empty or holds NAME.
SELECTION=()
selected() {
  [ "${#SELECTION[@]}" -eq 0 ] && return 0
  local s; for s in "${SELECTION[@]}"; do [ "$s" = "$1" ] && return 0; done
  return 1
}

# need_file PATH WHAT: fails loudly when a build output is missing.
need_file() {
  if [ ! -e "$1" ]; then
    echo "FAILED: $2: $1 is missing (scripts/build.sh builds it)" >&2
    return 1
  fi
}

# The self-tests' misbehaving plugin (tests/integration/host/selftest), which
# wraps the C plugin: sets $bad to it and exports the wrapped plugin's path;
# ends the self-test with a failure when it is not built.
need_misbehaving_plugin() {
  bad="$BUILD/it/libferry_it_misbehaving.so"
  export FERRY_IT_WRAPPED_PLUGIN="$BUILD/plugins/libferry_it_c.so"
  need_file "$bad" "the self-test plugin" || { fail "self-test plugin"; finish; exit 1; }
}

# expect_finding MODE PATTERN FINDING WHAT CMD...: with the misbehaving plugin
# breaking the rule MODE, CMD must exit non-zero and print a line matching
# PATTERN (grep -E) that contains FINDING; WHAT names that line in the report
# of a miss ("a FAIL line", "a failure").
expect_finding() {
  local mode="$1" pattern="$2" finding="$3" what="$4" out rc
  shift 4
  out="$(FERRY_IT_MISBEHAVE="$mode" "$@" 2>&1)"
  rc=$?
  # grep reads all of its input (no -q in a pipeline: pipefail and SIGPIPE).
  if [ "$rc" -ne 0 ] && grep -E "$pattern" <<<"$out" | grep -F "$finding" >/dev/null; then
    pass "self-test $mode"
  else
    fail "self-test $mode"
    echo "FAIL self-test $mode: expected $what with \"$finding\" (exit $rc); got:"
    grep -E '^FAIL|passed' <<<"$out" | head -n 5 | sed 's/^/   /'
  fi
}
