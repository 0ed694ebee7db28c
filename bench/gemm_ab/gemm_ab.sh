#!/usr/bin/env bash
# gemm_ab.sh REV [ROUNDS] [SHAPES...] — the CPU GEMM of git revision REV
# against the working tree's, call by call in one program (see main.cpp).
#   bench/gemm_ab/gemm_ab.sh HEAD~1
#   bench/gemm_ab/gemm_ab.sh 4caa28e 100 1024x1024x256:TN 1024x256x1024:NT
#   bench/gemm_ab/gemm_ab.sh HEAD 40 128x2048x128:TN:fp16 128x2048x128:TN:bf16   # 16-bit operands
#   GEMM_AB_EVICT_MB=256 bench/gemm_ab/gemm_ab.sh HEAD~1   # operands cold, as inside a training step
set -euo pipefail
cd "$(dirname "$0")/../.."
rev=${1:?usage: bench/gemm_ab/gemm_ab.sh REV [ROUNDS] [SHAPES...]}
rounds=${2:-60}
shift $(( $# >= 2 ? 2 : 1 ))
shapes=("$@")
if [ ${#shapes[@]} -eq 0 ]; then
    shapes=(1024x1024x1024:NN 1024x256x1024:NT 1024x1024x256:NN 1024x1024x256:TN 2048x384x1152:NT 1536x2048x384:TN)
fi
git rev-parse --verify --quiet "$rev^{commit}" > /dev/null || { echo "gemm_ab: '$rev' is not a git revision" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/old"
git archive "$rev" tensor | tar -x -C "$work/old"
flags=(-O3 -march=native -fno-math-errno -fno-trapping-math -fopenmp -std=c++17)  # the release build's
# gemv.cpp (the one-row products) exists from commit 5454755 on; a side
# without it skips it.
# The 16-bit products (gemm_16bit.cpp and its kernels; tensor/dtype.cpp for
# their error messages) are built on both sides too, for shapes with a
# precision (main.cpp).
sources=(tensor/cpu/gemm.cpp tensor/cpu/allocator.cpp tensor/cpu/gemm_kernels.cpp tensor/cpu/gemm_kernel_avx512.cpp
         tensor/cpu/gemm_kernel_avx2.cpp tensor/cpu/gemm_kernel_portable.cpp tensor/cpu/gemv.cpp
         tensor/cpu/gemm_16bit.cpp tensor/cpu/gemm_kernel_avx512_bf16.cpp tensor/cpu/gemm_kernel_amx.cpp tensor/dtype.cpp)
objects=()
for side in old new; do
    root=$([ $side = old ] && echo "$work/old" || echo .)
    rename=$([ $side = old ] && echo -Dnc=ncold || true)
    # The 16-bit side needs gemm_16bit() with its micro-kernel argument
    # (from commit ab1e1d0 on); an older revision gets a stand-in that
    # refuses 16-bit shapes with an error saying so.
    side16=bench/gemm_ab/side16.cpp
    grep -q 'SimdIsa isa = best_simd_isa()' "$root/tensor/cpu/gemm_16bit.h" 2> /dev/null || side16=bench/gemm_ab/side16_missing.cpp
    for src in "${sources[@]}" bench/gemm_ab/side.cpp $side16; do
        obj="$work/$side-$(basename "$src" .cpp).o"
        from=$(case $src in bench/*) echo "$src" ;; *) echo "$root/$src" ;; esac)
        [ -f "$from" ] || [ $side = new ] || continue  # only the old side may lack one
        # The kernel files' own instruction sets, as the Makefile gives them
        # (so that an AVX2-only CPU builds the AVX-512 file too).
        case $src in
            */gemm_kernel_avx2.cpp) isa=(-mavx2 -mfma -mf16c) ;;
            */gemm_kernel_avx512.cpp) isa=(-mavx512f -mfma) ;;
            */gemm_kernel_avx512_bf16.cpp) isa=(-mavx512f -mavx512bf16) ;;
            */gemm_kernel_amx.cpp) isa=(-mamx-tile -mamx-bf16) ;;
            *) isa=() ;;
        esac
        g++ "${flags[@]}" "${isa[@]}" -I"$root" -I. $rename -DAB_RUN=run_$side -DAB_RUN16=run16_$side -c "$from" -o "$obj" &
        objects+=("$obj")
    done
    wait
done
g++ "${flags[@]}" -I. bench/gemm_ab/main.cpp "${objects[@]}" -o "$work/gemm_ab"
echo "old: $(git log -1 --format='%h %s' "$rev" | cut -c1-70)"
echo "new: the working tree ($(git rev-parse --short HEAD)$(git diff --quiet -- tensor || echo ', with changes'))"
"$work/gemm_ab" "$rounds" "${shapes[@]}"
