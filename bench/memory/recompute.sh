#!/bin/bash
# Activation recomputation on GPT-2 124M (12 blocks, C = 768, 12 heads,
# GPT-2's own BPE vocabulary of 50,257 tokens), T = 1024, B = 8, float32 on
# the CPU: two training steps with every block's activations kept, then
# with --recompute. Prints, for each, the peak split train reports
# (parameters, gradients, optimizer state, activations and workspace) and
# the time of the second step, then the ratios.
#
#   bench/memory/recompute.sh [build/normcore] [runs/bench-recompute]
#
# Needs about 14 GB of memory and, on 2 cores, about 5 minutes.
set -eu
bin=${1:-build/normcore}
out=${2:-runs/bench-recompute}
mkdir -p "$out"
model=(--model gpt2 --layers 12 --width 768 --heads 12 --seq 1024 --batch 8 --tokenizer tests/data/gpt2
       --steps 2 --warmup 1 --eval-every 0 --eval-batches 1 --sample-tokens 0)
for mode in kept recomputed; do
  extra=()
  [ "$mode" = recomputed ] && extra=(--recompute)
  "$bin" train "${model[@]}" "${extra[@]}" --run-dir "$out/$mode" > "$out/$mode.log" 2>&1
  split=$(sed -n 's/^memory at the peak: //p' "$out/$mode.log")
  # time_s is the time since the start of training: step 2's own is the difference.
  step_ms=$(awk -F, 'NR == 2 { t1 = $6 } NR == 3 { print 1000 * ($6 - t1) }' "$out/$mode/train_log.csv")
  act=$(sed -n 's/.*activations and workspace \([0-9.]*\).*/\1/p' <<<"$split")
  echo "$mode: $split; step 2: $step_ms ms"
  eval "${mode}_act=$act; ${mode}_ms=$step_ms"
done
awk -v ka="$kept_act" -v ra="$recomputed_act" -v km="$kept_ms" -v rm="$recomputed_ms" 'BEGIN {
  printf "activations and workspace: %.1f -> %.1f MiB (%.2fx smaller); step time %.0f -> %.0f ms (%+.0f%%)\n", ka, ra, ka / ra, km, rm, 100 * (rm / km - 1) }'
