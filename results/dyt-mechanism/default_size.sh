#!/bin/bash
# The default model of `make run` (GPT-2, 4 blocks, C = 128, T = 128, B = 16,
# 1,500 AdamW steps on the fortunes) with LayerNorm, with no norm, and with
# DyT started at the final gain `auto` gives it: alpha0 3 (what the DyT
# study's tuning chose for every language model) with seeds 1-3, and alpha0
# 0.5 (the DyT paper's, train's for a ViT) with seed 1. Prints each run's final
# validation loss and, over the seeds, the mean with a 95% interval
# (Student t, 2 degrees of freedom) and the paired difference DyT - no norm.
# A run whose log already has its summary line is not run again.
#
#   results/dyt-mechanism/default_size.sh build/normcore runs/dyt-default-size > results/dyt-mechanism/default_size.txt
set -eu
bin=${1:-build/normcore}
out=${2:-runs/dyt-default-size}
mkdir -p "$out"
run() {  # name seed flags...
  local name=$1 seed=$2 log="$out/$1-seed$2.log"
  shift 2
  grep -q '^summary: ' "$log" 2> /dev/null ||
    "$bin" train --seed "$seed" --sample-tokens 0 --eval-every 0 --run-dir "$out/$name-seed$seed" "$@" > "$log" 2>&1
  echo "$name $seed $(sed -n 's/^summary: .* val_loss=\([0-9.]*\) .*/\1/p' "$log")"
}
{
  for seed in 1 2 3; do
    run layernorm "$seed"
    run none "$seed" --norm none
    run dyt-alpha3 "$seed" --norm dyt --dyt-alpha 3 --dyt-alpha-attn 0 --embed-scale 0
  done
  run dyt-alpha0.5 1 --norm dyt --dyt-alpha 0.5 --dyt-alpha-attn 0 --embed-scale 0
} > "$out/losses.txt"
cat "$out/losses.txt"
echo
awk '
  { v[$1, $2] = $3 }
  END {
    t = 4.303  # t(0.975, 2)
    printf "%-11s %s\n", "run", "final validation loss: seeds 1, 2, 3; mean [95% interval]"
    split("layernorm none dyt-alpha3 dyt-alpha0.5", order, " ")
    for (i = 1; i <= 4; i++) {
      n = order[i]; s = 0; ss = 0; k = 0; line = ""
      for (seed = 1; seed <= 3; seed++) if ((n, seed) in v) { x = v[n, seed]; s += x; ss += x * x; k++; line = line sprintf(" %.4f", x) }
      if (k == 0) continue
      m = s / k
      if (k > 1) { sd = sqrt((ss - k * m * m) / (k - 1)); printf "%-11s%s; %.4f [%.4f, %.4f]\n", n, line, m, m - t * sd / sqrt(k), m + t * sd / sqrt(k) }
      else printf "%-11s%s (seed 1 only)\n", n, line
    }
    s = 0; ss = 0
    for (seed = 1; seed <= 3; seed++) { d = v["dyt-alpha3", seed] - v["none", seed]; s += d; ss += d * d }
    m = s / 3; sd = sqrt((ss - 3 * m * m) / 2)
    printf "DyT (alpha0 3) - no norm, paired by seed: %+.4f [%+.4f, %+.4f]\n", m, m - t * sd / sqrt(3), m + t * sd / sqrt(3)
  }' "$out/losses.txt"
