#!/usr/bin/env bash
# What the Java binding needs on Debian 12: a JDK 17 with headers (javac,
# jni.h, libjvm.so), Maven and SWIG 4.1. Maven fetches the Java dependencies
# (JUnit 5, Arrow Java) from Maven Central into ~/.m2 on first use.
# Idempotent; prints nothing when everything is present.
set -euo pipefail
pkgs=(openjdk-17-jdk-headless maven swig)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ "${#missing[@]}" -eq 0 ] && exit 0
echo "deps: installing ${missing[*]} (Java binding)"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
if ! $SUDO apt-get install -y -qq "${missing[@]}" >/tmp/ferry-apt-java.log 2>&1; then
  $SUDO apt-get update -qq >/dev/null 2>&1
  $SUDO apt-get install -y -qq "${missing[@]}" >/tmp/ferry-apt-java.log 2>&1 ||
    { cat /tmp/ferry-apt-java.log; exit 1; }
fi
