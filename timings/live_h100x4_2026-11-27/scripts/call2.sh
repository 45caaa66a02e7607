#!/bin/bash
# Device call 2: w2_p1 (GPUs 0,1) beside the kill test (GPUs 2,3), then part B on GPU 2; $OUT/c2.tgz.
# Optional $1: steps still owed from call 1 (e.g. "w4_p2"), run first on all 4 GPUs.
set -u
export D=/tmp/live; mkdir -p $D; export PYTHONUNBUFFERED=1
pack() { tar czf $OUT/c2.tgz -C /tmp live 2>/dev/null; }
t0=$(date +%s)
if [ -z "${SKIPBUILD:-}" ]; then
  if [ ! -x build-dev/codegen/tunecast ] || [ ! -f build-dev/weights/TritonGemm1x1.tcm ]; then
    s=$(date +%s.%N)
    ( cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release -DTUNECAST_BUILD_BENCH=OFF && cmake --build build-dev -j32 --target tunecast tunecast_weights ) > $D/build2.log 2>&1
    echo "build (call 2) rc=$? wall=$(python3 -c "print(round($(date +%s.%N)-$s,1))") s" | tee -a $D/walls.txt
  fi
  export T=build-dev/codegen/tunecast M=build-dev/weights/TritonGemm1x1.tcm
  [ -x $T ] || export T=out/live/bin/tunecast M=out/live/bin/TritonGemm1x1.tcm LD_LIBRARY_PATH=out/live/bin
fi
[ -f $D/info.txt ] || out/live/fleet.sh info
[ -f $D/pK.txt ] && export A=$D/pK.txt
for step in ${1:-}; do TL=300 out/live/fleet.sh go $step ${step:1:1} 0 ""; pack; done
( while sleep 15; do pack; done ) & pk=$!
TL=$((590 - ($(date +%s) - t0) - 10)) out/live/fleet.sh go w2_p1 2 0 "--protocol 1" &
p1=$!
( out/live/fleet.sh kill kt 2; TL=$((590 - ($(date +%s) - t0) - 10)) out/live/fleet.sh partb 2 ) > $D/kt_partb.out 2>&1 &
p2=$!
wait $p1 $p2; kill $pk; pack; cat $D/walls.txt $D/kt.events
