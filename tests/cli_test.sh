#!/usr/bin/env bash
# Runs the `normcore` program the way users and outside checks do: a few
# training steps of each language model on a small file, and the errors bad
# input must give (a clear message, a non-zero exit). Run by `make test`
# with the build directory as $1.
set -uo pipefail
bin="${1:-build}/normcore"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "cli: FAILED: $*"; failures=$((failures + 1)); }
# NORMCORE_CLI_QUICK=1 (make test-asan sets it) leaves out two things that
# cost minutes under the sanitizers and that the release pass of `make test`
# runs: bench's GEMM tables (20 s under ASan; the products themselves are
# the unit suite's, there too) and the two studies' smoke runs (section 8).
quick=${NORMCORE_CLI_QUICK:-0}

# A small text file: a few repeated sentences.
for i in $(seq 1 40); do echo "the quick brown fox jumps over the lazy dog $i"; done > "$work/tiny.txt"

# 1. train runs for each language model and ends with the summary line.
for model in gpt2 llama; do
  out=$("$bin" train --model "$model" --data "$work/tiny.txt" --steps 6 --batch 4 --seq 32 --layers 2 --width 32 \
        --heads 2 --eval-every 3 --eval-batches 2 --sample-tokens 20 --run-dir "$work/run-$model" 2>&1)
  status=$?
  [ $status -eq 0 ] || fail "train --model $model exited $status: $out"
  grep -qE '^summary: steps=6 train_loss=[0-9.]+ val_loss=[0-9.]+ ms_per_step=[0-9.]+ tok_per_s=[0-9]+$' <<<"$out" \
    || fail "train --model $model: no summary line in: $out"
  grep -qE '^memory: peak [0-9.]+ MiB in tensors' <<<"$out" || fail "train --model $model: no peak-memory line in: $out"
  [ "$(wc -l < "$work/run-$model/train_log.csv")" -eq 7 ] || fail "train --model $model: the CSV log should have a header and 6 rows"
  [ "$(head -1 "$work/run-$model/train_log.csv")" == "step,loss,val_loss,lr,grad_norm,time_s" ] || fail "CSV header"
done

# 1'. A run on the CPU never loads cuBLAS: a CUDA build opens it at its first product on the GPU
#     (cuda/cublas_library.cuh; linked in, it cost every command 0.4 s and 218 MB at start-up).
#     The program must not list it as a needed library (readelf), and LD_DEBUG=libs, which makes
#     the dynamic loader name every library it looks for, must not name it during a training run;
#     the trace must name the C library, or the check would pass on an empty trace. Only a build
#     with the CUDA backend (which holds the file name "libcublas.so.") can fail it.
if grep -qa "libcublas.so." "$bin"; then
  if readelf -d "$bin" | grep -q "NEEDED.*libcublas"; then fail "$bin is linked with cuBLAS: $(readelf -d "$bin" | grep NEEDED)"; fi
  trace=$(LD_DEBUG=libs "$bin" train --data "$work/tiny.txt" --steps 1 --batch 2 --seq 16 --layers 1 --width 16 \
          --heads 2 --eval-every 0 --sample-tokens 0 --run-dir "$work/run-libs" 2>&1 > /dev/null) \
    || fail "train under LD_DEBUG=libs failed: $(tail -5 <<<"$trace")"
  grep -q "find library=libc.so" <<<"$trace" || fail "LD_DEBUG=libs gave no loader trace: $(head -5 <<<"$trace")"
  if grep -q "libcublas" <<<"$trace"; then fail "a training run on the CPU loaded cuBLAS: $(grep libcublas <<<"$trace" | head -3)"; fi
else
  echo "cli: no CUDA backend in $bin: the check that the CPU never loads cuBLAS is skipped"
fi

# 1a. --diagnostics logs per-block gradient norms, updates, residual contributions and spikes.
out=$("$bin" train --data "$work/tiny.txt" --steps 4 --batch 2 --seq 16 --layers 3 --width 16 --heads 2 --eval-every 0 \
      --eval-batches 1 --sample-tokens 0 --diagnostics --spike-window 2 --run-dir "$work/run-diag" 2>&1) || fail "train --diagnostics: $out"
grep -qE '^diagnostics: [0-9]+ loss spikes' <<<"$out" || fail "train --diagnostics: no summary line in: $out"
[ "$(head -1 "$work/run-diag/diagnostics.csv")" == "step,loss,spike,grad_norm_block_0,grad_norm_block_1,grad_norm_block_2,update_block_0,update_block_1,update_block_2,residual_block_0,residual_block_1,residual_block_2,stream_rms_block_0,stream_common_block_0,stream_rms_block_1,stream_common_block_1,stream_rms_block_2,stream_common_block_2" ] \
  || fail "diagnostics.csv header: $(head -1 "$work/run-diag/diagnostics.csv")"
[ "$(wc -l < "$work/run-diag/diagnostics.csv")" -eq 5 ] || fail "diagnostics.csv should have a header and 4 rows"
grep -qE '^h\.0\.attn\.c_attn\.weight,48,16,[0-9.]+,' "$work/run-diag/weights.csv" || fail "weights.csv: $(head -3 "$work/run-diag/weights.csv")"
[ "$(head -1 "$work/run-diag/stream.csv")" == "position,effective_rank,normalization_bias,turn_angle,relative_change" ] && \
  [ "$(wc -l < "$work/run-diag/stream.csv")" -eq 5 ] || fail "stream.csv: embeddings + 3 blocks expected"
"$bin" train --data "$work/tiny.txt" --norm dyt --steps 2 --batch 2 --seq 16 --layers 1 --width 16 --heads 2 --eval-every 0 \
  --eval-batches 1 --sample-tokens 0 --diagnostics --run-dir "$work/run-dyt" > /dev/null 2>&1 || fail "train --norm dyt --diagnostics"
[ "$(head -1 "$work/run-dyt/diagnostics.csv")" == "step,loss,spike,grad_norm_block_0,update_block_0,residual_block_0,stream_rms_block_0,stream_common_block_0,saturation_h.0.ln_1,alpha_h.0.ln_1,gain_h.0.ln_1,saturation_h.0.ln_2,alpha_h.0.ln_2,gain_h.0.ln_2,saturation_ln_f,alpha_ln_f,gain_ln_f" ] \
  || fail "diagnostics.csv with DyT: $(head -1 "$work/run-dyt/diagnostics.csv")"

# 1a'. --recompute: the same run to the last bit (dropout on), and it says so.
for r in "" --recompute; do
  "$bin" train --data "$work/tiny.txt" --steps 3 --batch 2 --seq 16 --layers 2 --width 16 --heads 2 --dropout 0.1 --eval-every 0 \
    --eval-batches 1 --sample-tokens 0 $r --run-dir "$work/run-recompute$r" > "$work/recompute$r.txt" 2>&1 || fail "train $r: $(cat "$work/recompute$r.txt")"
done
cmp -s <(cut -d, -f2,3,5 "$work/run-recompute/train_log.csv") <(cut -d, -f2,3,5 "$work/run-recompute--recompute/train_log.csv") \
  || fail "train --recompute should give the same losses and gradient norms: $(paste -d' ' "$work/run-recompute/train_log.csv" "$work/run-recompute--recompute/train_log.csv")"
grep -q "activations recomputed during backward" "$work/recompute--recompute.txt" || fail "train --recompute does not say so"

# 1a, memory: the same flags as train; its predicted peak is train's measured one (within the packing
# buffers' bound); a budget it does not fit exits 2 with the settings that would cut it; a bad budget is one error.
mem_flags=(--data "$work/tiny.txt" --batch 8 --seq 64 --layers 2 --width 64 --heads 4)
"$bin" memory "${mem_flags[@]}" > "$work/memory.txt" 2>&1 || fail "memory: $(cat "$work/memory.txt")"
"$bin" train "${mem_flags[@]}" --steps 2 --eval-every 0 --eval-batches 1 --sample-tokens 0 --run-dir "$work/run-memory" \
  > "$work/memory-train.txt" 2>&1 || fail "train for memory: $(cat "$work/memory-train.txt")"
predicted=$(awk '$1 == "peak" { print $2 }' "$work/memory.txt")
bound=$(sed -n 's/^  plus up to \([0-9.]*\) MiB.*/\1/p' "$work/memory.txt")
measured=$(sed -n 's/^memory: peak \([0-9.]*\) MiB.*/\1/p' "$work/memory-train.txt")
awk -v p="$predicted" -v b="$bound" -v m="$measured" 'BEGIN { exit !(p > 0 && b > 0 && m >= p - 0.1 && m <= p + b + 0.1) }' \
  || fail "memory predicted $predicted MiB (+ up to $bound), train measured $measured"
"$bin" memory "${mem_flags[@]}" --budget 1MB > "$work/memory-budget.txt" 2>&1
[ $? -eq 2 ] || fail "memory --budget 1MB should exit 2 (does not fit)"
grep -q "does not fit" "$work/memory-budget.txt" && grep -q -- "--recompute --precision bf16 " "$work/memory-budget.txt" \
  || fail "memory --budget 1MB: $(cat "$work/memory-budget.txt")"
out=$("$bin" memory "${mem_flags[@]}" --budget 8GiB 2>&1) || fail "memory --budget 8GiB: $out"
grep -q "fits, the peak" <<<"$out" || fail "memory --budget 8GiB should fit: $out"
out=$("$bin" memory --budget 6XB 2>&1) && fail "memory --budget 6XB should fail"
grep -q "flag --budget: '6XB' is not a memory size" <<<"$out" || fail "memory --budget 6XB: $out"

