#!/usr/bin/env bash
# What scripts/gpu_bundle.sh needs beyond the build: patchelf (it makes every
# RUNPATH of the bundle $ORIGIN-relative). jlink comes with the JDK
# (scripts/deps.d/java.sh), strip and objdump with binutils. Idempotent and
# quiet when present.
set -euo pipefail
command -v patchelf >/dev/null 2>&1 && exit 0
echo "deps: installing patchelf (for ./dev.sh gpu-bundle)"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get install -y -qq patchelf >/tmp/ferry-apt.log 2>&1 ||
  { $SUDO apt-get update -qq >/dev/null 2>&1 && $SUDO apt-get install -y -qq patchelf >/tmp/ferry-apt.log 2>&1; } ||
  { cat /tmp/ferry-apt.log; echo "deps: cannot install patchelf" >&2; exit 1; }
