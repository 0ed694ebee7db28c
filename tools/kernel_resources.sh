#!/usr/bin/env bash
# kernel_resources.sh — registers, spill bytes and static shared memory of
# every CUDA kernel, as ptxas reports them when it compiles cuda/*.cu for
# one GPU architecture. Needs nvcc, not a GPU. One row per kernel:
#   file  kernel  registers  spill-bytes  shared-bytes
# Usage: tools/kernel_resources.sh [ARCH]   (ARCH: compute capability x10, default 90)
set -euo pipefail
cd "$(dirname "$0")/.."
arch="${1:-90}"
[[ "$arch" =~ ^[0-9]+$ ]] || { echo "kernel_resources.sh: ARCH must be a number such as 75 or 90, got '$arch'" >&2; exit 2; }
nvcc="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
[ -x "$nvcc" ] || { echo "kernel_resources.sh: nvcc not found (set NVCC=/path/to/nvcc)" >&2; exit 2; }
echo "# $("$nvcc" --version | tail -1); sm_$arch; command: tools/kernel_resources.sh $arch"
printf "%-24s %-56s %5s %9s %8s\n" file kernel regs "spill B" "smem B"
for f in cuda/*.cu; do
    # ptxas prints, per kernel: "Compiling entry function '_Z...' for 'sm_90'",
    # then "... N bytes spill stores ...", then "Used R registers, ... S bytes smem".
    "$nvcc" -std=c++17 -O3 -I. -DNORMCORE_CUDA -gencode "arch=compute_$arch,code=sm_$arch" -Xptxas -v -c "$f" \
        -o /dev/null 2>&1 |
        awk -v file="$f" '
            /Compiling entry function/ { match($0, /'"'"'[^'"'"']*'"'"'/); name = substr($0, RSTART + 1, RLENGTH - 2); spill = 0; next }
            /bytes spill stores/ { for (i = 1; i <= NF; ++i) if ($(i + 1) == "bytes" && $(i + 2) == "spill" && $(i + 3) == "stores,") spill = $i; next }
            /Used [0-9]+ registers/ {
                regs = 0; smem = 0
                for (i = 1; i <= NF; ++i) { if ($(i + 1) == "registers,") regs = $i; if ($(i + 1) == "bytes" && $(i + 2) ~ /^smem,?$/) smem = $i }
                print file "\t" name "\t" regs "\t" spill "\t" smem
            }' |
        while IFS=$'\t' read -r file name regs spill smem; do
            # The kernel's name without namespaces and argument list: attention_backward_tiled<64, 64>.
            pretty=$(echo "$name" | c++filt | sed -E 's/^void //; s/\(anonymous namespace\):://g; s/nc::(cuda::)?//g; s/\(.*$//')
            printf "%-24s %-56s %5s %9s %8s\n" "$file" "$pretty" "$regs" "$spill" "$smem"
        done
done