# 1a''. --precision: bf16 and fp16 train, say what they do, and keep the loss near float32's; fp16's loss
# scaler is reported, saved in the checkpoint and restored on --resume; generate and eval take it too.
for p in fp32 bf16 fp16; do
  "$bin" train --data "$work/tiny.txt" --steps 6 --batch 2 --seq 16 --layers 2 --width 16 --heads 2 --eval-every 0 \
    --eval-batches 1 --sample-tokens 0 --precision $p --run-dir "$work/run-$p" --save "$work/model-$p/" > "$work/precision-$p.txt" 2>&1 \
    || fail "train --precision $p: $(cat "$work/precision-$p.txt")"
done
grep -q "precision: every linear layer and attention multiplies bfloat16 operands and sums in float32" "$work/precision-bf16.txt" \
  || fail "train --precision bf16 does not say so: $(cat "$work/precision-bf16.txt")"
grep -qE "^loss scaling: [0-9]+ of this run's 6 steps skipped because a gradient overflowed float16" "$work/precision-fp16.txt" \
  || fail "train --precision fp16: no loss scaling line: $(cat "$work/precision-fp16.txt")"
! grep -q "loss scaling" "$work/precision-bf16.txt" || fail "bf16 needs no loss scaling"
# The MFU divides by the peak of the path the products took: vdpbf16ps's where bfloat16 runs on
# AVX512-BF16, the float32 FMA's where packing widens, none on AMX tiles.
for p in fp32 bf16 fp16; do
  f="$work/precision-$p.txt"
  if grep -q "(on this CPU: AVX512-BF16)" "$f"; then peak="vdpbf16ps peak"
  elif grep -q "(on this CPU: AMX)" "$f"; then peak=""
  else peak="float32 FMA peak"; fi
  if [ -n "$peak" ]; then
    grep -qE "^throughput: .*, MFU [0-9.]+% of the [0-9.]+ GFLOP/s $peak" "$f" || fail "train --precision $p: not the $peak: $(cat "$f")"
  else
    ! grep -q "MFU" "$f" || fail "train --precision $p on AMX: an MFU over an unmeasured peak: $(cat "$f")"
  fi
done
grep -q '"loss_scale": [0-9]' "$work/run-fp16/result.json" || fail "result.json: no loss_scale: $(cat "$work/run-fp16/result.json")"
train_loss() { sed -n 's/^ *"train_loss": \([0-9.e+-]*\),*$/\1/p' "$1"; }
for p in bf16 fp16; do
  awk -v a="$(train_loss "$work/run-fp32/result.json")" -v b="$(train_loss "$work/run-$p/result.json")" \
    'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 0 && d < 0.05 * a) }' \
    || fail "train --precision $p: the loss strays from float32's ($(train_loss "$work/run-fp32/result.json") vs $(train_loss "$work/run-$p/result.json"))"
done
grep -qa '"loss_scale"' "$work/run-fp16/checkpoint.safetensors" || fail "the fp16 checkpoint has no loss scale"
out=$("$bin" train --data "$work/tiny.txt" --steps 8 --batch 2 --seq 16 --layers 2 --width 16 --heads 2 --eval-every 0 \
      --eval-batches 1 --sample-tokens 0 --precision fp16 --resume "$work/run-fp16/checkpoint.safetensors" --run-dir "$work/run-fp16" 2>&1) \
  || fail "train --precision fp16 --resume: $out"
grep -q "resumed from" <<<"$out" || fail "fp16 resume: $out"
out=$("$bin" generate --init "$work/model-bf16/" --max-tokens 5 --precision bf16 2>&1) || fail "generate --precision bf16: $out"
out=$("$bin" eval --init "$work/model-fp16/" --data "$work/tiny.txt" --batch 2 --seq 16 --batches 1 --precision fp16 2>&1) \
  || fail "eval --precision fp16: $out"
grep -qE '^eval: loss=[0-9.]+ ' <<<"$out" || fail "eval --precision fp16: $out"

# 1b. the ViT on (a slice of) Fashion-MNIST reports its accuracy.
out=$("$bin" train --model vit --train-images 256 --steps 3 --batch 8 --width 16 --heads 2 --layers 1 --eval-batches 2 \
      --run-dir "$work/run-vit" 2>&1) || fail "train --model vit: $out"
grep -q "validation accuracy" <<<"$out" || fail "train --model vit should report the accuracy: $out"
grep -qE '^summary: steps=3 ' <<<"$out" || fail "train --model vit: no summary line"
"$bin" train --model vit --train-images 64 --steps 1 --batch 8 --width 16 --heads 2 --layers 1 --eval-batches 1 \
  --run-dir "$work/run-vit" --save "$work/vit-model/" > /dev/null 2>&1 || fail "train --model vit --save"

# 1c. the ViT's two evaluation splits hold different images (the first and the
#     second half of the test set); DyT's held-out saturation is logged after
#     the calibration step and at the end.
for split in validation tuning; do
  "$bin" train --model vit --norm dyt --train-images 64 --steps 4 --lr 0.01 --warmup 1 --batch 8 --width 16 --heads 2 --layers 1 --eval-batches 2 \
    --eval-split $split --diagnostics --calibration-step 1 --run-dir "$work/run-vit-$split" > "$work/out-$split.txt" 2>&1 \
    || fail "train --model vit --eval-split $split: $(cat "$work/out-$split.txt")"
done
[ "$(grep -o 'val_loss=[0-9.]*' "$work/out-validation.txt")" != "$(grep -o 'val_loss=[0-9.]*' "$work/out-tuning.txt")" ] \
  || fail "vit: the tuning and validation splits gave the same loss"
[ "$(cut -d, -f1 "$work/run-vit-tuning/saturation_heldout.csv" | tr '\n' ' ')" == "step 1 4 " ] \
  || fail "saturation_heldout.csv: $(cat "$work/run-vit-tuning/saturation_heldout.csv")"
out=$("$bin" eval --init "$work/vit-model" --limit 64 2>&1)
grep -qE '^eval: loss=[0-9.]+ accuracy=[0-9.]+ \(' <<<"$out" || fail "eval of a vit should print the accuracy: $out"

# 2. the variants from the command line build and train one step.
for variant in "--placement geonorm --decay harmonic" "--norm dyt --placement sandwich" "--placement deepnorm --norm rmsnorm" \
               "--attention differential --width 32 --heads 2" "--attention differential-regime --model llama" "--mlp swiglu --positions rope --kv-heads 1"; do
  "$bin" train $variant --data "$work/tiny.txt" --steps 1 --batch 2 --seq 16 --layers 2 --width 32 --heads 2 \
    --eval-batches 1 --sample-tokens 0 --run-dir "$work/run-variant" > "$work/out.txt" 2>&1 \
    || fail "train $variant: $(cat "$work/out.txt")"
done

# 3. --no-shuffle is deterministic: two runs give the same losses.
for i in 1 2; do
  "$bin" train --no-shuffle --data "$work/tiny.txt" --steps 3 --batch 2 --seq 16 --layers 1 --width 16 --heads 2 \
    --eval-batches 1 --sample-tokens 0 --run-dir "$work/det-$i" > /dev/null 2>&1 || fail "--no-shuffle run $i"
done
cmp -s <(cut -d, -f2 "$work/det-1/train_log.csv") <(cut -d, -f2 "$work/det-2/train_log.csv") || fail "--no-shuffle runs differ"

# 4. resume: 8 steps straight == 4 steps, stop, resume, 4 more (same losses, bit for bit).
common=(--data "$work/tiny.txt" --steps 8 --batch 2 --seq 16 --layers 2 --width 16 --heads 2 --eval-every 0 --eval-batches 1
        --sample-tokens 0 --dropout 0.1)
"$bin" train "${common[@]}" --run-dir "$work/straight" > /dev/null 2>&1 || fail "straight run"
"$bin" train "${common[@]}" --stop-after 4 --run-dir "$work/split" > /dev/null 2>&1 || fail "first half"
cp "$work/split/checkpoint.safetensors" "$work/at-step-4.safetensors"
"$bin" train "${common[@]}" --resume "$work/split/checkpoint.safetensors" --run-dir "$work/split" > "$work/out.txt" 2>&1 \
  || fail "resume: $(cat "$work/out.txt")"
grep -q "resumed from" "$work/out.txt" || fail "resume did not say where it resumed"
cmp -s <(cut -d, -f1,2 "$work/straight/train_log.csv") <(cut -d, -f1,2 "$work/split/train_log.csv") \
  || fail "resumed losses differ: $(paste -d' ' <(cut -d, -f2 "$work/straight/train_log.csv") <(cut -d, -f2 "$work/split/train_log.csv"))"

# 5. weights: --save a file and a directory, --init from both, generate and eval from them.
"$bin" train --model llama --data "$work/tiny.txt" --steps 2 --batch 2 --seq 16 --layers 1 --width 16 --heads 2 \
  --sample-tokens 0 --eval-batches 1 --run-dir "$work/w" --save "$work/w.safetensors" > /dev/null 2>&1 || fail "--save file"
"$bin" train --model llama --data "$work/tiny.txt" --steps 2 --batch 2 --seq 16 --layers 1 --width 16 --heads 2 \
  --sample-tokens 0 --eval-batches 1 --run-dir "$work/w" --save "$work/wdir/" > /dev/null 2>&1 || fail "--save dir/"
[ -f "$work/wdir/config.json" ] && [ -f "$work/wdir/model.safetensors" ] || fail "--save dir/ should write config.json and model.safetensors"
"$bin" train --init "$work/wdir" --data "$work/tiny.txt" --steps 1 --batch 2 --seq 16 --sample-tokens 0 --eval-batches 1 \
  --run-dir "$work/w2" > "$work/out.txt" 2>&1 || fail "--init dir: $(cat "$work/out.txt")"
