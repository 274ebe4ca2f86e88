#!/usr/bin/env bash
# The polyglot demo (the README's first command, via scripts/demo.sh): runs
# ferry_it_demo over every runtime whose plugin is built (./dev.sh demo builds
# them all first). Missing runtimes are reported as DEGRADED; C is always there.
#   demo/run.sh [--rows N]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/../../../scripts/lib.sh"
need_file "$BUILD/bin/ferry_it_demo" "the demo"
"$BUILD/bin/ferry" devices || true
echo
exec "$BUILD/bin/ferry_it_demo" --plugin-dir "$BUILD/plugins" "$@"
