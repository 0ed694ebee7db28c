#!/bin/bash
# bfloat16 training steps against PyTorch's CPU autocast, in one run:
# `normcore bench --precisions fp32,bf16` and `bench/compare_pytorch.py
# --precisions fp32,bf16` (torch.autocast("cpu", dtype=torch.bfloat16),
# OpenBLAS given its fastest core type) on the same four models, one after
# the other on a quiet machine; then per model the step times and ratios.
#
#   bench/precision_vs_pytorch.sh [build/normcore] [steps]
#
# Needs Debian's python3-torch and libopenblas0-pthread; about 5 minutes on 2 cores.
set -eu
bin=${1:-build/normcore}
steps=${2:-10}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" bench --precisions fp32,bf16 --skip-gemm --steps "$steps" --json "$tmp/normcore.json" > "$tmp/normcore.txt"
/usr/bin/python3 bench/compare_pytorch.py --precisions fp32,bf16 --steps "$steps" --json "$tmp/torch.json" > "$tmp/torch.txt"
cat "$tmp/normcore.txt" "$tmp/torch.txt"
/usr/bin/python3 - "$tmp/normcore.json" "$tmp/torch.json" <<'PY'
import json, sys
ours, theirs = (json.load(open(f)) for f in sys.argv[1:3])
def times(results):
    return {(r["model"], r["size"], r["precision"]): r["ms_per_step"] for r in results["training"]}
a, b = times(ours), times(theirs)
print("\nstep times in ms (medians), this run; PyTorch with OPENBLAS_CORETYPE=%s:" % (theirs.get("openblas_coretype") or "unset (OpenBLAS's own detection)"))
print("%-12s %10s %10s %8s   %10s %10s %8s   %14s" % ("model", "normcore", "+bf16", "speedup",
      "PyTorch", "+autocast", "speedup", "bf16 nc/torch"))
for model, size in sorted({(m, s) for m, s, _ in a}):
    n32, n16 = a[(model, size, "fp32")], a[(model, size, "bf16")]
    t32, t16 = b[(model, size, "fp32")], b[(model, size, "bf16")]
    print("%-12s %10.1f %10.1f %7.2fx   %10.1f %10.1f %7.2fx   %13.2fx" % (model + " " + size, n32, n16, n32 / n16,
          t32, t16, t32 / t16, n16 / t16))
PY