"$bin" train --model llama --init "$work/w.safetensors" --layers 1 --width 16 --heads 2 --data "$work/tiny.txt" --steps 1 \
  --batch 2 --seq 16 --sample-tokens 0 --eval-batches 1 --run-dir "$work/w3" > "$work/out.txt" 2>&1 || fail "--init file: $(cat "$work/out.txt")"
out=$("$bin" generate --init "$work/wdir" --prompt "the" --max-tokens 12 --seed 3 2>/dev/null) || fail "generate: $out"
[ "${#out}" -ge 15 ] || fail "generate printed too little: '$out'"
# (stdout only: the tokens/s line goes to stderr and its timing varies)
out2=$("$bin" generate --init "$work/wdir" --prompt "the" --max-tokens 12 --seed 3 2>/dev/null)
[ "$out" == "$out2" ] || fail "generate with the same seed should print the same text"
out=$("$bin" eval --init "$work/wdir" --data "$work/tiny.txt" --seq 16 --batch 2 --batches 2 2>&1)
grep -qE "^eval: loss=[0-9.]+ nats/token" <<<"$out" || fail "eval should print the loss: $out"
"$bin" generate --resume "$work/split/checkpoint.safetensors" --max-tokens 5 > /dev/null 2>&1 || fail "generate from a training checkpoint"

# 5b. a BPE vocabulary: trained on the data and saved on first use, then reused.
"$bin" train --tokenizer "$work/v.bpe" --vocab-size 300 --data "$work/tiny.txt" --steps 2 --batch 2 --seq 16 --layers 1 \
  --width 16 --heads 2 --eval-batches 1 --sample-tokens 5 --run-dir "$work/bpe" --save "$work/bpe-model/" > "$work/out.txt" 2>&1 \
  || fail "train with BPE: $(cat "$work/out.txt")"
[ -f "$work/v.bpe" ] || fail "the BPE vocabulary should have been saved"
grep -q "BPE $work/v.bpe" "$work/out.txt" || fail "train should name the tokenizer: $(cat "$work/out.txt")"
"$bin" generate --init "$work/bpe-model" --tokenizer "$work/v.bpe" --prompt "the" --max-tokens 5 > /dev/null 2>&1 \
  || fail "generate with the BPE vocabulary"

# 6. bad input: one clear line, non-zero exit.
expect_error() {  # expect_error "<fragment of the message>" args...
  local fragment="$1"; shift
  out=$("$bin" "$@" 2>&1); status=$?
  [ $status -ne 0 ] || fail "'normcore $*' should fail but exited 0"
  grep -qF -- "$fragment" <<<"$out" || fail "'normcore $*': expected '$fragment' in: $out"
}
expect_error "unknown flag --bogus" train --bogus 1
expect_error "does not exist" train --data "$work/missing.txt"
# --resume with a --stop-after at or before the checkpoint's step (section 4 made it).
expect_error "the checkpoint is already at step 4, so there is nothing to run" \
  train "${common[@]}" --resume "$work/at-step-4.safetensors" --stop-after 3 --run-dir "$work/split-early"
expect_error "'abc' is not an integer" train --steps abc
expect_error "unknown placement 'middle'" train --placement middle
expect_error "--heads 3 does not divide --width 32" train --width 32 --heads 3
expect_error "needs a value" train --steps
expect_error "unknown command 'fly'" fly
expect_error "is not divisible by the patch size" train --model vit --image-size 28 --patch 5
expect_error "mismatch: model.layers.0.self_attn.q_proj.weight" train --model llama --init "$work/w.safetensors" --width 32 --heads 2 --layers 1 --data "$work/tiny.txt"
expect_error "not a normcore training checkpoint" train --resume "$work/w.safetensors" --data "$work/tiny.txt"
expect_error "config.json" generate --init "$work"
expect_error "give the weights" generate
expect_error "cannot open" eval --init "$work/nothing.safetensors" --data "$work/tiny.txt"
expect_error "unknown device 'tpu'" train --device tpu
# Without a usable GPU (or without the CUDA backend) --device cuda says why, no GPU first.
if ! "$bin" train --device cuda --data "$work/tiny.txt" --steps 1 --layers 1 --width 16 --heads 2 --seq 8 --batch 1 \
     --eval-batches 1 --sample-tokens 0 --run-dir "$work/cuda-probe" >/dev/null 2>&1; then
  expect_error "cuda is not available" train --device cuda --data "$work/tiny.txt"
  grep -qE "cuda is not available: (no GPU was found|normcore was built without the CUDA backend)" <<<"$out" \
    || fail "--device cuda without a GPU should say so first: $out"
fi
expect_error "unknown model 'gpt3'" bench --models gpt3
expect_error "flag --precision: unknown precision 'fp8' (choose fp32, bf16 or fp16)" train --precision fp8
expect_error "flag --precision: unknown precision 'half'" generate --init x --precision half
expect_error "flag --precision: unknown precision 'int8'" bench --precisions fp32,int8
expect_error "flag --steps: 0 is out of range" bench --steps 0

# 6'. bench: one small run prints the peak, the GEMM table and a step time with its MFU, writes JSON,
#     and with --precisions times the bfloat16 step beside the float32 one, with their ratio.
skip_gemm=(); [ "$quick" = 1 ] && skip_gemm=(--skip-gemm)
out=$("$bin" bench --models gpt2 --sizes train --steps 1 --repeats 1 --precisions fp32,bf16 --json "$work/bench.json" \
      "${skip_gemm[@]}" 2>&1) || fail "bench: $out"
grep -qE '^  gpt2 train bf16: [0-9.]+x the float32 step.s speed' <<<"$out" || fail "bench --precisions: no ratio line: $out"
grep -qE '^FMA peak \(float32, [a-z0-9]+, [0-9]+ threads\): [0-9.]+ GFLOP/s' <<<"$out" || fail "bench: no FMA peak line: $out"
if [ "$quick" != 1 ]; then
  grep -qE 'gemm 1024x1024x1024 NN +[0-9.]+ GF/s +[0-9.]+%' <<<"$out" || fail "bench: no GEMM row in the summary: $out"
fi
grep -qE 'gpt2 train step +[0-9.]+ ms +[0-9.]+% MFU' <<<"$out" || fail "bench: no step time and MFU in the summary: $out"
grep -q '"mfu_percent"' "$work/bench.json" || fail "bench --json: no MFU of the step"
# The bf16 step's MFU over the peak of its products' path, as train's (section 1a'' above).
if grep -q "(on this CPU: AVX512-BF16)" "$work/precision-bf16.txt"; then
  grep -qE 'gpt2 train bf16 step +[0-9.]+ ms +[0-9.]+% MFU' <<<"$out" && grep -q '"mfu_peak": "bf16_dot"' "$work/bench.json" \
    || fail "bench: the bf16 step's MFU is not over the vdpbf16ps peak: $out"
  # ... and its value is that peak's: tok/s x FLOPs per token over the vdpbf16ps peak sampled beside the steps.
  python3 - "$work/bench.json" <<'PY' || fail "bench --json: a step's MFU is not over its own peak: $(cat "$work/bench.json")"
import json, sys
r = json.load(open(sys.argv[1]))
m = r["machine"]
for s in r["training"]:
    peak = {"bf16_dot": m.get("bf16_dot_peak_gflops_steps"), "fma": m["fma_peak_gflops_steps"]}[s["mfu_peak"]]
    want = 100 * s["tokens_per_s"] * s["flops_per_token"] / 1e9 / peak
    assert abs(s["mfu_percent"] - want) < 1e-6 * want, (s["precision"], s["mfu_percent"], want)
PY
elif ! grep -q "(on this CPU: AMX)" "$work/precision-bf16.txt"; then
  grep -qE 'gpt2 train bf16 step +[0-9.]+ ms +[0-9.]+% MFU' <<<"$out" || fail "bench: no MFU for the widened bf16 step: $out"
  ! grep -q '"mfu_peak": "bf16_dot"' "$work/bench.json" || fail "bench: a widened bf16 step over the vdpbf16ps peak"
fi
grep -q '"ms_per_step"' "$work/bench.json" && grep -q '"fma_peak_gflops"' "$work/bench.json" || fail "bench --json"
grep -qE 'gpt2 train +[0-9]+ shapes, slowest: [0-9]+ x [0-9]+ x [0-9]+ [NT][NT] [0-9]+ GF/s' <<<"$out" || fail "bench: no per-shape GEMM line for the step: $out"
grep -q '"gemm_shapes"' "$work/bench.json" || fail "bench --json: no per-shape GEMMs of the step"

# 6''. bench/step_ab.py (two builds' steps, bench runs alternating) on two stand-ins for
#      normcore that log their turn and write fixed JSON: OLD 100 ms, NEW 50 ms and one GEMM
#      shape more. The turns must alternate, the ratio be new / old paired by round, a shape
#      of one side only be shown with a dash for the other, a failing or missing binary be
#      named; then one round of this binary against itself, for bench's real JSON. Python is
#      not one of normcore's dependencies: without python3 the check says so and skips.
step_ab="$(dirname "$0")/../bench/step_ab.py"
if command -v python3 > /dev/null; then
  for side in old new; do
    ms=$([ $side = old ] && echo 100 || echo 50)
    extra=$([ $side = new ] && echo ', {"shape": "9 x 9 x 9 TN", "percent_of_peak": 60}' || true)
    peak_id=$([ $side = new ] && echo '"mfu_peak": "bf16_dot", ' || true)  # the old build's JSON has no id
    cat > "$work/stub-$side" <<STUB
