#!/usr/bin/env bash
# The whole test suite from a fresh clone: install what is missing, build, run every test.
# Shared data (MIOpen models and perf DBs) is looked up in $TUNECAST_DATA_DIR or ../shared/data;
# tests that need it say "skipped" when it is absent.
#
# Two builds: build/ (Release, GCC, the portable x86-64 build packagers ship, bench included) runs
# everything, the golden predictions at every SIMD level this CPU runs and under qemu-user as CPUs
# without AVX-512 or AVX; build-asan/ (clang, ASan + UBSan, libFuzzer) runs the doctest suite and
# the golden predictions (the same bits from Clang) under the sanitizers and every fuzz target for
# $TUNECAST_FUZZ_SECONDS (default 20) from its seeds (docs/fuzzing.md). Without clang it falls back
# to a gcc ASan + UBSan build of the doctest suite alone. TUNECAST_SKIP_SANITIZE=1 skips it.
set -euo pipefail
cd "$(dirname "$0")/.."
./tools/install-deps.sh
jobs=$(nproc)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"

if [ "${TUNECAST_SKIP_SANITIZE:-0}" != 1 ]; then
  start=$(date +%s)
  if command -v clang++ >/dev/null 2>&1; then
    cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++ \
      -DTUNECAST_FUZZ=ON -DTUNECAST_BUILD_BENCH=OFF -DTUNECAST_FUZZ_SECONDS="${TUNECAST_FUZZ_SECONDS:-20}"
    targets=(tunecast_tests tunecast tunecast_fuzzers tunecast_golden)
  else
    echo "tools/test.sh: clang++ not found: sanitized doctest suite only, no fuzzing"
    cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Release -DTUNECAST_SANITIZE=ON -DTUNECAST_BUILD_BENCH=OFF
    targets=(tunecast_tests tunecast tunecast_golden)
  fi
  # Tests and fuzzers only: the generated-predictor, install and example tests run in build/.
  cmake --build build-asan -j"$jobs" --target "${targets[@]}"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j"$jobs" -R '^(unit|fuzz_.*|golden_predictions)$'
  echo "tools/test.sh: sanitizer build and fuzzing took $(( $(date +%s) - start )) s"
fi
