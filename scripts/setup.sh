#!/usr/bin/env bash
# Installs tl's build and run dependencies from Debian's packages (idempotent: installs only
# what is missing) and configures + builds the project into ./build (reused when it is there).
#   scripts/setup.sh                      everything: every tool, test and benchmark
#   scripts/setup.sh tl-launch tl-data    only these targets (and what they need)
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config
  libtorch-dev                       # libtorch 1.13 (C++ API)
  libopenmpi-dev openmpi-bin         # MPI communicator and mpirun
  libboost-fiber-dev libboost-context-dev
  libspdlog-dev libfmt-dev nlohmann-json3-dev
  libgtest-dev googletest
  zlib1g-dev libjpeg62-turbo-dev
  libcli11-dev                       # command lines of tl-submit, tl-profile, tl-coordinator, tl-data
  libssl-dev                         # libcrypto: SHA-256, HMAC
  libcairo2-dev                      # tl-profile's PNG plots
  dataset-fashion-mnist              # real Fashion-MNIST under /usr/share/datasets/fashion-mnist
  python3 python3-torch              # only for tests that check files against PyTorch itself
  iproute2                           # ip netns: the namespace cluster of the `cluster` tests
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "[setup] installing: ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "[setup] all Debian packages present"
fi

BUILD_DIR="${TL_BUILD_DIR:-build}"
JOBS="${TL_BUILD_JOBS:-$(nproc)}"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release ${TL_CMAKE_ARGS:-}
if (($#)); then
  echo "[setup] building $*"
  cmake --build "$BUILD_DIR" -j "$JOBS" --target "$@"
else
  cmake --build "$BUILD_DIR" -j "$JOBS"
fi
