#!/usr/bin/env bash
# Installs tl's build and run dependencies from Debian's packages (idempotent: installs only
# what is missing; one package table per release, Debian 12 and 13, read from /etc/os-release)
# and configures + builds the project into ./build (reused when it is there).
#   scripts/setup.sh                      everything: every tool, test and benchmark
#   scripts/setup.sh tl-launch tl-data    only these targets (and what they need)
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/lib/debian.sh
tl_debian_release setup  # TL_RELEASE: 12 or 13 (scripts/lib/debian.sh: overrides)

# One table per release: what both share, then each release's own lines. The names are the same
# in 12 and 13 today; what they bring differs (libtorch 1.13 / 2.6, Open MPI 4.1 / 5.0).
PACKAGES_SHARED=(
  build-essential cmake ninja-build ccache pkg-config
  libtorch-dev                       # libtorch (C++ API)
  libopenmpi-dev openmpi-bin         # MPI communicator and mpirun
  libboost-fiber-dev libboost-context-dev
  libspdlog-dev libfmt-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev googletest
  zlib1g-dev libjpeg62-turbo-dev
  libcli11-dev                       # command lines of tl-submit, tl-profile, tl-coordinator, tl-data
  libssl-dev                         # libcrypto: SHA-256, HMAC
  libcairo2-dev                      # tl-profile's PNG plots
  dataset-fashion-mnist              # real Fashion-MNIST under /usr/share/datasets/fashion-mnist
  python3 python3-torch              # only for tests that check files against PyTorch itself
  iproute2                           # ip netns: the namespace cluster of the `cluster` tests
)
PACKAGES_12=("${PACKAGES_SHARED[@]}")   # libtorch 1.13, Open MPI 4.1
PACKAGES_13=("${PACKAGES_SHARED[@]}")   # libtorch 2.6, Open MPI 5.0 (libpmix-dev comes with it)
declare -n PACKAGES="PACKAGES_$TL_RELEASE"
tl_install_missing setup "${PACKAGES[@]}"

BUILD_DIR="${TL_BUILD_DIR:-build}"
JOBS="${TL_BUILD_JOBS:-$(nproc)}"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release ${TL_CMAKE_ARGS:-}
if (($#)); then
  echo "[setup] building $*"
  cmake --build "$BUILD_DIR" -j "$JOBS" --target "$@"
else
  cmake --build "$BUILD_DIR" -j "$JOBS"
fi
