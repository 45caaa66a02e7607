#!/usr/bin/env bash
# The whole test suite from a fresh clone: install what is missing, build, run every test.
# Shared data (MIOpen models and perf DBs) is looked up in $TUNECAST_DATA_DIR or ../shared/data;
# tests that need it say "skipped" when it is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
./tools/install-deps.sh
jobs=$(nproc)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"
