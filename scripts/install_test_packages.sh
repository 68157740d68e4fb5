#!/usr/bin/env bash
# Installs the Debian packages that only tests and examples need (idempotent): scripts/test.sh
# runs it after scripts/setup.sh, so the first command (setup.sh) does not pull them in.
#   fortunes             ~2.5 MB of English text under /usr/share/games/fortunes (examples/gpt)
#   python3-torchvision  torchvision's models, scripted for the TorchScript examples and tests
set -euo pipefail

TEST_PACKAGES=(fortunes python3-torchvision)

missing=()
for p in "${TEST_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "[test-packages] installing: ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "[test-packages] all present"
fi
