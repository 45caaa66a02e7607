#!/usr/bin/env bash
# "Bring your own kernel" end to end (docs/byo_kernel.md), each step checked: a CPU blocked GEMM
# (blocked_gemm.h) with its benchmark process (gemm_bench.cpp) and definition (gemm.tcr) goes from
# nothing to a model-free tune, recordings, a tiny trained model, a seeded tune, a default table and
# an application that embeds the table and a generated predictor (consumer/). It uses only an
# installed tunecast (the `tunecast` and `tunecast-train` commands, the CMake package) and CMake.
#
# Usage: run_example.sh PREFIX WORK
#   PREFIX  an installed tunecast (PREFIX/bin/tunecast, PREFIX/lib/cmake/tunecast); PREFIX/bin goes
#           first on PATH
#   WORK    a scratch folder (emptied first)
# TUNECAST_TRAIN names the trainer command when it is not `tunecast-train` on PATH. Timings are the
# machine's own: the checks are about each step's correctness, never its speed.
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 PREFIX WORK" >&2
  exit 2
fi
prefix=$(cd "$1" && pwd)
work=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PATH="$prefix/bin:$PATH"
train=${TUNECAST_TRAIN:-tunecast-train}
py=/usr/bin/python3
rm -rf "$work"
mkdir -p "$work"
work=$(cd "$work" && pwd)
start=$SECONDS

step() { echo; echo "=== $* [$((SECONDS - start)) s]"; }
fail() { echo "run_example: FAILED: $*" >&2; exit 1; }
command -v tunecast >/dev/null || fail "no tunecast in $prefix/bin"
command -v "$train" >/dev/null || fail "no trainer '$train' (install tunecast's tools, or set TUNECAST_TRAIN)"

# The definition is the user's file: the walk-through edits it in step 4, so it works on a copy.
cp "$here/gemm.tcr" "$work/gemm.tcr"
kernel=$work/gemm.tcr
problem="m=96,n=128,k=64"

step "0. build the kernel's benchmark process and test the kernel"
cmake -S "$here" -B "$work/bench" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/bench" --parallel 2 >/dev/null
bench=$work/bench/gemm_bench
"$bench" --self-test
# The line protocol by hand: two candidates, one that runs, one whose B panel does not fit.
answers=$(printf '16,64,32,4\n8,256,64,1\n' | TUNECAST_PROBLEM=$problem TUNECAST_PARAMS=tile_m,tile_n,tile_k,unroll "$bench")
echo "$answers"
[[ $(echo "$answers" | sed -n 1p) =~ ^[0-9]+\.[0-9]+$ ]] || fail "gemm_bench did not answer a time for 16,64,32,4"
[ "$(echo "$answers" | sed -n 2p)" = fail ] || fail "gemm_bench did not answer 'fail' for 8,256,64,1"

step "1. check the definition"
tunecast check "$kernel" | tee "$work/check.txt"
grep -q "kernel BlockedGemm, its own problem (3 fields), 4 parameters" "$work/check.txt" || fail "check: not the definition expected"
grep -q "space: 375 configs" "$work/check.txt" || fail "check: the space is not 5 x 5 x 5 x 3 configs"
tunecast check "$kernel" --json > "$work/check.json"
$py - "$work/check.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["kernel"] == "BlockedGemm" and [f["name"] for f in d["fields"]] == ["m", "n", "k"], d
assert [p["name"] for p in d["params"]] == ["tile_m", "tile_n", "tile_k", "unroll"], d["params"]
PY

step "2. tune one problem with no model (the definition alone)"
tunecast tune "$kernel" --problem "$problem" --budget 20 --bench-cmd "$bench" --quiet --json > "$work/tune_free.json"
$py - "$work/tune_free.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["benchmarks"] == 20 and r["best"] and r["time"] > 0, r
print("model-free tune: best", dict(zip(r["parameters"], r["best"])), f"{r['time']} us,",
      r["failed_benchmarks"], "failed,", r["skipped_invalid"], "proposals removed by the rules")
PY

