#!/usr/bin/env bash
# Sets everything up, builds, and runs the whole test suite (unit and mpirun tests).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/install_test_packages.sh  # packages only tests and examples use
ctest --test-dir "${TL_BUILD_DIR:-build}" --output-on-failure -j "${TL_TEST_JOBS:-2}" "$@"
