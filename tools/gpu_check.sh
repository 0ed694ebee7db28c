#!/usr/bin/env bash
# gpu_check.sh [--dry-run] OUT_DIR — the one run on a lent GPU machine.
#
# That machine (an H200, CUDA 13, PyTorch, 16 cores) has no Debian packages
# and no network, so nothing is built there: `make gpu-bundle` builds
# build/gpu/ here first, and the run carries it along. Every step runs even
# when an earlier one failed (a first call must also be the only call), and
# reports its exit status in OUT_DIR/summary.txt:
#
#   1. the machine: nvidia-smi, the bundle's libraries (ldd), and
#      LD_LIBRARY_PATH set to where PyTorch's wheels or /usr/local/cuda keep
#      cuBLAS (normcore opens it at its first product on the GPU; a case of
#      step 2 opens it and finds every function the backend calls);
#   2. the [cuda] parity tests (tests/test_cuda.cpp, tests/test_cuda_shapes.cpp);
#   3. training on cuda against the same run on the CPU: gpt2 and llama on a
#      text file written here, vit on a generated image folder, 200 steps,
#      --no-shuffle, the same seed; final train loss compared (tolerance 2%);
#      gpt2 with --precision bf16 and fp16 on cuda against the CPU's float32
#      (tolerance 3%); `normcore memory --device cuda`'s predicted peak
#      against the cuda runs' measured one (fp32 and bf16, tolerance 10%);
#   4. `normcore bench --device cuda` at GPT-2 small and 124M, float32 and
#      with bf16/fp16 operands;
#   5. PyTorch eager on the same steps (bench/compare_pytorch.py --device cuda),
#      fp32 with TF32 off and on (normcore: NORMCORE_TF32=1);
#   6. interop with transformers (tools/hf_interop.py): GPT2LMHeadModel,
#      LlamaForCausalLM (GQA) and ViTForImageClassification with random
#      weights, save_pretrained, loaded by `normcore --init DIR` on the GPU,
#      logits compared tensor by tensor;
#   7. chapter 10's kernel versions (tutorials/10_cuda: the sum and attention,
#      version 1 beside version 2, checked against the CPU in float64, timed;
#      its table is copied into the summary) and exercise 10's reference
#      solution (exercises/10_sum_v2).
# Then OUT_DIR holds summary.txt and logs.tar.gz (a run returns at most 8 files).
#
# --dry-run runs the same script on this machine's CPU with the release build
# (build/): the CUDA steps are skipped with a message, the rest runs at a
# tiny scale. CI runs it (make gpu-check-dry-run) so the script cannot rot.
set -uo pipefail
cd "$(dirname "$0")/.."
dry=0
if [ "${1:-}" = "--dry-run" ]; then dry=1; shift; fi
out="${1:?usage: tools/gpu_check.sh [--dry-run] OUT_DIR}"
mkdir -p "$out/logs"
summary="$out/summary.txt"
: > "$summary"
bin=build/gpu; [ $dry -eq 1 ] && bin=build
device=cuda; [ $dry -eq 1 ] && device=cpu
steps=200; [ $dry -eq 1 ] && steps=4
failures=0
say() { echo "$*" | tee -a "$summary"; }
run() {  # run NAME command...: output to logs/NAME.log, status to the summary, never stops the script
  local name="$1"; shift
  local start; start=$(date +%s)
  "$@" > "$out/logs/$name.log" 2>&1
  local rc=$?
  say "$(printf '%-22s exit %3d  %4d s' "$name" "$rc" "$(( $(date +%s) - start ))")"
  [ $rc -eq 0 ] || { failures=$((failures + 1)); tail -n 15 "$out/logs/$name.log" | sed 's/^/    | /' | tee -a "$summary"; }
  return $rc
}
skip() { say "$(printf '%-22s skipped: %s' "$1" "$2")"; }
# same_loss LABEL LOG_A LOG_B TOLERANCE: the two runs' final training losses
# (their summary lines) agree within TOLERANCE, relative to the first.
same_loss() {
  local a b
  a=$(sed -nE 's/^summary: .*train_loss=([0-9.na-]+) .*/\1/p' "$out/logs/$2.log")
  b=$(sed -nE 's/^summary: .*train_loss=([0-9.na-]+) .*/\1/p' "$out/logs/$3.log")
  if python3 -c "import sys; a, b, t = map(float, sys.argv[1:4]); sys.exit(0 if abs(a - b) <= t * abs(a) else 1)" "$a" "$b" "$4" 2>/dev/null; then
    say "    $1: final train loss $a and $b: within $4"
  else
    say "    $1: final train loss '$a' and '$b': NOT within $4"; failures=$((failures + 1))
  fi
}

