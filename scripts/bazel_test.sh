#!/usr/bin/env bash
# Builds and tests the core with Bazel (offline, Debian's bazel-bootstrap),
# then builds and tests the consumer workspace tests/bazel_consumer, which
# depends on this repository through local_repository.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"
bazel test --noshow_progress //... 2>&1 | grep -vE '^(Loading|Analyzing|INFO: (From|Found|Analyzed|Elapsed|[0-9]+ processes))' || { bazel shutdown; exit 1; }
bazel shutdown
cd "$ROOT/tests/bazel_consumer"
bazel test --noshow_progress //... 2>&1 | grep -vE '^(Loading|Analyzing|INFO: (From|Found|Analyzed|Elapsed|[0-9]+ processes))' || { bazel shutdown; exit 1; }
bazel run --noshow_progress //app:handoff 2>/dev/null
bazel shutdown
