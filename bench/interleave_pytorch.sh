#!/usr/bin/env bash
# interleave_pytorch.sh [ROUNDS] [SIZES] [NORMCORE] — normcore's training steps against
# PyTorch's, interleaved: each round runs `normcore bench` and then
# bench/compare_pytorch.py on the same sizes, so that both frameworks see the
# same stretch of a machine whose speed drifts from minute to minute. Prints
# every round, then a summary per model: the medians, the median and range
# of the per-round ratios (normcore / PyTorch, within a round), and a floor:
# the step's model FLOPs at the FMA peak (normcore's ms x its MFU), which no
# float32 implementation on this machine can beat, as a fraction of
# PyTorch's fastest round.
#   bench/interleave_pytorch.sh 5 train,tiny,small > out.txt
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
sizes=${2:-train,tiny,small}
normcore=${3:-build/normcore}
[ -x "$normcore" ] || { echo "interleave_pytorch: $normcore is not built (make, or pass the binary)" >&2; exit 2; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for r in $(seq 1 "$rounds"); do
  echo "== round $r $(date -u +%H:%M:%S) UTC" | tee -a "$log"
  "$normcore" bench --sizes "$sizes" --skip-gemm --steps 10 2>&1 | grep -E "FMA peak|^  (gpt2|llama) " | tee -a "$log"
  /usr/bin/python3 bench/compare_pytorch.py --sizes "$sizes" 2>&1 | grep -E "^PyTorch|ms/step" | tee -a "$log"
done
/usr/bin/python3 - "$log" <<'PY'
import re, statistics as st, sys
rows = {}
for r in open(sys.argv[1]).read().split('== round ')[1:]:
    for m in re.finditer(r'^  (gpt2|llama) (\w+)\s+\S+\s+([\d.]+)\s.*\s([\d.]+)%$', r, re.M):
        d = rows.setdefault((m.group(1), m.group(2)), {'nc': [], 'mfu': [], 'pt': []})
        d['nc'].append(float(m.group(3)))
        d['mfu'].append(float(m.group(4)) / 100)
    for m in re.finditer(r'^  (gpt2|llama)\s+(\w+)\s+fp32\s+\S+ params\s+([\d.]+) ms/step', r, re.M):
        rows[(m.group(1), m.group(2))]['pt'].append(float(m.group(3)))
print("summary, ms/step (ratio: normcore / PyTorch within each round; floor: the step's model FLOPs at the FMA")
print("peak, the median of normcore's ms x MFU; floor / fastest: the lowest ratio any float32 step could reach")
print("against PyTorch's fastest round, which is also PyTorch's MFU in that round)")
print("model  size   normcore  PyTorch  ratio (range)        floor  PyTorch fastest  floor / fastest")
for (model, size), d in rows.items():
    if len(d['pt']) != len(d['nc']):
        sys.exit(f"interleave_pytorch: {model} {size}: {len(d['nc'])} normcore rows, {len(d['pt'])} PyTorch rows")
    ratios = [a / b for a, b in zip(d['nc'], d['pt'])]
    floor = st.median(a * m for a, m in zip(d['nc'], d['mfu']))
    fastest = min(d['pt'])
    print(f"{model:6s} {size:5s} {st.median(d['nc']):9.1f} {st.median(d['pt']):8.1f}  "
          f"{st.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})  {floor:8.1f} {fastest:12.1f}      {floor / fastest:.2f}")
PY
