#!/usr/bin/env bash
# Staleness check of the Go binding's generated files (see gen.sh --check).
exec bash "$(dirname "${BASH_SOURCE[0]}")/gen.sh" --check