say "gpu_check $( [ $dry -eq 1 ] && echo '(dry run, CPU)' ) $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"

# 1. The machine and the bundle's libraries.
if [ $dry -eq 0 ]; then
  run nvidia-smi nvidia-smi
  # cuBLAS: from PyTorch's nvidia-* wheels, or the toolkit's usual place (normcore opens it with
  # dlopen at the first product on the GPU, so ldd does not list it; a case of the [cuda] suite opens it).
  libs=$(python3 - <<'PY' 2>/dev/null
import glob, os, site
dirs = []
for base in site.getsitepackages() + [site.getusersitepackages()]:
    dirs += glob.glob(os.path.join(base, "nvidia", "*", "lib"))
print(":".join(d for d in dirs if glob.glob(os.path.join(d, "libcublas*.so*"))))
PY
)
  for d in /usr/local/cuda/lib64 /usr/local/cuda-13*/lib64 /usr/lib/x86_64-linux-gnu; do [ -d "$d" ] && libs="$libs:$d"; done
  export LD_LIBRARY_PATH="${libs#:}:${LD_LIBRARY_PATH:-}"
  say "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
fi
[ -x "$bin/normcore" ] && [ -x "$bin/tests/run_tests" ] || say "the binaries are missing from $bin/ (make $( [ $dry -eq 1 ] && echo all || echo gpu-bundle ) first)"
run libraries bash -c "ldd $bin/normcore && ! ldd $bin/normcore | grep -q 'not found'"

# 2. The CUDA parity suite (on the CPU it skips, saying why).
run cuda_tests "$bin/tests/run_tests" "[cuda]" --durations yes

# 3. Training on the device against the CPU, same seed, same batches.
data="$out/data"
mkdir -p "$data"
cat README.md tutorials/*.md > "$data/text.txt"
python3 - "$data/images" <<'PY' > "$out/logs/make_images.log" 2>&1
# A small image folder: 2 classes of 8 x 8 RGB PNGs (stripes and checks),
# written with the standard library only.
import os, struct, sys, zlib
root = sys.argv[1]
def png(path, pixels, w, h):
    rows = b"".join(b"\x00" + bytes(pixels[y * w * 3:(y + 1) * w * 3]) for y in range(h))
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
for c, name in enumerate(["stripes", "checks"]):
    os.makedirs(os.path.join(root, name), exist_ok=True)
    for i in range(24):
        px = []
        for y in range(8):
            for x in range(8):
                on = (y % 2 == 0) if c == 0 else ((x + y) % 2 == 0)
                v = (200 if on else 40) + (i * 7 + x * 3) % 30
                px += [v, (v + 50 * c) % 256, 255 - v]
        png(os.path.join(root, name, f"{i:02d}.png"), px, 8, 8)
PY
common=(--steps "$steps" --no-shuffle --seed 5 --eval-every 0 --eval-batches 2 --sample-tokens 0 --layers 2 --width 64 --heads 4)
for model in gpt2 llama vit; do
  if [ "$model" = vit ]; then
    margs=(--model vit --data "$data/images" --image-size 8 --patch 4 --channels 3 --batch 8 --val-fraction 0.25)
  else
    margs=(--model "$model" --data "$data/text.txt" --seq 64 --batch 8)
  fi
  run "train_${model}_cpu" "$bin/normcore" train "${margs[@]}" "${common[@]}" --device cpu --run-dir "$out/runs/$model-cpu"
  if [ $dry -eq 1 ]; then skip "train_${model}_cuda" "dry run"; continue; fi
  run "train_${model}_cuda" "$bin/normcore" train "${margs[@]}" "${common[@]}" --device cuda --run-dir "$out/runs/$model-cuda"
  same_loss "$model" "train_${model}_cpu" "train_${model}_cuda" 0.02
done

# 3'. Mixed precision on the device (cublasGemmEx with 16-bit operands): GPT-2
# with bf16 and fp16 operands against the float32 CPU run (tolerance 3%).
for p in bf16 fp16; do
  if [ $dry -eq 1 ]; then skip "train_gpt2_cuda_$p" "dry run"; continue; fi
  run "train_gpt2_cuda_$p" "$bin/normcore" train --model gpt2 --data "$data/text.txt" --seq 64 --batch 8 "${common[@]}" \
    --device cuda --precision "$p" --run-dir "$out/runs/gpt2-cuda-$p"
  same_loss "gpt2 --precision $p (cpu fp32 vs cuda $p)" train_gpt2_cpu "train_gpt2_cuda_$p" 0.03
done

# 3''. Memory: `normcore memory`'s prediction (a dry run on the meta device,
# no GPU needed) beside the peak the device's training run measured, GPT-2
# in float32 and with bf16 operands. Within 10% (the CUDA kernels' own
# scratch is not in the prediction).
for p in fp32 bf16; do
  trained="train_gpt2_$device"; [ "$p" = bf16 ] && trained="train_gpt2_cuda_bf16"
  if [ ! -f "$out/logs/$trained.log" ]; then skip "memory_gpt2_$p" "no $trained run to compare with"; continue; fi
  run "memory_gpt2_$p" "$bin/normcore" memory --model gpt2 --data "$data/text.txt" --seq 64 --batch 8 "${common[@]}" \
    --device "$device" --precision "$p" || continue
  predicted=$(awk '$1 == "peak" { print $2 }' "$out/logs/memory_gpt2_$p.log")
  measured=$(sed -n 's/^memory: peak \([0-9.]*\) MiB.*/\1/p' "$out/logs/$trained.log")
  if python3 -c "import sys; p, m = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if abs(p - m) <= 0.10 * m else 1)" "$predicted" "$measured" 2>/dev/null; then
    say "    gpt2 $p on $device: predicted peak $predicted MiB, measured $measured: within 10%"
  else
    say "    gpt2 $p on $device: predicted peak '$predicted' MiB, measured '$measured': NOT within 10%"; failures=$((failures + 1))
  fi