step "3. record many problems (tune --record, small budgets)"
count=0
while read -r line; do
  case "$line" in ''|'#'*) continue ;; esac
  count=$((count + 1))
  tunecast tune "$kernel" --problem "$line" --budget 12 --seed "$count" --bench-cmd "$bench" --record "$work/gemm.db" \
    --quiet > /dev/null || fail "tune --record $line"
done < "$here/record_problems.txt"
echo "recorded $count problems into $work/gemm.db"
# Resuming: a problem already recorded is replayed from the DB (the benchmark never starts).
first=$(grep -v '^#' "$here/record_problems.txt" | head -1)
tunecast tune "$kernel" --problem "$first" --budget 12 --seed 1 --bench-cmd false --record "$work/gemm.db" --quiet \
  > /dev/null || fail "tune --record did not replay $first from the DB"

step "4. check the recordings against the rules"
set +e
tunecast check "$kernel" --timings "$work/gemm.db" --limit 5 | tee "$work/check_timings.txt"
status=${PIPESTATUS[0]}
set -e
grep -q "timings $work/gemm.db: $count problems, .* configs recorded" "$work/check_timings.txt" ||
  fail "check --timings: not the $count problems recorded"
# gemm.tcr leaves out the B panel's limit on purpose: configs it accepts fail at run time.
[ "$status" = 1 ] && grep -q "recorded failures the rules accept (a rule is missing)" "$work/check_timings.txt" ||
  fail "check --timings did not list the failures the rules accept (exit $status)"
echo "-> the missing rule, added to the definition:"
printf '%s\n' "require tile_k * tile_n <= 8192            # the B panel fits its buffer (kPanelFloats)" | tee -a "$kernel"
tunecast check "$kernel" --timings "$work/gemm.db" || fail "check --timings still finds failures the rules accept"

step "5. train a (tiny) model on the recordings"
"$train" --smoke --threads 1 --kernel "$kernel" --timings "$work/gemm.db" --out "$work/run" 2>&1 | tail -n 12
for file in model.tcir.json model.tce metrics.json; do
  [ -s "$work/run/$file" ] || fail "the trainer wrote no $file"
done

step "6. compile the model with the definition"
tunecast compile "$work/run/model.tcir.json" --rules "$kernel" --encoding "$work/run/model.tce" -o "$work/gemm.tcm"
tunecast predict "$work/gemm.tcm" --problem "$problem" --beam 5 | tee "$work/predict.txt"
grep -q "^   1 " "$work/predict.txt" || fail "predict gave no candidate"

step "7. tune seeded by the model"
tunecast tune "$work/gemm.tcm" --problem "$problem" --budget 10 --bench-cmd "$bench" --quiet --json > "$work/tune_seeded.json"
$py - "$work/tune_seeded.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["benchmarks"] == 10 and r["best"] and r["time"] > 0, r
# With the panel rule compiled in, the model's proposals never include a config that fails.
assert r["failed_benchmarks"] == 0, r["failed_benchmarks"]
print("seeded tune: best", dict(zip(r["parameters"], r["best"])), f"{r['time']} us,",
      r["explore_benchmarks"], "of the model's candidates, then", r["benchmarks"] - r["explore_benchmarks"], "exploit")
PY

step "8. a default table over a problem list"
tunecast table "$work/gemm.tcm" --problems "$here/table_problems.txt" -o "$work/table.txt" --format text
cat "$work/table.txt"
[ "$(grep -vc '^#' "$work/table.txt")" = 7 ] || fail "the table does not have the list's 7 problems"
tunecast table "$work/gemm.tcm" --problems "$here/table_problems.txt" -o "$work/gemm_table.h"
grep -q "struct Key" "$work/gemm_table.h" || fail "the C++ table has no Key"

step "9. an application that embeds the table and a generated predictor (consumer/)"
cmake -S "$here/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$prefix" -DGEMM_MODEL="$work/gemm.tcm" \
  -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "$work/consumer" --parallel 2 > "$work/consumer_build.log" 2>&1 || { cat "$work/consumer_build.log"; fail "the consumer did not build"; }
"$work/consumer/gemm_app" || fail "gemm_app"

echo
echo "run_example: all steps passed in $((SECONDS - start)) s"