#!/usr/bin/env bash
echo $side >> "$work/stub-turns"
while [ \$# -gt 0 ]; do [ "\$1" = --json ] && json=\$2; shift; done
echo '{"training": [{"model": "gpt2", "size": "train", "ms_per_step": $ms, "mfu_percent": 50, $peak_id
  "gemm_gflops_in_step": 100, "gemm_shapes": [{"shape": "8 x 8 x 8 NN", "percent_of_peak": 70}$extra]}]}' > "\$json"
STUB
    chmod +x "$work/stub-$side"
  done
  out=$(python3 "$step_ab" "$work/stub-old" "$work/stub-new" --rounds 3 --steps 1 2>&1) || fail "step_ab.py: $out"
  [ "$(tr '\n' ' ' < "$work/stub-turns")" = "old new new old old new " ] \
    || fail "step_ab.py: the turns should alternate: $(tr '\n' ' ' < "$work/stub-turns")"
  grep -q '^gpt2 train: time new / old 0.500 \[0.500-0.500\]' <<<"$out" || fail "step_ab.py: the ratio should be 0.500: $out"
  grep -qE '^  ms/step +100.0 \[ 100.0- 100.0\] +50.0 \[  50.0-  50.0\]' <<<"$out" || fail "step_ab.py: ms/step row: $out"
  grep -qE '^  9 x 9 x 9 TN +- +60.0 \[' <<<"$out" || fail "step_ab.py: a shape of one side only: $out"
  grep -q '^  peak: old fma, new bf16_dot' <<<"$out" && grep -q 'divide by different peaks' <<<"$out" \
    || fail "step_ab.py: percentages over different peaks not flagged: $out"
  printf '#!/usr/bin/env bash\necho "no such size" >&2; exit 3\n' > "$work/stub-broken"; chmod +x "$work/stub-broken"
  out=$(python3 "$step_ab" "$work/stub-old" "$work/stub-broken" 2>&1) && fail "step_ab.py with a failing binary should fail"
  grep -q 'stub-broken bench .* failed (exit 3)' <<<"$out" && grep -q 'no such size' <<<"$out" \
    || fail "step_ab.py: a failing binary's error: $out"
  # A binary that writes its JSON once only: the second round must not reuse the first's file.
  printf '#!/usr/bin/env bash\n[ -e "%s" ] && exit 0; touch "%s"\nexec "%s" "$@"\n' "$work/once" "$work/once" "$work/stub-old" \
    > "$work/stub-once"; chmod +x "$work/stub-once"
  out=$(python3 "$step_ab" "$work/stub-once" "$work/stub-new" --rounds 2 2>&1) && fail "step_ab.py: a run without JSON should fail"
  grep -q 'stub-once wrote no readable JSON' <<<"$out" || fail "step_ab.py: a run that wrote no JSON: $out"
  out=$(python3 "$step_ab" "$work/no-such-normcore" "$bin" 2>&1) && fail "step_ab.py with a missing binary should fail"
  grep -q "step_ab: $work/no-such-normcore is not an executable file" <<<"$out" || fail "step_ab.py: unclear error: $out"
  if [ "$quick" != 1 ]; then
    out=$(python3 "$step_ab" "$bin" "$bin" --rounds 1 --steps 1 2>&1) || fail "step_ab.py on bench: $out"
    grep -qE '^  2048 x 128 x 128 NN +[0-9.]+ \[' <<<"$out" || fail "step_ab.py on bench: no GEMM shape row: $out"
  fi
else
  echo "cli: bench/step_ab.py not checked: no python3 here (it is a bench tool; normcore does not need Python)"
fi

# 6'''. bench/gemm_openblas.py (bench's GEMM table beside OpenBLAS's sgemm, the two alternating)
#      on stand-ins that log their turn: a normcore whose bench writes two shapes and a peak of
#      200, a timer that fails unless handed those shapes. The first shape's rates change from
#      round to round (normcore 100, 200, 300; OpenBLAS 100, 50, 300: ratios 1, 4, 1), so that
#      rates paired across rounds, or the ratio of the medians (2) instead of the median of the
#      ratios (1), would show; the second's stay at 100 and 25. The turns must alternate, the
#      percentages be of the peak; a failing timer is named. Then one round on this binary and
#      numpy's OpenBLAS, where /usr/bin/python3 has numpy (skipped with a message otherwise).
gemm_openblas="$(dirname "$0")/../bench/gemm_openblas.py"
if command -v python3 > /dev/null; then
  rm -f "$work/stub-turns"
  cat > "$work/stub-gemm" <<STUB
#!/usr/bin/env bash
echo normcore >> "$work/stub-turns"
rates=(100 200 300); rate=\${rates[\$(( \$(grep -c normcore "$work/stub-turns") - 1 ))]}
while [ \$# -gt 0 ]; do [ "\$1" = --json ] && json=\$2; shift; done
echo '{"gemm": [{"m": 64, "k": 32, "n": 16, "layout": "TN", "what": "one", "gflops": '\$rate'},
  {"m": 8, "k": 8, "n": 8, "layout": "NT", "what": "two", "gflops": 100}], "machine": {"fma_peak_gflops": 200}}' > "\$json"
STUB
  cat > "$work/stub-blas" <<STUB
#!/usr/bin/env bash
echo openblas >> "$work/stub-turns"
rates=(100 50 300); rate=\${rates[\$(( \$(grep -c openblas "$work/stub-turns") - 1 ))]}
grep -q '"m": 64, "k": 32, "n": 16, "layout": "TN"' <<<"\$1" || { echo "not the shapes: \$1" >&2; exit 4; }
echo '{"gflops": ['\$rate', 25]}'
STUB
  chmod +x "$work/stub-gemm" "$work/stub-blas"
  out=$(python3 "$gemm_openblas" "$work/stub-gemm" --rounds 3 --timer "$work/stub-blas" 2>&1) || fail "gemm_openblas.py: $out"
  [ "$(tr '\n' ' ' < "$work/stub-turns")" = "normcore openblas openblas normcore normcore openblas " ] \
    || fail "gemm_openblas.py: the turns should alternate: $(tr '\n' ' ' < "$work/stub-turns")"
  grep -qE '^64 x 32 x 16 +TN +one +100.0 \[ 50.0-150.0\] +50.0 \[ 25.0-150.0\] +1.00 \[1.00-4.00\]$' <<<"$out" \
    || fail "gemm_openblas.py: the first shape's row: $out"
  grep -qE '^8 x 8 x 8 +NT +two +50.0 \[ 50.0- 50.0\] +12.5 \[ 12.5- 12.5\] +4.00 \[4.00-4.00\]$' <<<"$out" \
    || fail "gemm_openblas.py: the second shape's row: $out"
  grep -q "^the median of the 2 shapes' median ratios: 2.50$" <<<"$out" || fail "gemm_openblas.py: the overall median: $out"
  rm -f "$work/stub-turns"  # the stand-in normcore's rates start again at its first
  printf '#!/usr/bin/env bash\necho "no BLAS here" >&2; exit 5\n' > "$work/stub-blas-broken"; chmod +x "$work/stub-blas-broken"
  out=$(python3 "$gemm_openblas" "$work/stub-gemm" --timer "$work/stub-blas-broken" 2>&1) \
    && fail "gemm_openblas.py with a failing timer should fail"
  grep -q 'the OpenBLAS timer failed (exit 5)' <<<"$out" && grep -q 'no BLAS here' <<<"$out" \
    || fail "gemm_openblas.py: a failing timer's error: $out"
  if [ "$quick" != 1 ] && /usr/bin/python3 -c 'import numpy' 2> /dev/null; then
    out=$(/usr/bin/python3 "$gemm_openblas" "$bin" --rounds 1 --repeats 1 --coretype detected 2>&1) \
      || fail "gemm_openblas.py on bench and numpy: $out"
    grep -qE '^128 x 2048 x 512 +TN +train: dW, MLP down +[0-9.]+ \[.*\] +[0-9.]+ \[.*\] +[0-9.]+ \[[0-9.]+-[0-9.]+\]$' <<<"$out" \
      || fail "gemm_openblas.py on bench and numpy: no row for train's MLP weight gradient: $out"
  else
    echo "cli: bench/gemm_openblas.py not run on OpenBLAS (quick mode, or no numpy for /usr/bin/python3)"
  fi
else
  echo "cli: bench/gemm_openblas.py not checked: no python3 here (it is a bench tool; normcore does not need Python)"
fi

# 7. experiment isometry at smoke scale writes its CSV, table and plot script.
out=$("$bin" experiment isometry --smoke --out "$work/iso" 2>&1) || fail "experiment isometry --smoke: $out"
grep -q '| relu | 0.733 |' <<<"$out" || fail "experiment isometry: ReLU's beta0 should be 0.733: $out"
[ -s "$work/iso/isometry.csv" ] && [ -s "$work/iso/table.md" ] && [ -s "$work/iso/isometry.gp" ] || fail "experiment isometry: missing outputs"
[ "$(wc -l < "$work/iso/isometry.csv")" -eq 136 ] || fail "experiment isometry: 5 activations x 3 norms x 9 layers + header"
[ "$(wc -l < "$work/iso/floor.csv")" -eq 5 ] || fail "experiment isometry: floor.csv should have 2 widths x 2 batches + header"
[ "$(grep -cE '^\| [a-z]+ \| (none|layernorm|batchnorm) \| 18 \| [0-9]+ \([0-9]+%\) \| [-0-9.e]+ \| [0-9]+ \([0-9]+%\) \| [-0-9.e]+ \|$' <<<"$out")" -eq 15 ] \
  || fail "experiment isometry: Theorem 1's table should have 5 activations x 3 norms, 9 layers x 2 seeds each: $out"
