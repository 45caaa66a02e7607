#!/bin/bash
# Device call 1: build, info, w1_p2, w2_p2, w4_p2 (part A scaling), each packed into $OUT/c1.tgz as it ends.
set -u
export D=/tmp/live; mkdir -p $D; export PYTHONUNBUFFERED=1
pack() { tar czf $OUT/c1.tgz -C /tmp live 2>/dev/null; }
t0=$(date +%s)
if [ -z "${SKIPBUILD:-}" ]; then
  s=$(date +%s.%N)
  ( cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release -DTUNECAST_BUILD_BENCH=OFF && cmake --build build-dev -j32 --target tunecast tunecast_weights ) > $D/build.log 2>&1
  rc=$?; echo "build rc=$rc wall=$(python3 -c "print(round($(date +%s.%N)-$s,1))") s" | tee -a $D/walls.txt
  if [ $rc = 0 ]; then export T=build-dev/codegen/tunecast M=build-dev/weights/TritonGemm1x1.tcm
  else export T=out/live/bin/tunecast M=out/live/bin/TritonGemm1x1.tcm LD_LIBRARY_PATH=out/live/bin; echo "build failed: carried binary" | tee -a $D/walls.txt; fi
fi
out/live/fleet.sh info; cat $D/info.txt; pack
TL=$((560 - ($(date +%s) - t0) - 60)) out/live/fleet.sh go w1_p2 1 0 ""; pack
K=$(python3 -c "import sqlite3; print(sqlite3.connect('$D/w1_p2.db').execute('select count(*) from tuned').fetchone()[0])")
if [ "$K" -lt 24 ]; then grep -v '^#' out/live/p24_test.txt | head -$K > $D/pK.txt; export A=$D/pK.txt; echo "list cut to $K problems" | tee -a $D/walls.txt; fi
w1=$(grep ^w1_p2 $D/walls.txt | sed 's/.*wall=\([0-9.]*\).*/\1/')
left() { echo $((570 - ($(date +%s) - t0))); }
for N in 2 4; do
  need=$(python3 -c "print(int($w1/$N*1.3+15))")
  if [ $(left) -gt $need ]; then TL=$(($(left) - 5)) out/live/fleet.sh go w${N}_p2 $N 0 ""; pack
  else echo "w${N}_p2 skipped: $(left) s left, ~$need s needed" | tee -a $D/walls.txt; fi
done
pack; cat $D/walls.txt
