#!/usr/bin/env bash
# torchvision's ResNet-50, scripted, trained by tl on an ImageNet-layout folder at 64 px.
#   examples/resnet50/run.sh [OUT]        (OUT defaults to out/resnet50; run from anywhere)
# 1. tl-data jpeg-synth: 10 classes, 1,280 training and 200 validation JPEGs -> OUT/images
# 2. export.py: torchvision.models.resnet50(num_classes=10), scripted -> OUT/resnet50.pt
# 3. tl-launch: 4 ESTs on 2 processes, batch 8 per EST, 64 px crops, SGD with momentum
# 4. the mean loss of the first and of the last 5 steps; exit 1 unless it went down
# Needs python3-torch and python3-torchvision (python is used only for step 2) and a built tree
# (scripts/setup.sh). STEPS (40), IMAGE_SIZE (64), PROCESSES (2) and TL_LAUNCH override the
# defaults. A step at 224 px is minutes on a 2-core CPU; 64 px keeps this example to minutes.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/out/resnet50}"
steps="${STEPS:-40}"
image_size="${IMAGE_SIZE:-64}"
processes="${PROCESSES:-2}"
launch="${TL_LAUNCH:-$root/build/launcher/tl-launch}"
mpirun_flags=(--oversubscribe)
if [ "$(id -u)" = 0 ]; then mpirun_flags+=(--allow-run-as-root); fi
mkdir -p "$out"
rm -rf "$out/images" "$out/run"

"$(dirname "$launch")/tl-data" jpeg-synth --out "$out/images" --classes 10 --train 1280 --val 200 \
    --min-size 72 --max-size 96
/usr/bin/python3 "$here/export.py" --out "$out/resnet50.pt" --classes 10
mpirun "${mpirun_flags[@]}" -np "$processes" "$launch" \
    --model-file "$out/resnet50.pt" --dataset imagefolder --data-dir "$out/images" \
    --image-size "$image_size" --logical-workers 4 --batch 8 --lr 0.005 --momentum 0.9 \
    --steps "$steps" --log-every 5 --output-dir "$out/run" --save-model "$out/resnet50-trained.pt"
/usr/bin/python3 - "$out/run" <<'PY'
import json, sys
run = sys.argv[1]
losses = [r["loss"] for r in map(json.loads, open(f"{run}/metrics.jsonl")) if r.get("type") == "step"]
first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
summary = json.load(open(f"{run}/summary.json"))
print(f"mean loss of the first 5 steps {first:.3f}, of the last 5 {last:.3f} "
      f"({len(losses)} steps; params_sha256 {summary['params_sha256']})")
if not last < first:
    sys.exit("examples/resnet50: the loss did not go down")
PY
