#!/bin/bash
# bench_recovery: a rank SIGKILLed under tl-run (the job goes on from the last step boundary on
# the processes that remain) next to a cold restart from the last periodic checkpoint, measured
# in the same invocation. ResNet-18, N = 4, 4 -> 3 processes.
#
#   bench/bench_recovery.sh [BUILD_DIR]   (env: STEPS=64 EVERY=50 KILL_AT=60 BATCH=4 MODEL=resnet18)
#
# Prints, for each: seconds from the kill to the first step completed after it, completed steps
# recomputed, the mean step time before the kill (the per-step cost of keeping the copy), and
# the final params_sha256 (the two must agree).
set -euo pipefail
BUILD=${1:-build}
BIN=$(cd "$BUILD/launcher" && pwd)
STEPS=${STEPS:-64}
EVERY=${EVERY:-50}
KILL_AT=${KILL_AT:-60}
BATCH=${BATCH:-4}
MODEL=${MODEL:-resnet18}
MPIRUN=${MPIRUN:-mpirun}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
WORK=$(mktemp -d /tmp/bench_recovery.XXXXXX)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$WORK"' EXIT
"$BIN/tl-data" synth --out "$WORK/data" --train 512 --test 32 --seed 1 >/dev/null
JOB="--dataset cifar10 --data-dir $WORK/data --model $MODEL --logical-workers 4 --batch $BATCH --seed 3 --log-every 0 --steps $STEPS --checkpoint-every $EVERY"

last_step() { python3 - "$1" <<'PY'
import json, sys
last = -1
try:
    for line in open(sys.argv[1]):
        r = json.loads(line)
        if r.get("type") == "step": last = max(last, r["step"])
except FileNotFoundError: pass
print(last)
PY
}

# Kills the second rank process (mpirun's child) of the job writing to $1 once it passed step $2.
kill_after() {
  until [ "$(last_step "$1/metrics.jsonl")" -ge "$2" ]; do sleep 0.05; done
  local m victim
  m=$(pgrep -f "^[^ ]*mpirun .*--output-dir $1( |\$)" | head -1)
  victim=$(pgrep -P "$m" | sed -n 2p)
  date +%s.%N > "$1.killed_at"
  kill -9 "$victim"
}

# Seconds from the kill to the first step completed after it and to the first step past the last
# one completed before it (progress regained), completed steps recomputed, the mean step time of
# steps 5..KILL_AT-1, and the hash.
report() { python3 - "$1" "$(cat "$1.killed_at")" "$KILL_AT" <<'PY'
import json, sys
out, killed, kill_at = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
steps = [json.loads(l) for l in open(out + "/metrics.jsonl") if '"type":"step"' in l]
before = {}
for r in steps:
    if r["time"] < killed: before[r["step"]] = r["time"]
after = [r for r in steps if r["time"] > killed]
first = min(after, key=lambda r: r["time"])
done_before = max(before)
regained = min((r for r in after if r["step"] > done_before), key=lambda r: r["time"])
ts = [before[s] for s in sorted(before) if 5 <= s < kill_at]
mean = (ts[-1] - ts[0]) / (len(ts) - 1)
h = json.load(open(out + "/summary.json"))["params_sha256"]
print(f"{first['time'] - killed:.2f} {regained['time'] - killed:.2f} {done_before - first['step'] + 1} {mean:.3f} {h}")
PY
}

# 1) tl-run: the survivors' copy of the last step boundary.
A="$WORK/recover"
"$BIN/tl-run" --np 4 --max-restarts 1 --hang-timeout 60 --mpirun "$MPIRUN" --mpirun-args "--oversubscribe" \
  -- $JOB --output-dir "$A" > "$WORK/recover.log" 2>&1 &
RUN=$!
kill_after "$A" "$KILL_AT"
wait $RUN
read -r A_S A_R A_LOST A_STEP A_HASH < <(report "$A")

# 2) Cold restart: mpirun ends the job; a new mpirun on 3 processes resumes the last periodic
#    checkpoint at once (no human in the loop).
B="$WORK/cold"
( $MPIRUN --oversubscribe -np 4 "$BIN/tl-launch" $JOB --output-dir "$B" > "$WORK/cold.log" 2>&1 || true ) &
RUN=$!
kill_after "$B" "$KILL_AT"
wait $RUN || true
$MPIRUN --oversubscribe -np 3 "$BIN/tl-launch" --resume "$B/checkpoint" --output-dir "$B" >> "$WORK/cold.log" 2>&1
read -r B_S B_R B_LOST B_STEP B_HASH < <(report "$B")

echo "bench_recovery: $MODEL, N = 4, batch $BATCH per worker, 4 -> 3 processes after SIGKILL at step $KILL_AT, periodic checkpoint every $EVERY steps, $(nproc) cores"
printf "| %-34s | %19s | %27s | %26s | %18s |\n" "run" "kill -> next step s" "kill -> progress regained s" "completed steps recomputed" "step s before kill"
printf "|%s|%s|%s|%s|%s|\n" "------------------------------------" "---------------------" "-----------------------------" "----------------------------" "--------------------"
printf "| %-34s | %19s | %27s | %26s | %18s |\n" "tl-run (copy of the last boundary)" "$A_S" "$A_R" "$A_LOST" "$A_STEP"
printf "| %-34s | %19s | %27s | %26s | %18s |\n" "cold restart from checkpoint" "$B_S" "$B_R" "$B_LOST" "$B_STEP"
python3 -c "print(f'ratio tl-run / cold restart: to the next step {float(\"$A_S\")/float(\"$B_S\"):.2f}, to progress regained {float(\"$A_R\")/float(\"$B_R\"):.2f}, step time {float(\"$A_STEP\")/float(\"$B_STEP\"):.3f}')"
echo "params_sha256: tl-run $A_HASH, cold restart $B_HASH ($([ "$A_HASH" = "$B_HASH" ] && echo same || echo DIFFERENT))"
