#!/usr/bin/env bash
# One live tuning run per problem on the GPU through `tunecast tune --bench-cmd` with
# bench_server.py, then the best config it found and a reference config (the recorded optimum)
# timed again side by side, to compare with the replay of the recorded timings (timings/README.md,
# "Live run").
#   tools/gpu_timing/live_tune.sh TUNECAST MODEL.tcm PROBLEMS OUTDIR [BUDGET]
# PROBLEMS: one line per problem, 'FIELDS|REFERENCE' (tunecast problem syntax, then the reference
# config as comma-separated values). Writes OUTDIR/live_<i>.json (tune --json), live_<i>.log
# (tune's and the server's stderr) and OUTDIR/recheck.txt ('i best_us reference_us').
set -euo pipefail
if [ $# -lt 4 ] || [ "$1" = "--help" ]; then
  sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
  [ "${1:-}" = "--help" ] && exit 0 || exit 2
fi
tunecast=$1 model=$2 problems=$3 out=$4 budget=${5:-10}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
: > "$out/recheck.txt"
i=0
while IFS='|' read -r problem reference; do
  [ -z "$problem" ] && continue
  i=$((i + 1))
  echo "live_tune: problem $i: $problem (budget $budget)" >&2
  "$tunecast" tune "$model" --problem "$problem" --budget "$budget" --json \
    --bench-cmd "python3 $here/bench_server.py" > "$out/live_$i.json" 2> "$out/live_$i.log"
  best=$(python3 -c 'import json, sys; print(",".join(map(str, json.load(open(sys.argv[1]))["best"])))' "$out/live_$i.json")
  times=$(printf '%s\n%s\n' "$best" "$reference" |
    TUNECAST_PROBLEM="$problem" python3 "$here/bench_server.py" 2>> "$out/live_$i.log" | tr '\n' ' ')
  echo "$i $best $reference $times" | tee -a "$out/recheck.txt"
done < "$problems"
