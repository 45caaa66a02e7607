#!/usr/bin/env bash
# The shipped TritonGemm1x1 predictor replayed on the recorded H100 timings (no GPU needed): every
# strategy of `tunecast eval-search` on the held-out test problems, per precision. Fails when a
# constrained strategy proposes an invalid config, when the search misses one of issue 25's goals
# (budget 1 >= 0.90 of the optimum; budget 10 >= 0.98 and p10 >= 0.95; budget 20 >= 0.99), or when
# it falls behind random search or Droplet from the default at a budget; and when the model's rules
# (weights/rules/TritonGemm1x1.tcr, through the runtime's constraint VM) do not accept exactly the
# configs that ran, on every recorded problem.
# (The figures: weights/README.md, TritonGemm1x1.)
#   tests/eval_search_h100.sh TUNECAST MODEL.tcm TIMINGS_DIR WORKDIR
# TIMINGS_DIR: the shipped timings, parts of at most a few MB (timings/README.md), merged here.
set -euo pipefail
tunecast=$1 model=$2 timings=$3 work=$4
mkdir -p "$work"
db="$work/TritonGemm1x1_h100.db"
repo=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -f "$db" ] || [ -n "$(find "$timings" -name '*.db.xz' -newer "$db")" ]; then
  rm -f "$db"
  /usr/bin/python3 "$repo/tools/gpu_timing/merge.py" "$timings"/*.db.xz -o "$db"
fi
for p in FP16 FP32; do
  # The strategies the checks below read (free_search, the model-free surrogate, would add minutes).
  "$tunecast" eval-search "$model" --timings "$db" --split test --default 128,128,32,8,4,4 --precision $p \
    --budgets 1,2,5,10,20,50,100 --strategies predictor_top1,predictor_top_b,predictor_search,default_search,random,exhaustive \
    --json > "$work/eval_search_$p.json"
done
# Exhaustive search with the whole space as budget benchmarks every config the rules accept: none
# may have failed on the GPU, and as many must have run as the data records.
"$tunecast" eval-search "$model" --timings "$db" --split all --budgets 576 --strategies exhaustive --json \
  > "$work/eval_search_all.json" 2>/dev/null
ran=$(/usr/bin/python3 -c "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); print(c.execute(
  \"SELECT CAST(COUNT(*) AS REAL) / COUNT(DISTINCT config) FROM timings WHERE status = 'ok'\").fetchone()[0])" "$db")
/usr/bin/python3 - "$work/eval_search_FP16.json" "$work/eval_search_FP32.json" "$work/eval_search_all.json" "$ran" <<'PY'
import json, sys
every = json.load(open(sys.argv[3]))["strategies"]["exhaustive"]["576"]
ran = float(sys.argv[4])
bad = []
for path, precision in ((sys.argv[1], "FP16"), (sys.argv[2], "FP32")):
    j = json.load(open(path))
    s = j["strategies"]
    if j.get("invalid_proposed_constrained", 0) != 0:
        bad.append(f"{precision}: invalid configs proposed: {j['invalid_proposed_constrained']}")
    ours = {b: s["predictor_search"][str(b)] for b in j["budgets"]}
    goals = ((1, "geomean_speed", 0.90), (10, "geomean_speed", 0.98), (10, "p10_speed", 0.95),
             (20, "geomean_speed", 0.99))
    for b, what, goal in goals:
        if ours[b][what] < goal:
            bad.append(f"{precision} budget {b}: {what} {ours[b][what]:.3f} < issue 25's {goal}")
    for b in j["budgets"]:
        for other in ("random", "default_search"):
            theirs = s[other][str(b)]["geomean_speed"]
            if ours[b]["geomean_speed"] < theirs:
                bad.append(f"{precision} budget {b}: predictor_search {ours[b]['geomean_speed']:.3f} < "
                           f"{other} {theirs:.3f}")
    print(f"eval_search_h100: {precision}, {j['n']} test problems; predictor alone "
          f"{ours[1]['geomean_speed']:.3f}, search at budget 10 {ours[10]['geomean_speed']:.3f} "
          f"(p10 {ours[10]['p10_speed']:.3f}), 20 {ours[20]['geomean_speed']:.3f}")
if every["failed_benchmarks"] != 0 or abs(every["mean_benchmarks"] - ran) > 1e-6:
    bad.append(f"rules against the data: {every['failed_benchmarks']} accepted configs failed; "
               f"{every['mean_benchmarks']:.3f} accepted per problem, {ran:.3f} ran")
print(f"eval_search_h100: rules accept {every['mean_benchmarks']:.3f} configs per problem, {ran:.3f} ran, "
      f"{every['failed_benchmarks']} accepted and failed")
for line in bad:
    print("eval_search_h100: " + line)
sys.exit(1 if bad else 0)
PY