if command -v gnuplot > /dev/null; then
  for p in isometry isometry_normalized floor; do [ -s "$work/iso/$p.png" ] || fail "experiment isometry: no $p.png"; done
fi
expect_error "unknown experiment 'layers'" experiment layers --smoke

# 8. experiment norms at smoke scale, under the protocol: 9 variants tuned on a
#    2 x 2 grid (extended past an edge) on the tuning split of the studies'
#    corpus, then 2 seeds each; every run a `normcore train` command in
#    commands.txt whose rerun gives the same numbers.
"$bin" corpus build --out "$work/corpus-real" > /dev/null 2>&1 || fail "corpus build from the Debian sources"
# NORMCORE_CLI_QUICK=1 leaves out the two studies' smoke runs: under ASan
# they take five minutes, and each is ~100 ordinary `train` runs that
# sections 1-5 already check there.
if [ "$quick" = 1 ]; then
  echo "cli: the norms and dyt studies at smoke scale and bench's GEMM tables skipped (NORMCORE_CLI_QUICK=1; make test runs them)"
else
out=$("$bin" experiment norms --smoke --data "$work/corpus-real" --out "$work/norms" 2>&1) || fail "experiment norms --smoke: $out"
for v in post pre sandwich deepnorm geonorm geonorm-harmonic geonorm-sqrt geonorm-linear geonorm-harmonic-bounded; do
  grep -qE "^\| $v( \((lr|warm-up|lr and warm-up) at the grid's edge\))? \| [0-9.e-]+ \| [0-9]+ \| [0-9.]+ \| [0-9.]+ \[[0-9.]+, [0-9.]+\] \| (baseline|[-+][0-9.]+ \[[-+][0-9.]+, [-+][0-9.]+\]) \| [0-9.]+ \| [0-9.]+ \| [0-9]+ \|$" <<<"$out" \
    || fail "experiment norms: no table row for $v: $out"
done
[ "$(grep -cE '^\| [123]\S* .* \| (reproduced|contradicted|inconclusive) \|$' <<<"$out")" -eq 9 ] \
  || fail "experiment norms: the verdict table should have 9 rows: $out"
tuned=$(($(wc -l < "$work/norms/tuning.csv") - 1))
[ "$tuned" -ge 36 ] || fail "experiment norms: tuning.csv should hold at least 9 x 4 tuning runs, has $tuned"
[ "$(wc -l < "$work/norms/results.csv")" -eq 19 ] && [ "$(wc -l < "$work/norms/chosen.csv")" -eq 10 ] \
  && [ "$(wc -l < "$work/norms/commands.txt")" -eq $((tuned + 18)) ] \
  || fail "experiment norms: results.csv should have 18 runs, chosen.csv 9 variants, commands.txt $tuned + 18 commands"
[ "$(awk -F, '$6 == 1' "$work/norms/tuning.csv" | wc -l)" -eq 9 ] || fail "experiment norms: one chosen setting per variant"
[ "$(wc -l < "$work/norms/curves.csv")" -eq 25 ] || fail "experiment norms: curves.csv should have 24 steps + header"
for p in grad_profile update_profile; do
  [ "$(wc -l < "$work/norms/$p.csv")" -eq 3 ] || fail "experiment norms: $p.csv should have 2 blocks + header"
done
grep -q -- "--eval-split tuning" "$work/norms/commands.txt" && grep -q -- "--eval-split validation" "$work/norms/commands.txt" \
  || fail "experiment norms: tuning runs score on the tuning split, reported runs on the validation split"
last=$(tail -1 "$work/norms/commands.txt" | sed "s|$work/norms/runs/geonorm-harmonic-bounded-seed2|$work/norms-rerun|")
rerun=$(bash -c "$last" 2>&1 | grep '^summary:' | sed -E 's/.*val_loss=([0-9.]+).*/\1/')
listed=$(awk -F, '$1 == "geonorm-harmonic-bounded" && $2 == 2 { printf "%.4f", $5 }' "$work/norms/results.csv")
[ -n "$rerun" ] && [ "$rerun" == "$listed" ] || fail "experiment norms: rerunning commands.txt's last line gave val $rerun, results.csv $listed"
if command -v gnuplot > /dev/null; then
  for p in loss_curves grad_profile update_profile tuning_curves; do [ -s "$work/norms/$p.png" ] || fail "experiment norms: no $p.png"; done
fi
grep -qE '^\| (none|harmonic|sqrt|linear) \| [0-9.]+ \| [0-9.]+ \|$' <<<"$out" || fail "experiment norms: no schedule fit: $out"
# --reuse: the same study again keeps every finished run and writes the same tables.
cp "$work/norms/table.md" "$work/norms-table.md"
out=$("$bin" experiment norms --smoke --data "$work/corpus-real" --out "$work/norms" --reuse 2>&1) || fail "experiment norms --reuse: $out"
[ "$(grep -c '(reused)$' <<<"$out")" -eq $((tuned + 18)) ] || fail "experiment norms --reuse should reuse all $((tuned + 18)) runs: $out"
cmp -s "$work/norms/table.md" "$work/norms-table.md" || fail "experiment norms --reuse should give the same table.md"
expect_error "trains gpt2 or llama" experiment norms --smoke --model vit --data "$work/corpus-real"
expect_error "has the parts placement, ablations and long" experiment norms --smoke --part depth --data "$work/corpus-real"
[ -s "$work/norms/residual_profile.csv" ] || fail "experiment norms: no residual_profile.csv"
# The ablations part: harmonic GeoNorm and five variants, each one flag away from it.
out=$("$bin" experiment norms --smoke --part ablations --data "$work/corpus-real" --out "$work/norms-abl" 2>&1) \
  || fail "experiment norms --part ablations: $out"
[ "$(grep -cE '^\| (radius-1|radius-4sqrtC|sublayer-norm|learnable-step|bounded) \| --geo-[a-z-]+( [0-9.]+)? \| .* \| (lower loss|higher loss|inconclusive) \|$' <<<"$out")" -eq 5 ] \
  || fail "experiment norms --part ablations: the table should have 5 readings: $out"
for f in "--geo-radius 1 " "--geo-radius 22.63 " "--geo-sublayer-norm " "--geo-learnable-step " "--geo-max-angle 0.7854 "; do
  grep -q -- "$f" "$work/norms-abl/commands.txt" || fail "experiment norms --part ablations: no run with $f"
done
# The long part: every run (tuning ones too) logs spikes; grid_spikes.csv has one row per tuning run.
out=$("$bin" experiment norms --smoke --part long --data "$work/corpus-real" --out "$work/norms-long" 2>&1) \
  || fail "experiment norms --part long: $out"
grep -qE '^\| 4\. Post-Norm spikes more than GeoNorm at T = 64 \| .* \| (reproduced|contradicted|inconclusive) \|$' <<<"$out" \
  || fail "experiment norms --part long: no claim 4 row: $out"
[ "$(grep -c -- '--eval-split tuning' "$work/norms-long/commands.txt")" -eq "$(grep -c -- '--eval-split tuning.*--diagnostics\|--diagnostics.*--eval-split tuning' "$work/norms-long/commands.txt")" ] \
  || fail "experiment norms --part long: the tuning runs should log diagnostics"
[ "$(($(wc -l < "$work/norms-long/grid_spikes.csv") - 1))" -eq "$(($(wc -l < "$work/norms-long/tuning.csv") - 1))" ] \
  || fail "experiment norms --part long: grid_spikes.csv should have a row per tuning run"
fi
expect_error "applies to --placement geonorm only" train --placement post --geo-radius 2 --steps 1
expect_error "is not a corpus directory" experiment norms --smoke --data "$work/tiny.txt"

# 9. experiment dyt at smoke scale, on the protocol: 3 models x 5 sizes x (vanilla, DyT,
#    DiffAttn) and Llama's GELU ablation, two size bands tuned apart, 2 seeds; the
#    verdicts, the screening rule scored three ways, held-out saturation per DyT layer.
if [ "$quick" != 1 ]; then
out=$("$bin" experiment dyt --smoke --data "$work/corpus-real" --out "$work/dyt" 2>&1) || fail "experiment dyt --smoke: $out"
[ "$(grep -cE '^\| (gpt2|llama|vit) \| [0-9.]+K? (tokens|images) \| [0-9.]+ \| [0-9.]+ \[' <<<"$out")" -eq 15 ] \
  || fail "experiment dyt: the table should have 15 rows: $out"
[ "$(grep -cE '^\| (gpt2|llama|vit) \| .* \| (reproduced|contradicted|inconclusive) \|$' <<<"$out")" -eq 15 ] \
  || fail "experiment dyt: the claims table should have 5 verdicts per model: $out"
grep -qE "^screening rule 'DyT helps iff held-out saturation >= 0.43': [0-9]+ of 15 " <<<"$out" || fail "experiment dyt: no screening score: $out"
grep -qE "^leave one size out: the fitted rule [0-9]+ of 15 .*, the majority outcome of the other sizes [0-9]+ of 15 " <<<"$out" \
  || fail "experiment dyt: no leave-one-size-out score: $out"
grep -qE "^\| 20K \| [0-9.]+ \[" <<<"$out" || fail "experiment dyt: no ablation row for 20K tokens: $out"
[ "$(wc -l < "$work/dyt/results.csv")" -eq 111 ] && [ "$(wc -l < "$work/dyt/saturation.csv")" -eq 61 ] \
  || fail "experiment dyt: results.csv should have 110 runs and saturation.csv 60 layer rows"
grep -q -- "--train-tokens 200 " "$work/dyt/commands.txt" && grep -q -- "--train-images 64 " "$work/dyt/commands.txt" \
  || fail "experiment dyt: the smallest subsets are missing from commands.txt"
