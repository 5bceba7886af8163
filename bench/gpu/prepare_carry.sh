#!/bin/bash
# Prepares .carry/ (git-ignored) for the device: generates variants with codegen_emit (build
# dir $1, default build-cuda) into .carry/gen/<variant>/{kernel.cu,launch.json,host.h}, copies
# the shared baseline harness, and ships codegen_gpu_test with its Abseil libraries
# (.carry/bin, .carry/lib) for run_gpu_tests.sh. $2 picks the variant set: "all" (default),
# "gemm" (rmsnorm_linear, gated_mlp; bench_codegen.py) or "attention" (gqa, qknorm_gqa;
# bench_attention.py).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build-cuda}
SET=${2:-all}
rm -rf .carry/gen .carry/bin .carry/lib && mkdir -p .carry/gen .carry/bin .carry/lib
cp ../shared/baselines/harness.py ../shared/baselines/workloads.py .carry/
if [ -x "$BUILD"/tests/codegen/codegen_gpu_test ]; then
  cp "$BUILD"/tests/codegen/codegen_gpu_test .carry/bin/
  ldd "$BUILD"/tests/codegen/codegen_gpu_test | awk '/libabsl|libz3|libgtest|libgmock/ {print $3}' | xargs -r cp -t .carry/lib/
fi
emit() {  # fixture batch assignment name
  mkdir -p .carry/gen/$4
  "$BUILD"/tests/codegen/codegen_emit $1 $2 $3 .carry/gen/$4 || { echo "skipped $4"; rmdir .carry/gen/$4; }
}
if [ "$SET" = all ] || [ "$SET" = gemm ]; then
  # rmsnorm_linear: g F T S (W column tile 6144/g, K tile 4096/F).
  for bs in 1 8; do
    for v in "96 16 512 3" "96 16 256 3" "96 8 512 2" "64 16 512 3" "48 16 512 3" \
             "128 16 256 3" "128 8 512 3"; do
      set -- $v
      emit rmsnorm_linear $bs g=$1,F=$2,T=$3,S=$4 rms_b${bs}_g$1_F$2_T$3_S$4
    done
  done
  # gated_mlp: g splits N (4096), h splits the batch rows (1 here), F walks K.
  for bs in 1 8; do
    for v in "128 16 256 3" "128 16 512 3" "128 32 256 4" "64 16 512 2" "64 32 256 3" \
             "256 16 256 3" "96 16 256 3"; do
      set -- $v
      emit gated_mlp $bs g=$1,h=1,F=$2,T=$3,S=$4 mlp_b${bs}_g$1_F$2_T$3_S$4
    done
  done
fi
if [ "$SET" = all ] || [ "$SET" = attention ]; then
  # gqa / qknorm_gqa: gx splits the heads (2b), gy the 256 query rows, gz the 4096 KV
  # positions; F walks each block's KV range in chunks of 4096/gz/F. A 7th field W sets
  # CodegenOptions::attention_tiles_per_warp (2: two row tiles per warp sharing K/V fragments),
  # an 8th P=1 attention_pipeline (software-pipelined loop, S >= 3), a 9th L=1
  # attention_lazy_rescale, a 10th E=1 attention_exp_f16x2, an 11th G=1 attention_wgmma (sm_90a).
  # ATT_B1 / ATT_B8 replace the lists.
  B1="2,8,8,4,128,3 2,8,8,8,128,3 2,4,16,4,256,3 2,4,16,2,128,3,2 2,4,16,4,128,3,2
      2,8,8,8,128,4,0,1 2,8,8,4,128,4,0,1 2,4,16,4,128,4,2,1 2,4,16,2,128,4,2,1
      2,8,8,8,128,3,0,1 2,4,16,4,256,4,0,1 2,8,16,4,128,4,0,1"
  B8="16,1,8,8,512,2 16,2,4,16,256,3 16,2,4,8,256,3,2 16,1,8,8,256,3,2 16,2,4,16,128,3,2
      16,2,4,16,256,4,0,1 16,2,4,16,256,4,2,1 16,2,4,8,256,4,2,1 16,1,8,8,256,4,2,1
      16,2,4,16,128,4,2,1 16,1,8,8,512,4,0,1 16,4,4,16,128,4,0,1 16,2,4,16,256,3,2,1"
  B1=${ATT_B1:-$B1}
  B8=${ATT_B8:-$B8}
  for fx in gqa qknorm_gqa; do
    for bs in 1 8; do
      if [ $bs = 1 ]; then list=$B1; else list=$B8; fi
      for v in $list; do
        IFS=, read -r gx gy gz f t s w pl lz ex wg <<<"$v"
        w=${w:-0}
        pl=${pl:-0}
        lz=${lz:-0}
        ex=${ex:-0}
        wg=${wg:-0}
        name=${fx}_b${bs}_x${gx}_y${gy}_z${gz}_F${f}_T${t}_S${s}
        [ "$w" = 0 ] || name=${name}_W$w
        [ "$pl" = 0 ] || name=${name}_P
        [ "$lz" = 0 ] || name=${name}_L
        [ "$ex" = 0 ] || name=${name}_E
        [ "$wg" = 0 ] || name=${name}_G
        mkdir -p .carry/gen/$name
        "$BUILD"/tests/codegen/codegen_emit $fx $bs gx=$gx,gy=$gy,gz=$gz,F=$f,T=$t,S=$s \
          .carry/gen/$name "" $w $pl $lz $ex 0 0 $wg || { echo "skipped $name"; rmdir .carry/gen/$name; }
      done
    done
  done
fi
ls .carry/gen | wc -l
