#!/bin/bash
# One device call of the scaling runs: 1 worker on LIST, then each of WORKERS on the problems that
# run tuned (protocol 2), results packed into $OUT/scaling_SUFFIX.tgz as each run ends.
#   scaling_call.sh LIST SUFFIX "WORKERS" RESERVE_S
# RESERVE_S: seconds of the call's 585 kept for the multi-worker runs (the 1-worker run is cut there).
# Calls 3, 5 and 6 ran it as: p96_test.txt 96 "2 4" 200; p288_test.txt 288 "4 2" 240; p800_test.txt 800 "4" 165
# (then under the names call3.sh, call5.sh, call6.sh, with the paths of out/live/).
set -u
L=$1 SUFFIX=$2 WORKERS=$3 RESERVE=$4
HERE=$(cd "$(dirname "$0")" && pwd)
export D=/tmp/live_$SUFFIX; mkdir -p $D; export PYTHONUNBUFFERED=1
export T=out/live/bin/tunecast M=out/live/bin/TritonGemm1x1.tcm LD_LIBRARY_PATH=out/live/bin
pack() { tar czf $OUT/scaling_$SUFFIX.tgz -C /tmp live_$SUFFIX 2>/dev/null; }
t0=$(date +%s)
$HERE/fleet.sh info; cat $D/info.txt
left() { echo $((585 - ($(date +%s) - t0))); }
TL=$(($(left) - RESERVE)) $HERE/fleet.sh go w1_p2_$SUFFIX 1 0 "" $L; pack
K=$(python3 -c "import sqlite3; print(sqlite3.connect('$D/w1_p2_$SUFFIX.db').execute('select count(*) from tuned').fetchone()[0])")
N_LIST=$(grep -vc '^#' $L)
if [ "$K" -lt "$N_LIST" ]; then grep -v '^#' $L | head -$K > $D/pK.txt; L=$D/pK.txt; echo "list cut to $K problems" | tee -a $D/walls.txt; fi
w1=$(grep ^w1_p2_$SUFFIX $D/walls.txt | sed 's/.*wall=\([0-9.]*\).*/\1/')
for N in $WORKERS; do
  need=$(python3 -c "print(int(($w1-15)/$N*1.2+25))")
  if [ $(left) -gt $need ]; then TL=$(($(left) - 3)) $HERE/fleet.sh go w${N}_p2_$SUFFIX $N 0 "" $L; pack
  else echo "w${N}_p2_$SUFFIX skipped: $(left) s left, ~$need s needed" | tee -a $D/walls.txt; fi
done
pack; cat $D/walls.txt