done

# 4-5. Speed: normcore on the device, PyTorch eager on the same steps.
if [ $dry -eq 1 ]; then
  skip bench_cuda "dry run"
  skip pytorch_cuda "dry run"
else
  run bench_cuda "$bin/normcore" bench --device cuda --skip-gemm --models gpt2 --sizes small,124m --steps 10 --json "$out/logs/bench_cuda.json"
  run bench_cuda_bf16 "$bin/normcore" bench --device cuda --skip-gemm --models gpt2 --sizes small,124m --steps 10 --precisions fp32,bf16,fp16 --json "$out/logs/bench_cuda_bf16.json"
  NORMCORE_TF32=1 run bench_cuda_tf32 "$bin/normcore" bench --device cuda --skip-gemm --models gpt2 --sizes small,124m --steps 10 --json "$out/logs/bench_cuda_tf32.json"
  if python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
    run pytorch_cuda python3 bench/compare_pytorch.py --device cuda --models gpt2 --sizes small,124m --steps 10 --json "$out/logs/pytorch_cuda.json"
  else
    skip pytorch_cuda "PyTorch with CUDA is not importable"
  fi
fi

# 6. Interop with transformers' own models.
if python3 -c "import transformers, safetensors, torch" 2>/dev/null; then
  run hf_interop python3 tools/hf_interop.py --normcore "$bin/normcore" --device "$device" --dir "$out/hf"
else
  skip hf_interop "transformers, safetensors or torch is not importable"
fi

# 7. Chapter 10's kernel versions beside their checker, and exercise 10.
run kernel_versions bash -c "cd $bin/tutorials && ./10_cuda"
grep -A6 "^kernel version" "$out/logs/kernel_versions.log" | sed 's/^/    /' | tee -a "$summary"
if [ -x "$bin/exercises/10_sum_v2/solution" ]; then
  run exercise_10 "$bin/exercises/10_sum_v2/solution"
  sed 's/^/    /' "$out/logs/exercise_10.log" | tee -a "$summary"
else
  skip exercise_10 "not built (a CUDA exercise; the CPU build has none)"
fi

say "gpu_check: $failures step(s) failed"
tar -czf "$out/logs.tar.gz" -C "$out" logs runs 2>/dev/null
rm -rf "$out/logs" "$out/runs" "$out/data" "$out/hf"
[ $failures -eq 0 ]
