#!/usr/bin/env bash
# Builds every runtime's test plugin that is missing from $FERRY_BUILD_DIR/plugins
# (C always comes with the core build; Rust, Go, Java and Lua with their
# bindings' plugin build scripts). Prints the runtimes it could provide.
#   build_plugins.sh [RUNTIME...]   (default: c and every binding present)
#   build_plugins.sh --list         prints that default list and builds nothing
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="${FERRY_ROOT:-$(cd "$HERE/../.." && pwd)}"
BUILD="${FERRY_BUILD_DIR:-$ROOT/build}"
export FERRY_ROOT="$ROOT" FERRY_BUILD_DIR="$BUILD"
PLUGINS="$BUILD/plugins"
LOGS="$BUILD/it-logs"
mkdir -p "$LOGS"

# The command that builds (and installs) a runtime's plugin, or nothing.
plugin_builder() {
  local lang="$1" dir="$ROOT/bindings/$1"
  [ -d "$dir" ] || return 0
  if [ -f "$dir/build_plugin.sh" ]; then echo "bash $dir/build_plugin.sh"; return; fi
  case "$lang" in
    lua) [ -f "$dir/build.sh" ] && echo "bash $dir/build.sh plugin" ;;
  esac
}

default_runtimes() {
  local list=(c) lang
  for lang in rust go java lua; do
    [ -n "$(plugin_builder "$lang")" ] && list+=("$lang")
  done
  echo "${list[*]}"
}
if [ "${1:-}" = --list ]; then default_runtimes; exit 0; fi

runtimes=("$@")
# shellcheck disable=SC2207
[ "${#runtimes[@]}" -eq 0 ] && runtimes=($(default_runtimes))
bash "$ROOT/scripts/build.sh" || exit 1
built=()
for lang in "${runtimes[@]}"; do
  if [ "$lang" != c ] && [ ! -f "$PLUGINS/libferry_it_$lang.so" ]; then
    builder="$(plugin_builder "$lang")"
    if [ -z "$builder" ]; then
      echo "runtime $lang: bindings/$lang has no plugin build script" >&2
      continue
    fi
    echo "building the $lang plugin: $builder (log $LOGS/build-$lang.log)"
    $builder >"$LOGS/build-$lang.log" 2>&1 || { echo "  failed:"; tail -n 30 "$LOGS/build-$lang.log"; }
  fi
  [ -f "$PLUGINS/libferry_it_$lang.so" ] && built+=("$lang")
done
echo "plugins available: ${built[*]}"
