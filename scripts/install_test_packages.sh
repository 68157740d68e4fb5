#!/usr/bin/env bash
# Installs the Debian packages that only tests and examples need (idempotent): scripts/test.sh
# runs it after scripts/setup.sh, so the first command (setup.sh) does not pull them in.
#   fortunes             ~2.5 MB of English text under /usr/share/games/fortunes (examples/gpt)
#   python3-torchvision  torchvision's models, scripted for the TorchScript examples and tests
#   file                 CPack's .deb generator (shlibdeps) in test_install
set -euo pipefail

cd "$(dirname "$0")/.."
source scripts/lib/debian.sh
tl_debian_release test-packages

# One table per release (the same names in 12 and 13).
TEST_PACKAGES_12=(fortunes python3-torchvision file)
TEST_PACKAGES_13=(fortunes python3-torchvision file)
declare -n TEST_PACKAGES="TEST_PACKAGES_$TL_RELEASE"
tl_install_missing test-packages "${TEST_PACKAGES[@]}"
