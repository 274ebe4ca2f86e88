#!/usr/bin/env bash
# Fails when the committed SWIG output is stale (see gen.sh).
exec bash "$(dirname "${BASH_SOURCE[0]}")/gen.sh" --check
