#!/usr/bin/env bash
# Fails when a tracked file names a path of some machine (a home or work
# directory: the work, home, root or Users folders at the top of a tree):
# documentation and code refer to files by their place in the repository,
# never by where one checkout happened to live. Ends with "N passed, N failed".
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT" || exit 1
# The pattern is assembled so that this file does not match itself.
pattern='(^|[^A-Za-z0-9_.~$])/(wo''rk|ho''me/[A-Za-z]|ro''ot|Us''ers)/'
hits="$(git ls-files -z | xargs -0 grep -I -n -E "$pattern" -- 2>/dev/null)"
if [ -n "$hits" ]; then
  echo "$hits" | head -n 40
  fail "tracked files name machine paths (above): refer to files relative to the repository"
else
  pass "no tracked file names a machine path"
fi
finish
