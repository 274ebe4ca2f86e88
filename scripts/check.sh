#!/usr/bin/env bash
# The quick check (./dev.sh check), for the edit-build-test loop: the build
# (no sanitizer tree), the generated code, the core's unit, ABI and tool
# tests, the tracked-file checks, and one quick pass of every binding: the
# matrix host over the short case list (tests/integration/cases_load_order.txt),
# so each runtime's plugin produces and checks arrays and streams for every
# other runtime. The whole test command is ./dev.sh test.
# Ends with "N passed, N failed" (one per check) and the time taken.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
start=$SECONDS
timed() { # timed NAME COMMAND...: one check, its time printed
  local name="$1" t=$SECONDS; shift
  check "$name" "$@"
  echo "   ($((SECONDS - t)) s)"
}
timed "build (core, tool, hosts, plugins)" bash -c "bash '$ROOT/scripts/build.sh' && bash '$ROOT/scripts/build_plugins.sh'"
timed "generated code fresh" bash "$ROOT/generators/regen.sh" --check
timed "core unit, ABI and tool tests (ctest)" ctest --test-dir "$BUILD" --output-on-failure -j"$(nproc)"
timed "no machine paths" bash "$ROOT/scripts/check_paths.sh"
timed "docs/features.md" bash "$ROOT/scripts/check_features.sh"
timed "every binding, every pair (short case list)" "$BUILD/bin/ferry_it_host" \
  --plugin-dir "$BUILD/plugins" --cases "$ROOT/tests/integration/cases_load_order.txt"
echo "check: $((SECONDS - start)) s"
finish
