#!/usr/bin/env bash
# Runs the Python interchange benchmark (bench/interchange.py: the device
# array capsule import against pyarrow, from_dlpack and __dlpack__ against
# NumPy, then the protocol entry, capsule export and stream producer against
# nanoarrow and pyarrow as medians of per-round ratios, all measured in one
# run) in the virtual environment of env.sh,
# pinned to one core when taskset exists. Figures, not a test.
# Usage: bindings/python/bench.sh [--quick]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=env.sh
source "$HERE/env.sh"
ferry_python_venv
"$PY" -c "import ferry" 2>/dev/null || ferry_python_install
pin=()
command -v taskset >/dev/null && pin=(taskset -c 1)
# The checkout's path is machine-specific: it is printed as <checkout>.
echo "python $("$PY" -c 'import platform; print(platform.python_version())'), ferry from $("$PY" -c 'import ferry; print(ferry.library_info().path)' | sed "s|^$FERRY_ROOT|<checkout>|")"
"${pin[@]}" "$PY" "$HERE/bench/interchange.py" "$@"
