#!/bin/bash
# Memory of GPT-2 124M (12 blocks, C = 768, 12 heads, GPT-2's own BPE
# vocabulary of 50,257 tokens), T = 1024, B = 8, on the CPU: float32,
# float32 with --recompute, bfloat16, bfloat16 with --recompute. For each,
# `normcore memory`'s prediction (a dry run on the meta device) beside what
# two real training steps measured (train's peak and its split), and the
# time of the second step; then the ratios against float32.
#
#   bench/memory/recompute.sh [build/normcore] [runs/bench-recompute]
#
# Needs about 12 GB of memory and, on 2 cores, about 6 minutes.
set -eu
bin=${1:-build/normcore}
out=${2:-runs/bench-recompute}
mkdir -p "$out"
model=(--model gpt2 --layers 12 --width 768 --heads 12 --seq 1024 --batch 8 --tokenizer tests/data/gpt2
       --steps 2 --warmup 1 --eval-every 0 --eval-batches 1 --sample-tokens 0)
printf "%-16s %12s %12s %8s %12s %12s %10s\n" run "peak pred." "measured" "error" "activ. pred." "measured" "step 2 ms"
for mode in fp32 fp32-recompute bf16 bf16-recompute; do
  extra=(--precision "${mode%%-*}")
  [ "${mode#*-}" = recompute ] && extra+=(--recompute)
  "$bin" memory "${model[@]}" "${extra[@]}" > "$out/$mode.memory.txt"
  "$bin" train "${model[@]}" "${extra[@]}" --run-dir "$out/$mode" > "$out/$mode.log" 2>&1
  pred_peak=$(awk '$1 == "peak" { print $2 }' "$out/$mode.memory.txt")
  pred_act=$(awk '$1 == "activations" { print $2 }' "$out/$mode.memory.txt")
  peak=$(sed -n 's/^memory: peak \([0-9.]*\) MiB.*/\1/p' "$out/$mode.log")
  act=$(sed -n 's/^memory at the peak: .*activations \([0-9.]*\) .*/\1/p' "$out/$mode.log")
  # time_s is the time since the start of training: step 2's own is the difference.
  step_ms=$(awk -F, 'NR == 2 { t1 = $6 } NR == 3 { print 1000 * ($6 - t1) }' "$out/$mode/train_log.csv")
  printf "%-16s %12.1f %12.1f %+7.1f%% %12.1f %12.1f %10.0f\n" "$mode" "$pred_peak" "$peak" \
    "$(awk -v p="$pred_peak" -v m="$peak" 'BEGIN { print 100 * (p / m - 1) }')" "$pred_act" "$act" "$step_ms"
  eval "act_${mode//-/_}=$act; ms_${mode//-/_}=$step_ms; peak_${mode//-/_}=$peak"
done
echo
for mode in fp32_recompute bf16 bf16_recompute; do
  eval "a=\$act_$mode; m=\$ms_$mode; p=\$peak_$mode"
  awk -v name="$mode" -v a0="$act_fp32" -v a="$a" -v m0="$ms_fp32" -v m="$m" -v p0="$peak_fp32" -v p="$p" 'BEGIN {
    printf "%-16s against fp32: activations %.2fx smaller, peak %.2fx smaller, step time %+.0f%%\n", name, a0 / a, p0 / p, 100 * (m / m0 - 1) }'
done