grep -q -- "--attention differential-regime" "$work/dyt/commands.txt" && grep -q -- "--mlp gelu" "$work/dyt/commands.txt" \
  || fail "experiment dyt: the regime study's differential attention or the GELU ablation is missing"
# The study's DyT language models keep the regime study's setting, not train's recipe.
dyt_lm=$(grep -c -- "--model gpt2 .*--norm dyt" "$work/dyt/commands.txt")
[ "$dyt_lm" -gt 0 ] && [ "$(grep -c -- "--model gpt2 .*--norm dyt .*--dyt-alpha-attn 0 --embed-scale 0" "$work/dyt/commands.txt")" -eq "$dyt_lm" ] \
  || fail "experiment dyt: the DyT language models should run with --dyt-alpha-attn 0 --embed-scale 0"

grep -q -- "--train-tokens 600 .*--eval-split tuning" "$work/dyt/commands.txt" \
  && ! grep -q -- "--train-tokens 200 .*--eval-split tuning" "$work/dyt/commands.txt" \
  || fail "experiment dyt: the small band should be tuned at 600 tokens only"
[ -s "$work/dyt/runs/gpt2-dyt-200-seed1/saturation_heldout.csv" ] || fail "experiment dyt: no held-out saturation"
if command -v gnuplot > /dev/null; then
  for p in delta gap saturation screening; do [ -s "$work/dyt/$p.png" ] || fail "experiment dyt: no $p.png"; done
fi
# The DyT language models at the gain they train with, alpha0 tuned with the learning rate.
# Its tokens from a BPE vocabulary that the study trains once, before the runs.
out=$("$bin" experiment dyt --smoke --models gpt2 --dyt-alphas 1,3 --dyt-final-gamma auto --data "$work/corpus-real" \
      --tokenizer "$work/dyt-alphas.bpe" --vocab-size 300 --out "$work/dyt-alphas" 2>&1) || fail "experiment dyt --dyt-alphas 1,3: $out"
[ "$(grep -c "training a BPE vocabulary of 300 tokens" <<<"$out")" -eq 1 ] && [ -s "$work/dyt-alphas.bpe" ] \
  || fail "experiment dyt --tokenizer: the study should train the BPE vocabulary once: $out"
[ "$(grep -c -- "--tokenizer $work/dyt-alphas.bpe " "$work/dyt-alphas/commands.txt")" -eq "$(wc -l < "$work/dyt-alphas/commands.txt")" ] \
  || fail "experiment dyt --tokenizer: every run should use the BPE file: $(head -3 "$work/dyt-alphas/commands.txt")"
grep -q "BPE $work/dyt-alphas.bpe (300 tokens)" "$work/dyt-alphas/runs/gpt2-dyt-200-seed1/train.log" \
  || fail "experiment dyt --tokenizer: the runs' logs should name the BPE tokens"
head -1 "$work/dyt-alphas/tuning.csv" | grep -qx "variant,lr,warmup,option,tuning_loss,chosen" || fail "tuning.csv header"
lrs=$(grep -c "^gpt2-vanilla-small,[0-9.e-]*,[0-9]*,,[0-9.]*,[01]$" "$work/dyt-alphas/tuning.csv")  # vanilla has no option
[ "$lrs" -ge 1 ] || fail "tuning.csv: no vanilla runs without an option: $(cat "$work/dyt-alphas/tuning.csv")"
for a in 1 3; do
  [ "$(grep -c "^gpt2-dyt-small,[0-9.e-]*,[0-9]*,--dyt-alpha $a," "$work/dyt-alphas/tuning.csv")" -eq "$lrs" ] \
    || fail "experiment dyt: alpha0 $a should be tuned at each learning rate: $(cat "$work/dyt-alphas/tuning.csv")"
done
grep -qE "^gpt2-dyt-[0-9K]+,[0-9.e-]+,[0-9]+,--dyt-alpha (1|3)," "$work/dyt-alphas/chosen.csv" || fail "chosen.csv: no alpha0"
grep -q -- "--dyt-final-gamma auto .*--dyt-alpha 3 " "$work/dyt-alphas/commands.txt" || fail "commands.txt: no tuned alpha0"
grep -qE "^\| gpt2-dyt-small \| .* \| --dyt-alpha (1|3) \| " <<<"$out" || fail "the tuning table should show the chosen alpha0: $out"
fi
expect_error "is not a positive number" experiment dyt --smoke --dyt-alphas 1,x
expect_error "unknown model 'bert'" experiment dyt --smoke --models gpt2,bert
expect_error "is not a kind (regime or official)" experiment dyt --smoke --diffattn both --data "$work/corpus-real"
expect_error "is not a corpus directory" experiment dyt --smoke --data "$work/tiny.txt"
expect_error "choose cpu or cuda" experiment dyt --smoke --device tpu
expect_error "flag --vocab-size: 100 is out of range" experiment dyt --smoke --tokenizer "$work/x.bpe" --vocab-size 100

# --train-tokens keeps the first N training tokens, and refuses fewer than one window.
out=$("$bin" train --data "$work/tiny.txt" --train-tokens 100 --steps 1 --batch 2 --seq 16 --layers 1 --width 16 \
      --heads 2 --sample-tokens 0 --run-dir "$work/run-sub" 2>&1) || fail "train --train-tokens: $out"
grep -q ', 100 train / ' <<<"$out" || fail "train --train-tokens 100 should train on 100 tokens: $out"
expect_error "cannot fill one window" train --data "$work/tiny.txt" --train-tokens 10 --seq 16
expect_error "choose one of" experiment isometry --smoke --full

# Numbers out of range, or too large to parse, are refused before anything runs (issue 15, item 10).
expect_error "flag --steps: 99999999999999999999 is too large" train --steps 99999999999999999999
expect_error "flag --width: 99999999999999999999 is too large" train --width 99999999999999999999
expect_error "flag --lr: -1 is out of range" train --lr -1
expect_error "flag --lr: 'nan' is not a finite number" train --lr nan
expect_error "flag --lr: 'inf' is not a finite number" train --lr inf
expect_error "flag --grad-clip: -1 is out of range" train --grad-clip -1
expect_error "flag --warmup: -5 is out of range" train --warmup -5
expect_error "flag --checkpoint-every: -1 is out of range" train --checkpoint-every -1
expect_error "flag --temperature: 'nan' is not a finite number" generate --init "$work/wdir" --temperature nan
expect_error "flag --max-tokens: -5 is out of range" generate --init "$work/wdir" --max-tokens -5
expect_error "flag --batches: 0 is out of range" eval --init "$work/wdir" --batches 0
expect_error "flag --width 32 contradicts" train --resume "$work/split/checkpoint.safetensors" --width 32 --data "$work/tiny.txt" --steps 8

# (capture first: grep -q may exit before the writer finishes, and pipefail would count the SIGPIPE)
help=$("$bin" train --help 2>&1)
grep -q -- "--placement" <<<"$help" || fail "train --help should list --placement"
help=$("$bin" --help 2>&1)
for e in norms dyt isometry tokenize corpus; do grep -qw "$e" <<<"$help" || fail "normcore --help should list $e: $help"; done
help=$("$bin" generate --help 2>&1)
grep -q -- "--top-k .*most likely tokens" <<<"$help" || fail "generate --help: --top-k should speak of tokens: $help"

# 10. generation against the float64 PyTorch reference (tests/data/reference): the greedy
#     continuation's exact bytes with --out, with and without the key/value cache.
ref=tests/data/reference
for model in gpt2_pre gpt2_post llama_gqa; do
  for cache in "" "--no-cache"; do
    "$bin" generate --init "$ref/$model" --prompt "It is a tr" --temperature 0 --max-tokens 32 $cache \
      --out "$work/g.bin" > "$work/g.txt" 2> "$work/g.err" || fail "generate $model $cache: $(cat "$work/g.err")"
    cmp -s "$work/g.bin" "$ref/$model/generate_10.bin" || fail "generate $model $cache: not the reference's greedy continuation"
    grep -qE '^generated 32 tokens in [0-9.]+ s: [0-9.]+ tokens/s' "$work/g.err" || fail "generate: no tokens/s line: $(cat "$work/g.err")"
  done
done
# --profile: per token one product per linear layer (4 a block, 2 blocks) and one for the head, one
# attention per block, two norms per block and the final one; the text as without it.
out=$("$bin" generate --init "$ref/gpt2_pre" --prompt $'\n' --temperature 0 --max-tokens 6 --profile --out "$work/gp.bin" 2>&1 >/dev/null) \
  || fail "generate --profile: $out"
grep -qE '^  gemm +[0-9.]+ us +9\.0 calls' <<<"$out" || fail "generate --profile: expected 9 products a token: $out"
grep -qE '^  attention +[0-9.]+ us +2\.0 calls' <<<"$out" || fail "generate --profile: expected 2 attention calls a token: $out"
grep -qE '^  norm +[0-9.]+ us +5\.0 calls' <<<"$out" || fail "generate --profile: expected 5 norms a token: $out"
grep -qE '^  outside the kernels: [0-9.]+ us \([0-9]+% of the time; [0-9.]+ us per kernel call\)' <<<"$out" \
  || fail "generate --profile: no line for the time outside the kernels: $out"
"$bin" generate --init "$ref/gpt2_pre" --prompt $'\n' --temperature 0 --max-tokens 6 --out "$work/gq.bin" > /dev/null 2>&1
cmp -s "$work/gp.bin" "$work/gq.bin" || fail "generate --profile changed the text"
"$bin" generate --init "$ref/gpt2_pre" --prompt $'\n' --temperature 0 --max-tokens 32 --out "$work/g1.bin" > "$work/g1.txt" 2>/dev/null \
  || fail "generate from a one-byte prompt"
