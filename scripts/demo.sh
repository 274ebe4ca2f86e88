#!/usr/bin/env bash
# The main job: the polyglot demo (tests/integration/demo/run.sh). Without
# it, `ferry check` on the built-in producer: the C plugin's exports of a few
# cases, on the CPU and on the simulated device, as arrays and streams.
# ./dev.sh demo builds everything first.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
if [ -f "$ROOT/tests/integration/demo/run.sh" ]; then
  exec bash "$ROOT/tests/integration/demo/run.sh" "$@"
fi
ferry="$BUILD/bin/ferry"
plugin="$BUILD/plugins/libferry_it_c.so"
"$ferry" --version
"$ferry" devices
status=0
for c in "int32:length=1000:nulls=7" "utf8:offset=3:nulls=4:device=sim" \
         "struct_int32_utf8:length=100:device=sim" "dict_int32_utf8:length=50"; do
  echo "--- ferry check --plugin libferry_it_c.so --case $c"
  "$ferry" check --plugin "$plugin" --case "$c" || status=1
done
for c in "list_int32:batches=4:device=sim" "float64:batches=3:fail=get_next@2"; do
  echo "--- ferry check --stream --plugin libferry_it_c.so --case $c"
  "$ferry" check --stream --plugin "$plugin" --case "$c" || status=1
done
echo "--- ferry inspect (a producer built on ferry's helpers)"
"$ferry" inspect "$BUILD/test-producers/libgood_ferry_helpers.so:produce" || status=1
exit "$status"
