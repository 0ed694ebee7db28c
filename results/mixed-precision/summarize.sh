#!/bin/bash
# The numbers of summary.txt, from the run directories run.sh made: per model
# and precision the final training and validation loss, and the training
# loss's difference from float32 step by step, smoothed over 100 steps
# (single batches differ by more than the precisions do).
set -eu
here=results/mixed-precision
printf "%-7s %-5s %10s %10s %18s %18s %8s\n" model prec train_loss val_loss "max |diff| (100)" "mean diff (last 500)" skipped
for model in gpt2 llama; do
  for p in fp32 bf16 fp16; do
    dir=$here/runs/$model-$p
    summary=$(grep '^summary:' "$here/runs-$model-$p.txt")
    skipped=$(sed -n 's/^loss scaling: \([0-9]*\) of .*/\1/p' "$here/runs-$model-$p.txt")
    paste -d, "$here/runs/$model-fp32/train_log.csv" "$dir/train_log.csv" | awk -F, -v s="$summary" -v m="$model" -v p="$p" -v k="${skipped:--}" '
      NR == 1 { next }  # step,loss,val_loss,lr,grad_norm,time_s twice: float32 loss in column 2, this one in 8
      { d[NR - 1] = $8 - $2; n = NR - 1 }
      END {
        worst = 0
        for (i = 100; i <= n; ++i) { t = 0; for (j = i - 99; j <= i; ++j) t += d[j]; t /= 100; if (t < 0) t = -t; if (t > worst) worst = t }
        last = 0; for (i = n - 499; i <= n; ++i) last += d[i]; last /= 500
        match(s, /train_loss=[0-9.]+/); tl = substr(s, RSTART + 11, RLENGTH - 11)
        match(s, /val_loss=[0-9.]+/); vl = substr(s, RSTART + 9, RLENGTH - 9)
        printf "%-7s %-5s %10s %10s %18.4f %18.4f %8s\n", m, p, tl, vl, worst, last, k
      }'
  done
done