cmp -s "$work/g1.bin" "$ref/gpt2_pre/generate_1.bin" || fail "generate from a one-byte prompt: not the reference's continuation"
# What it printed is valid UTF-8 with no raw control bytes (the model emits byte 0x9a, shown as U+FFFD).
iconv -f UTF-8 -t UTF-8 "$work/g1.txt" > /dev/null 2>&1 || fail "generate printed invalid UTF-8"
LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$work/g1.txt" && fail "generate printed raw control bytes"
grep -q $'\xef\xbf\xbd' "$work/g1.txt" || fail "generate should show the invalid bytes as U+FFFD"
# The same seed samples the same text with and without the cache.
a=$("$bin" generate --init "$ref/llama_gqa" --prompt "Hi" --max-tokens 60 --seed 4 2>/dev/null)
b=$("$bin" generate --init "$ref/llama_gqa" --prompt "Hi" --max-tokens 60 --seed 4 --no-cache 2>/dev/null)
[ "$a" == "$b" ] || fail "generate: sampling with and without the cache differs"

# 11. a tokenizer or flag that does not fit the model is refused before anything runs.
expect_error "the tokenizer has 50257 tokens, the model's vocabulary is 256" generate --init "$ref/gpt2_pre" --tokenizer tests/data/gpt2
expect_error "the tokenizer has 50257 tokens, the model's vocabulary is 256" eval --init "$ref/gpt2_pre" --tokenizer tests/data/gpt2 --data "$work/tiny.txt"
expect_error "the tokenizer has 50257 tokens, the model's vocabulary is 256" train --init "$ref/gpt2_pre" --tokenizer tests/data/gpt2 --data "$work/tiny.txt" --seq 16
expect_error "flag --placement geonorm contradicts $ref/gpt2_pre/config.json, which says pre" generate --init "$ref/gpt2_pre" --placement geonorm
expect_error "flag --kv-heads 4 contradicts" train --init "$ref/llama_gqa" --kv-heads 4 --data "$work/tiny.txt"
expect_error "flag --layers 3 contradicts" train --resume "$work/split/checkpoint.safetensors" --layers 3 --data "$work/tiny.txt" --steps 8
"$bin" generate --init "$ref/gpt2_pre" --placement pre --model gpt2 --max-tokens 2 > /dev/null 2>&1 || fail "flags that agree with config.json are fine"

# 12. token files: tokenize once, then train and eval read the file (the same batches as the text).
out=$("$bin" tokenize --data "$work/tiny.txt" --out "$work/tiny.tok" 2>&1) || fail "tokenize: $out"
grep -qE "^tokenize: $(wc -c < "$work/tiny.txt") tokens \(bytes, 2 bytes each\)" <<<"$out" || fail "tokenize: no summary: $out"
[ "$(head -c 8 "$work/tiny.tok")" == "NCTOKENS" ] || fail "tokenize: no magic"
[ "$(wc -c < "$work/tiny.tok")" -eq $((32 + 2 * $(wc -c < "$work/tiny.txt"))) ] || fail "tokenize: wrong size"
for data in "$work/tiny.txt" "$work/tiny.tok"; do
  "$bin" train --data "$data" --no-shuffle --steps 3 --batch 2 --seq 16 --layers 1 --width 16 --heads 2 --eval-batches 1 \
    --sample-tokens 0 --run-dir "$work/tok-$(basename "$data")" > "$work/out.txt" 2>&1 || fail "train --data $data: $(cat "$work/out.txt")"
done
cmp -s <(cut -d, -f2,3 "$work/tok-tiny.txt/train_log.csv") <(cut -d, -f2,3 "$work/tok-tiny.tok/train_log.csv") \
  || fail "training on the token file should give the losses of training on the text"
out=$("$bin" eval --init "$work/wdir" --data "$work/tiny.tok" --seq 16 --batch 2 --batches 2 2>&1)
grep -qE "^eval: loss=[0-9.]+ nats/token" <<<"$out" || fail "eval --data token file: $out"
"$bin" tokenize --tokenizer tests/data/gpt2 --data "$work/tiny.txt" --out "$work/gpt2.tok" > /dev/null 2>&1 || fail "tokenize with GPT-2's BPE"
expect_error "written with a vocabulary of 50257 tokens, the tokenizer (bytes) has 256" train --data "$work/gpt2.tok" --steps 1
head -c 40 "$work/tiny.tok" > "$work/cut.tok"
expect_error "bytes of ids follow it" train --data "$work/cut.tok" --steps 1
expect_error "give the output file with --out" tokenize --data "$work/tiny.txt"

# 13. the progress line shows an instantaneous rate and the MFU, --sample-every samples as it
#     goes, and resuming with another --steps warns that the schedule changes.
out=$("$bin" train --data "$work/tiny.txt" --steps 4 --batch 2 --seq 16 --layers 1 --width 16 --heads 2 --eval-every 0 \
      --eval-batches 1 --sample-tokens 5 --sample-every 2 --sample-every-tokens 8 --run-dir "$work/mfu" 2>&1) || fail "train --sample-every: $out"
grep -qE 'tok/s \(avg [0-9]+\) \| MFU [0-9.]+%' <<<"$out" || fail "train: no instantaneous tok/s and MFU in the progress line: $out"
grep -qE '^throughput: [0-9]+ tok/s x .* FLOPs/token = [0-9.]+ GFLOP/s, MFU [0-9.]+% of the [0-9.]+ GFLOP/s float32 FMA peak' <<<"$out" \
  || fail "train: no throughput line: $out"
grep -q -- '--- sample at step 2 ' <<<"$out" || fail "train --sample-every 2: no sample at step 2: $out"
out=$("$bin" train "${common[@]}" --steps 12 --resume "$work/split/checkpoint.safetensors" --run-dir "$work/split2" 2>&1) \
  || fail "resume with other --steps: $out"
grep -q "warning: the checkpoint's run was scheduled for 8 steps and --steps is 12" <<<"$out" || fail "resume: no schedule warning: $out"

# 15. nothing good is lost (issue 15): a non-finite loss stops the run before it overwrites
#     anything, no NaN weights are ever written, --save DIR/ renames its two files together,
#     the log holds every step, and bad checkpoint metadata is refused.
nan_file() {  # nan_file SRC DST: DST is SRC with its first weight replaced by a NaN
  cp "$1" "$2"
  local len; len=$(od -An -t u8 -N8 "$2" | tr -d ' ')
  printf '\x00\x00\xc0\x7f' | dd of="$2" bs=1 seek=$((8 + len)) conv=notrunc status=none
}
nan_file "$work/w.safetensors" "$work/nan.safetensors"
cp "$work/w.safetensors" "$work/keep.safetensors"; cp "$work/keep.safetensors" "$work/keep.orig"
small=(--model llama --layers 1 --width 16 --heads 2 --data "$work/tiny.txt" --batch 2 --seq 16 --eval-batches 1 --sample-tokens 0)
"$bin" train "${small[@]}" --steps 3 --run-dir "$work/nanrun" > /dev/null 2>&1 || fail "a good run for the NaN test"
cp "$work/nanrun/checkpoint.safetensors" "$work/nanrun.orig"
expect_error "step 1: the training loss is nan" train "${small[@]}" --steps 3 --init "$work/nan.safetensors" \
  --save "$work/keep.safetensors" --run-dir "$work/nanrun"
cmp -s "$work/keep.safetensors" "$work/keep.orig" || fail "a NaN run overwrote the --save file"
cmp -s "$work/nanrun/checkpoint.safetensors" "$work/nanrun.orig" || fail "a NaN run overwrote the checkpoint"
expect_error "refusing to write" train "${small[@]}" --steps 3 --init "$work/nan.safetensors" --skip-nonfinite \
  --save "$work/keep.safetensors" --run-dir "$work/nanrun"
grep -q "step 2: skipped, the training loss is nan" <<<"$out" || fail "--skip-nonfinite should report the skipped steps: $out"
cmp -s "$work/keep.safetensors" "$work/keep.orig" && cmp -s "$work/nanrun/checkpoint.safetensors" "$work/nanrun.orig" \
  || fail "--skip-nonfinite with NaN weights overwrote a good file"
# --save DIR/: a failed weights write leaves the old pair as it was (the temporary is made unwritable).
cp -r "$work/wdir" "$work/pair"; cp "$work/pair/config.json" "$work/pair.config.orig"
mkdir -p "$work/pair/model.safetensors.new.tmp"
expect_error "cannot write" train --model gpt2 --layers 1 --width 32 --heads 2 --data "$work/tiny.txt" --steps 1 --batch 2 \
  --seq 16 --eval-batches 1 --sample-tokens 0 --run-dir "$work/pairrun" --save "$work/pair/"
cmp -s "$work/pair/config.json" "$work/pair.config.orig" || fail "a failed --save DIR/ replaced config.json"
[ ! -e "$work/pair/config.json.new" ] || fail "a failed --save DIR/ left config.json.new behind"
"$bin" generate --init "$work/pair" --max-tokens 2 > /dev/null 2>&1 || fail "the old pair should still load"
# The log: a row per step as it goes; on resume the rows past the checkpoint go, the header stays;
# a stale temporary from a killed run is removed.
"$bin" train "${common[@]}" --stop-after 4 --run-dir "$work/logrun" > /dev/null 2>&1 || fail "log run"
echo "5,9.9,,0.001,1.0,0.5" >> "$work/logrun/train_log.csv"   # a step the killed run logged after its checkpoint
echo "junk" > "$work/logrun/checkpoint.safetensors.tmp"
out=$("$bin" train "${common[@]}" --resume "$work/logrun/checkpoint.safetensors" --run-dir "$work/logrun" 2>&1) || fail "log resume: $out"
grep -q "removed $work/logrun/checkpoint.safetensors.tmp" <<<"$out" || fail "the stale temporary should be removed: $out"
[ ! -e "$work/logrun/checkpoint.safetensors.tmp" ] || fail "the stale temporary is still there"
[ "$(cut -d, -f1 "$work/logrun/train_log.csv" | tr '\n' ' ')" == "step 1 2 3 4 5 6 7 8 " ] \
  || fail "the resumed log should hold the header and steps 1-8 once: $(cut -d, -f1 "$work/logrun/train_log.csv" | tr '\n' ' ')"
