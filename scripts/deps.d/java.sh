#!/usr/bin/env bash
# What the Java binding needs on Debian 12: a JDK 17 with headers (javac,
# jni.h, libjvm.so), Maven and SWIG 4.1. Maven fetches the Java dependencies
# (JUnit 5, Arrow Java) from Maven Central into ~/.m2 on first use.
# Idempotent; prints nothing when everything is present.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
apt_install "Java binding" openjdk-17-jdk-headless maven swig
