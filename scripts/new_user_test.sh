#!/usr/bin/env bash
# The new-user tests (issue 16), one step of the test command: for C and for
# every runtime of core/harness/runtimes.def, examples/<lang>/test.sh copies
# its example project outside the tree and builds and runs it depending on
# ferry only the way that language's README says. A missing test.sh fails,
# loudly. Each ends with "N passed, N failed"; this script adds them up and
# prints each one's time.
#   scripts/new_user_test.sh [LANG...]   (default: c and every runtime)
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
LOGS="$BUILD/new-user-logs"
mkdir -p "$LOGS"

for lang in $(ferry_runtimes_or "$@"); do
  script="$ROOT/examples/$lang/test.sh"
  if [ ! -f "$script" ]; then
    fail "new user, $lang: $script does not exist"
    continue
  fi
  start=$SECONDS
  log="$LOGS/$lang.log"
  bash "$script" >"$log" 2>&1
  rc=$?
  if ! add_counts "$log"; then
    tail -n 30 "$log"
    echo "FAILED: new user, $lang: no \"N passed, N failed\" line (exit code $rc, log $log)"
  elif [ "$rc" -ne 0 ]; then
    grep -E 'FAIL' "$log" | head -n 20
    fail "new user, $lang: exit code $rc (log $log)"
  fi
  echo "== $lang: $(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1) ($((SECONDS - start)) s, log $log)"
done
finish
