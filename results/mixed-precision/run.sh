#!/bin/bash
# Loss curves of the same runs in float32, bfloat16 and float16 products
# (`train --precision`): make run's model (GPT-2, L4 C128 T128) and a Llama
# of the same size, 1,500 steps each on the default corpus, the same seed,
# so the same initial weights and the same batches. Writes one run directory
# per model x precision here and then summary.txt and losses.png.
#
# usage: results/mixed-precision/run.sh [BUILD_DIR]   (from the repository root)
set -eu
build=${1:-build}
here=results/mixed-precision
for model in gpt2 llama; do
  for p in fp32 bf16 fp16; do
    "$build/normcore" train --model "$model" --precision "$p" --sample-tokens 0 --run-dir "$here/runs/$model-$p" \
      > "$here/runs-$model-$p.txt" 2>&1
  done
done
bash "$here/summarize.sh" > "$here/summary.txt"
gnuplot "$here/plot.gp"
