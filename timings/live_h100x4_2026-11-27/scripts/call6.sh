#!/bin/bash
# Device call 6: scaling on up to 800 test-split problems (start amortized further): w1, w2, w4 (protocol 2); $OUT/c6.tgz.
set -u
export D=/tmp/live6; mkdir -p $D; export PYTHONUNBUFFERED=1
export T=out/live/bin/tunecast M=out/live/bin/TritonGemm1x1.tcm LD_LIBRARY_PATH=out/live/bin
pack() { tar czf $OUT/c6.tgz -C /tmp live6 2>/dev/null; }
t0=$(date +%s); L=out/live/p800_test.txt
out/live/fleet.sh info; cat $D/info.txt
left() { echo $((585 - ($(date +%s) - t0))); }
TL=$(($(left) - 165)) out/live/fleet.sh go w1_p2_800 1 0 "" $L; pack
K=$(python3 -c "import sqlite3; print(sqlite3.connect('$D/w1_p2_800.db').execute('select count(*) from tuned').fetchone()[0])")
if [ "$K" -lt 800 ]; then grep -v '^#' $L | head -$K > $D/pK.txt; L=$D/pK.txt; echo "list cut to $K problems" | tee -a $D/walls.txt; fi
w1=$(grep ^w1_p2_800 $D/walls.txt | sed 's/.*wall=\([0-9.]*\).*/\1/')
for N in 4; do
  need=$(python3 -c "print(int(($w1-15)/$N*1.2+25))")
  if [ $(left) -gt $need ]; then TL=$(($(left) - 3)) out/live/fleet.sh go w${N}_p2_800 $N 0 "" $L; pack
  else echo "w${N}_p2_800 skipped: $(left) s left, ~$need s needed" | tee -a $D/walls.txt; fi
done
pack; cat $D/walls.txt
