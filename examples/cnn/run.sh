#!/usr/bin/env bash
# tl's built-in cnn as your own model: exported from its PyTorch definition with tl's initial
# weights, trained by tl as a TorchScript file, to the same bits as `--model cnn`.
#   examples/cnn/run.sh [OUT]        (OUT defaults to out/cnn; run from anywhere)
# 1. tl-launch --model cnn --steps 0 --save-model: tl's initial weights -> OUT/init.pt
# 2. export.py: bench/reference/ddp_models.py's SmallCnn with those weights, scripted -> OUT/cnn.pt
# 3. the same job twice, 4 ESTs on 2 processes: --model cnn, then --model-file OUT/cnn.pt
# 4. both params_sha256 printed; exit 1 if they differ
# Needs python3-torch (python is used only for step 2) and a built tree (scripts/setup.sh).
# STEPS (200), PROCESSES (2), DATA_DIR (Fashion-MNIST, Debian's by default), EVAL (1: test
# accuracy at the end; 0: none) and TL_LAUNCH (the tl-launch binary) override the defaults.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/out/cnn}"
steps="${STEPS:-200}"
processes="${PROCESSES:-2}"
launch="${TL_LAUNCH:-$root/build/launcher/tl-launch}"
data=()
if [ -n "${DATA_DIR:-}" ]; then data=(--data-dir "$DATA_DIR"); fi
mpirun_flags=(--oversubscribe)
if [ "$(id -u)" = 0 ]; then mpirun_flags+=(--allow-run-as-root); fi
mkdir -p "$out"
rm -rf "$out/init" "$out/builtin" "$out/scripted"

"$launch" --model cnn "${data[@]}" --steps 0 --save-model "$out/init.pt" --output-dir "$out/init" \
    > "$out/init.log"
/usr/bin/python3 "$here/export.py" --init "$out/init.pt" --out "$out/cnn.pt"
job=(--logical-workers 4 --steps "$steps" "${data[@]}")
if [ "${EVAL:-1}" != 0 ]; then job+=(--eval); fi
mpirun "${mpirun_flags[@]}" -np "$processes" "$launch" --model cnn "${job[@]}" \
    --output-dir "$out/builtin"
mpirun "${mpirun_flags[@]}" -np "$processes" "$launch" --model-file "$out/cnn.pt" "${job[@]}" \
    --output-dir "$out/scripted" --save-model "$out/cnn-trained.pt"
hash_of() { sed -n 's/.*"params_sha256": *"\([0-9a-f]*\)".*/\1/p' "$1/summary.json"; }
builtin="$(hash_of "$out/builtin")"
scripted="$(hash_of "$out/scripted")"
echo "params_sha256 --model cnn:           $builtin"
echo "params_sha256 --model-file cnn.pt:   $scripted"
if [ -z "$builtin" ] || [ "$builtin" != "$scripted" ]; then
  echo "examples/cnn: the scripted cnn did not train to the built-in cnn's bits" >&2
  exit 1
fi
echo "same bits"
