#!/usr/bin/env bash
# A seconds-long ConvAsmBwdWrW3x3 training that decodes pipe_lines_depth second
# (train.py --param-order) with neighbour labels, then the artifact end to end: compiled with the
# kernel's rules (placed by decode step), its decode order reported by inspect, and a constrained
# eval on real problems that returns vectors in the solver's order with no invalid candidate.
# Usage: decode_order_smoke.sh SOURCE_DIR TUNECAST_CLI PERFDB_DIR WORK_DIR
set -euo pipefail
src=$1 tunecast=$2 perfdb=$3 work=$4
rm -rf "$work"
/usr/bin/python3 "$src/tools/train.py" --smoke --solver ConvAsmBwdWrW3x3 --param-order 0,4,1,2,3,5 \
  --neighbour-labels 2 --data "$perfdb" --out "$work" --tunecast "$tunecast"
"$tunecast" compile "$work/model.tcir.json" --rules "$src/weights/rules/ConvAsmBwdWrW3x3.tcr" \
  --encoding "$work/model.tce" -o "$work/model.tcm"
"$tunecast" inspect "$work/model.tcm" --json > "$work/inspect.json"
"$tunecast" eval "$work/model.tcm" --perfdb "$perfdb/gfx906_60.db" --solver ConvAsmBwdWrW3x3 --precision FP32 \
  --split val --beam 1,10 --no-baselines --json > "$work/eval.json"
/usr/bin/python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
inspect = json.load(open(f"{work}/inspect.json"))
names = [p["name"] for p in inspect["parameters"]]
assert inspect["decode_order"] == [0, 4, 1, 2, 3, 5], inspect["decode_order"]
assert names[4] == "pipe_lines_depth", names  # listed in the solver's order
ev = json.load(open(f"{work}/eval.json"))
assert ev["n"] > 0 and ev["invalid_rate"] == 0, ev
print(f"decode_order_smoke: decode order {inspect['decode_order']}, {ev['n']} val problems, "
      f"perfect@10 {ev['perfect']['10']:.1f} %, invalid {ev['invalid_rate']}")
PY
