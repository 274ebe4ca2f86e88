#!/usr/bin/env bash
# Builds every runtime's test plugin into $FERRY_BUILD_DIR/plugins with the
# builder core/harness/runtimes.def names for it: "cmake" plugins come with
# scripts/build.sh (checked here), the others have their binding's script
# (cargo, go build, Maven). Run after scripts/build.sh.
#   build_plugins.sh [RUNTIME...]   (default: every runtime of the list)
# Exits non-zero when a plugin does not build; prints each builder's log then.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
LOGS="$BUILD/plugin-logs"
mkdir -p "$LOGS"
status=0
for name in $(ferry_runtimes_or "$@"); do
  builder="$(ferry_runtime_builder "$name")"
  plugin="$BUILD/plugins/libferry_it_$name.so"
  if [ -z "$builder" ]; then
    echo "FAILED: $name is not a runtime of core/harness/runtimes.def" >&2
    status=1
    continue
  fi
  if [ "$builder" != cmake ]; then
    if [ ! -f "$ROOT/$builder" ]; then
      echo "FAILED: the $name plugin's builder $builder does not exist" >&2
      status=1
      continue
    fi
    if ! bash "$ROOT/$builder" >"$LOGS/$name.log" 2>&1; then
      tail -n 40 "$LOGS/$name.log"
      echo "FAILED: the $name plugin does not build ($builder, log $LOGS/$name.log)" >&2
      status=1
      continue
    fi
  fi
  need_file "$plugin" "the $name plugin" || status=1
done
exit "$status"