cmp -s <(cut -d, -f1,2 "$work/straight/train_log.csv") <(cut -d, -f1,2 "$work/logrun/train_log.csv") \
  || fail "the resumed log's losses should be the uninterrupted run's"
# Checkpoint metadata is checked: a step that is not a number, negative, or past 10^15.
set_meta() {  # set_meta FILE KEY VALUE: rewrite one metadata string of a safetensors file
  perl -e 'open(F, "<:raw", $ARGV[0]) or die; local $/; my $b = <F>; close F;
    my $n = unpack("Q<", substr($b, 0, 8)); my $h = substr($b, 8, $n); my $d = substr($b, 8 + $n);
    $h =~ s/"$ARGV[1]":"[^"]*"/"$ARGV[1]":"$ARGV[2]"/ or die "no $ARGV[1]"; $h =~ s/ +$//;
    $h .= " " x ((8 - length($h) % 8) % 8);
    open(F, ">:raw", $ARGV[0]) or die; print F pack("Q<", length($h)), $h, $d; close F;' "$@"
}
for v in abc -3 18446744073709551615; do
  cp "$work/split/checkpoint.safetensors" "$work/meta.safetensors"
  set_meta "$work/meta.safetensors" step "$v" || fail "set_meta"
  expect_error "metadata field step is '$v', not a whole number from 0 to 1000000000000000" \
    train "${common[@]}" --resume "$work/meta.safetensors" --run-dir "$work/metarun"
done

# 14. the README's first program builds with the README's own line, CUDA backend or not, and runs.
awk '/^## A first program/{f=1} f && /^```cpp/{c=1; next} c && /^```/{exit} c' README.md > "$work/prog.cpp"
line=$(awk '/^## A first program/{f=1} f && /^```sh/{c=1; next} c && /^```/{exit} c' README.md)
line=${line//build\//${1:-build}/}
line=${line/#g++/$(cat "${1:-build}/compiler" 2>/dev/null || echo g++)}  # the library's own compiler
line=${line//prog.cpp/$work/prog.cpp}
line=${line//-o prog/-o $work/prog}
eval "$line" > "$work/prog.log" 2>&1 || fail "the README's first program does not build with: $line: $(cat "$work/prog.log")"
"$work/prog" > "$work/prog.out" 2>&1 && [ -s "$work/prog.out" ] || fail "the README's first program did not run: $(cat "$work/prog.out")"

# 15. the studies' corpus: built from (here: tiny) sources, the same bytes twice,
# and train reads its splits, evaluating on the one asked for.
mkdir -p "$work/csrc/docs" "$work/csrc/fortunes"
for i in $(seq 1 400); do printf 'Word%d \\Word\\, n.\n   Meaning number %d of many.\n   [1913 Webster]\n\n' $i $i; done \
  | gzip > "$work/csrc/gcide.dict.dz"
printf 'os\n==\n\nThe os module.\n' > "$work/csrc/docs/os.rst.txt"
printf 'Look before you leap.\n%%\nHaste makes waste.\n' > "$work/csrc/fortunes/wisdom"
csrc=(--dictionary "$work/csrc/gcide.dict.dz" --python-docs "$work/csrc/docs" --fortunes "$work/csrc/fortunes")
"$bin" corpus build "${csrc[@]}" --out "$work/corpus" --tuning-fraction 0.2 --validation-fraction 0.2 > "$work/corpus.log" 2>&1 \
  || fail "corpus build: $(cat "$work/corpus.log")"
"$bin" corpus build "${csrc[@]}" --out "$work/corpus2" --tuning-fraction 0.2 --validation-fraction 0.2 > /dev/null 2>&1
for s in train tuning validation; do cmp -s "$work/corpus/$s.txt" "$work/corpus2/$s.txt" || fail "corpus build should write the same $s.txt twice"; done
grep -q '"validation"' "$work/corpus/corpus.json" || fail "corpus.json should describe the splits"
for split in tuning validation; do
  out=$("$bin" train --data "$work/corpus" --eval-split $split --eval-tokens 400 --steps 2 --batch 2 --seq 16 --layers 1 \
    --width 16 --heads 2 --sample-tokens 0 --run-dir "$work/corpus-run-$split" 2>&1) || fail "train on the corpus ($split): $out"
  grep -qE "^data: $work/corpus, bytes, [0-9]+ train / [0-9]+ $split tokens" <<<"$out" || fail "train should name the $split split: $out"
  grep -qE "^evaluation: 26 windows of 16 tokens spread over the $split tokens" <<<"$out" || fail "train should spread 400 tokens: $out"
done
expect_error "has its own validation split" train --data "$work/corpus" --val-fraction 0.2 --steps 1
"$bin" train --data "$work/corpus" --steps 2 --batch 2 --seq 16 --layers 1 --width 16 --heads 2 --sample-tokens 0 \
  --eval-tokens 400 --run-dir "$work/corpus-run" --save "$work/corpus-model/" > "$work/corpus-run.log" 2>&1 || fail "train --save on the corpus"
# train's final validation (400 tokens: 13 batches of 2 x 16, spread) and eval's on the same windows agree.
trained=$(sed -nE 's/^summary: .*val_loss=([0-9.]+).*/\1/p' "$work/corpus-run.log")
evaluated=$("$bin" eval --init "$work/corpus-model" --data "$work/corpus" --seq 16 --batch 2 --batches 13 2>&1 | sed -nE 's/^eval: loss=([0-9.]+).*/\1/p')
[ -n "$trained" ] && [ "$trained" == "$evaluated" ] || fail "train's validation loss $trained and eval's $evaluated on the same windows differ"
for split in validation tuning train; do
  out=$("$bin" eval --init "$work/corpus-model" --data "$work/corpus" --split $split --seq 16 --batch 2 --batches 3 2>&1)
  grep -qE "^eval: loss=[0-9.]+ nats/token .* over 6 windows of 16 tokens" <<<"$out" || fail "eval on the $split split: $out"
done
expect_error "choose one with --split" eval --init "$work/corpus-model" --data "$work/corpus" --val-fraction 0.5
expect_error "flag --split: 'test' is not a split" eval --init "$work/corpus-model" --data "$work/corpus" --split test
expect_error "applies to text models" train --model vit --eval-tokens 100 --steps 1
expect_error "flag --eval-split: 'test' is not a split" train --data "$work/corpus" --eval-split test --steps 1
expect_error "more than the 5000 of each Fashion-MNIST split" train --model vit --eval-split tuning --eval-batches 700 --batch 8 --steps 1
expect_error "dict-gcide" corpus build --dictionary "$work/none.dz" --out "$work/corpus3"

# tools/chapter_outputs.sh: a marked chapter block must match its program's
# output (within the stated tolerance); `update` takes the program's output.
mkdir -p "$work/docs/tutorials"
printf 'header\nloss 2.5000 after 10 steps\n12.3 ms per step\n' > "$work/docs/tutorials/prog.log"
printf 'Text.\n\n<!-- output: prog 2-2 tol=1e-3 -->\n```\nloss 2.5010 after 10 steps\n```\n<!-- output: prog 3-3 timing -->\n```\n9.9 ms per step\n```\n' > "$work/docs/ch.md"
tools/chapter_outputs.sh check "$work/docs" "$work/docs/ch.md" > /dev/null 2>&1 \
  || fail "chapter_outputs: 2.5010 is within tol 1e-3 of 2.5000, and a timing block is not compared"
sed -i 's/tol=1e-3/tol=1e-4/' "$work/docs/ch.md"
out=$(tools/chapter_outputs.sh check "$work/docs" "$work/docs/ch.md" 2>&1) && fail "chapter_outputs: 2.5010 vs 2.5000 at tol 1e-4 should fail"
grep -qF 'at "2.5010" (program: "2.5000"' <<<"$out" || fail "chapter_outputs: the message should name both numbers: $out"
sed -i 's/tol=1e-4/tol=1e-3/; s/ms per step/ms a step/' "$work/docs/ch.md"
tools/chapter_outputs.sh check "$work/docs" "$work/docs/ch.md" > /dev/null 2>&1 || fail "chapter_outputs: a timing block is one machine's, not compared"
sed -i 's/after 10 steps/after ten steps/' "$work/docs/ch.md"
tools/chapter_outputs.sh check "$work/docs" "$work/docs/ch.md" > /dev/null 2>&1 && fail "chapter_outputs: the words of a block must match"
tools/chapter_outputs.sh update "$work/docs" "$work/docs/ch.md" > /dev/null 2>&1 || fail "chapter_outputs update"
grep -qx 'loss 2.5000 after 10 steps' "$work/docs/ch.md" && grep -qx '12.3 ms per step' "$work/docs/ch.md" \
  && tools/chapter_outputs.sh check "$work/docs" "$work/docs/ch.md" > /dev/null 2>&1 || fail "chapter_outputs: update should take the program's lines"

if [ $failures -eq 0 ]; then echo "cli: all checks passed"; else echo "cli: $failures check(s) failed"; exit 1; fi
