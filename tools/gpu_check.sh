#!/usr/bin/env bash
# gpu_check.sh LOG_DIR — the check to run on a machine with an NVIDIA GPU.
#
#   1. builds normcore with the CUDA backend for sm_90 only (fast) in build/gpu,
#   2. runs the CUDA parity tests (tests/test_cuda.cpp) and the CLI on cuda,
#   3. runs `normcore bench --device cuda` for GPT-2 at the 124M shape
#      (L12 C768 T1024 B8, vocab 50257) and at the `small` config,
#   4. when PyTorch with CUDA is importable there, times the same GPT-2 steps
#      in PyTorch eager on the same GPU (bench/compare_pytorch.py --device cuda)
#      and prints the ratio.
# Everything it prints also goes to LOG_DIR (created if missing). Meant to
# finish in well under 8 minutes on an H200.
set -uo pipefail
cd "$(dirname "$0")/.."
logs="${1:?usage: tools/gpu_check.sh LOG_DIR}"
mkdir -p "$logs"
status=0
run() {  # run NAME command...: logs to LOG_DIR/NAME.log, remembers a failure
  local name="$1"; shift
  echo "== $name: $*" | tee -a "$logs/summary.txt"
  local start=$(date +%s)
  "$@" > "$logs/$name.log" 2>&1
  local rc=$?
  tail -n 25 "$logs/$name.log"
  echo "== $name: exit $rc after $(( $(date +%s) - start )) s" | tee -a "$logs/summary.txt"
  [ $rc -eq 0 ] || status=1
  return $rc
}

nvidia-smi > "$logs/nvidia-smi.txt" 2>&1 || echo "nvidia-smi failed (see $logs/nvidia-smi.txt)"
head -15 "$logs/nvidia-smi.txt"
run build make -j"$(nproc)" BUILD=build/gpu CUDA=1 CUDA_ARCHS=90 build/gpu/normcore build/gpu/tests/run_tests || { echo "build failed"; exit 1; }
run cuda_tests build/gpu/tests/run_tests "[cuda]" --durations yes
run cuda_train build/gpu/normcore train --device cuda --steps 30 --eval-every 15 --sample-tokens 40 --run-dir "$logs/run"
run bench_cuda build/gpu/normcore bench --device cuda --skip-gemm --models gpt2 --sizes small,124m --steps 10 --json "$logs/bench_cuda.json"

if python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  run pytorch_cuda python3 bench/compare_pytorch.py --device cuda --models gpt2 --sizes small,124m --steps 10 --json "$logs/pytorch_cuda.json"
  python3 - "$logs" <<'PY' | tee -a "$logs/summary.txt"
import json, sys
d = sys.argv[1]
ours = {(r["model"], r["size"]): r["ms_per_step"] for r in json.load(open(d + "/bench_cuda.json")).get("training", [])}
theirs = {(r["model"], r["size"]): r["ms_per_step"] for r in json.load(open(d + "/pytorch_cuda.json"))["training"]}
for key in sorted(ours):
    if key in theirs:
        print(f"{key[0]} {key[1]}: normcore {ours[key]:.1f} ms, PyTorch eager {theirs[key]:.1f} ms, ratio {ours[key] / theirs[key]:.2f}")
PY
else
  echo "PyTorch with CUDA is not importable here: no comparison" | tee -a "$logs/summary.txt"
fi
exit $status
