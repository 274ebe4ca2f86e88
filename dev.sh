#!/usr/bin/env bash
# ferry's developer entry point. The README's two commands are
#   ./dev.sh demo   (the main job)
#   ./dev.sh test   (every test)
# Both install what is missing (quietly when present) and build first.
# Other subcommands: check (the quick check, under 5 minutes), deps, build,
# bench, fuzz, gpu-test, gpu-bundle, regen, release (every package a release
# uploads, into build/dist/, each checked as its registry would), clean.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export FERRY_ROOT="$ROOT"
export FERRY_BUILD_DIR="${FERRY_BUILD_DIR:-$ROOT/build}"

usage() {
  sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
}

# Every C artefact (CMake), then every runtime's plugin.
build_all() { bash "$ROOT/scripts/build.sh" && bash "$ROOT/scripts/build_plugins.sh"; }

cmd="${1:-}"
[ -n "$cmd" ] || usage
shift || true

case "$cmd" in
  deps) bash "$ROOT/scripts/deps.sh" "${1:-all}" ;;
  build) bash "$ROOT/scripts/deps.sh" core && bash "$ROOT/scripts/build.sh" "$@" ;;
  check) bash "$ROOT/scripts/deps.sh" all && bash "$ROOT/scripts/check.sh" "$@" ;;
  # scripts/test.sh's first step builds everything (both trees and every plugin).
  test) bash "$ROOT/scripts/deps.sh" all && bash "$ROOT/scripts/test.sh" "$@" ;;
  # A plugin that does not build leaves its runtime out of the demo (DEGRADED).
  demo) bash "$ROOT/scripts/deps.sh" all && bash "$ROOT/scripts/build.sh" &&
    { bash "$ROOT/scripts/build_plugins.sh" || echo "demo: some plugins did not build (above)"; } &&
    bash "$ROOT/scripts/demo.sh" "$@" ;;
  bench) bash "$ROOT/scripts/deps.sh" all && build_all && bash "$ROOT/scripts/bench.sh" "$@" ;;
  fuzz) bash "$ROOT/scripts/deps.sh" core && bash "$ROOT/scripts/fuzz.sh" "$@" ;;
  gpu-test) bash "$ROOT/scripts/deps.sh" all && bash "$ROOT/scripts/build.sh" && bash "$ROOT/scripts/gpu_test.sh" "$@" ;;
  # One archive under build/ to run the GPU checks on a GPU machine (run.sh).
  gpu-bundle) bash "$ROOT/scripts/deps.sh" all && build_all && bash "$ROOT/scripts/gpu_bundle.sh" "$@" ;;
  regen) bash "$ROOT/generators/regen.sh" "$@" ;;
  # The jar carries the JNI library the build makes (scripts/release.sh).
  release) bash "$ROOT/scripts/deps.sh" all && bash "$ROOT/scripts/build.sh" &&
    bash "$ROOT/scripts/release.sh" "$@" ;;
  clean) rm -rf "$FERRY_BUILD_DIR" ;;
  *) usage ;;
esac
