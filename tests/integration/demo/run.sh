#!/usr/bin/env bash
# The polyglot demo (the README's first command, via scripts/demo.sh): builds
# what is missing, then runs ferry_it_demo over every runtime whose plugin is
# built. Missing runtimes are reported as DEGRADED; C is always there.
#   demo/run.sh [--rows N]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="${FERRY_ROOT:-$(cd "$HERE/../../.." && pwd)}"
BUILD="${FERRY_BUILD_DIR:-$ROOT/build}"
export FERRY_ROOT="$ROOT" FERRY_BUILD_DIR="$BUILD"
# The core, then every runtime's plugin that is missing (a fresh machine has
# none), so the demo crosses every runtime the repository builds.
bash "$ROOT/tests/integration/build_plugins.sh"
bash "$ROOT/tests/integration/build.sh" demo
"$BUILD/bin/ferry" devices || true
echo
exec "$BUILD/bin/ferry_it_demo" --plugin-dir "$BUILD/plugins" "$@"
