#!/usr/bin/env bash
# Dependencies of the cross-language harness (tests/integration): a JDK for
# the JVM host, and gnuplot for the benchmark's plot (docs/bench/handoff.png).
# Idempotent and quiet when everything is present; runs as root on Debian 12.
set -euo pipefail
missing=()
command -v javac >/dev/null || missing+=(openjdk-17-jdk-headless)
command -v gnuplot >/dev/null || missing+=(gnuplot-nox)
if [ "${#missing[@]}" -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi
