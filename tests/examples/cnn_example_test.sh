#!/usr/bin/env bash
# examples/cnn as documented, shortened: tl's cnn exported with tl's initial weights trains as a
# TorchScript file to the built-in cnn's params_sha256 (run.sh exits 1 when they differ).
# Usage: cnn_example_test.sh TOOL_DIR SOURCE_DIR. Exit 77 (skipped) where Debian's python3 has
# no torch.
set -euo pipefail
tools="$1"
src="$2"
work="${TL_TEST_TMP:-/tmp}/examples_cnn"
rm -rf "$work" && mkdir -p "$work"
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  echo "skipped: /usr/bin/python3 cannot import torch"; exit 77
fi
STEPS=6 EVAL=0 TL_LAUNCH="$tools/tl-launch" "$src/examples/cnn/run.sh" "$work" | tee "$work/run.txt"
grep -q "^same bits$" "$work/run.txt"
