#!/usr/bin/env bash
# The Python tools (tools/) and studies (research/) on bad input: each must exit non-zero with one
# line naming the problem on stderr, never a traceback (ctest python_tool_errors; needs no data).
set -u
tools="$1/tools"
research="$1/research"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

expect_error() {  # expect_error TEXT COMMAND...: non-zero exit, TEXT on stderr, no traceback
  local text="$1"
  shift
  if "$@" >"$work/out" 2>"$work/err"; then
    echo "FAIL (exit 0): $*"; failures=$((failures + 1)); return
  fi
  if grep -q Traceback "$work/err" || ! grep -qF -- "$text" "$work/err"; then
    echo "FAIL (stderr lacks '$text' or has a traceback): $*"; cat "$work/err"; failures=$((failures + 1)); return
  fi
  echo "ok: $* -> $(tail -n 1 "$work/err")"
}

py=/usr/bin/python3
expect_error "no perf DB for gfx900 in $work/absent" $py "$tools/dataset.py" --perfdb-dir "$work/absent" --out "$work/d"
expect_error "invalid choice: 'Nope'" $py "$tools/dataset.py" --solver Nope --out "$work/d"
expect_error "invalid choice: 'FP64'" $py "$tools/dataset.py" --precision FP64 --out "$work/d"
expect_error "--data takes a perf DB folder" $py "$tools/baselines.py" --data "$work/absent"
expect_error "cannot read $work/absent.json" $py "$tools/plot_eval.py" "$work/absent.json" "$work/p.png"
echo '{}' > "$work/empty.json"
expect_error "is not a \`tunecast eval --json\` result (no n, perfect)" $py "$tools/plot_eval.py" "$work/empty.json" "$work/p.png"
expect_error "must end with .png, .svg, .pdf" $py "$tools/plot_eval.py" "$work/empty.json" "$work/p.txt"
expect_error "is not a \`tunecast eval-search --json\` result (no n, budgets, strategies)" $py "$tools/plot_eval_search.py" "$work/empty.json" "$work/p.png"
expect_error "must end with .png, .svg, .pdf" $py "$tools/plot_eval_search.py" "$work/empty.json" "$work/p.txt"
printf 'good: --smoke\nno colon here\n' > "$work/plan.txt"
expect_error "plan.txt:2: expected \`NAME: train.py arguments\`" $py "$research/sweep.py" "$work/plan.txt" --out "$work/s"
printf 'bad: --smoke --model nope\n' > "$work/plan.txt"
expect_error "--only names no run" $py "$research/sweep.py" "$work/plan.txt" --out "$work/s" --only typo
expect_error "1 of 1 runs failed" $py "$research/sweep.py" "$work/plan.txt" --out "$work/s" --device cpu
expect_error "--epochs must be at least 1" $py "$tools/train.py" --smoke --epochs 0 --out "$work/t"
expect_error "not found" $py "$tools/train.py" --data "$work/absent" --out "$work/t"
expect_error "mixture_study: $work/absent/model.pt not found" $py "$research/mixture_study.py" --runs "$work/absent" --work "$work/m"
expect_error "--width must be >= 10" $py "$research/mixture_study.py" --runs "$work/absent" --work "$work/m" --width 0
echo 'not sqlite' > "$work/part.db"
expect_error "part.db: not an SQLite file" $py "$tools/gpu_timing/merge.py" "$work/part.db" -o "$work/merged.db"
expect_error "is also an input" $py "$tools/gpu_timing/merge.py" "$work/part.db" -o "$work/part.db"
expect_error "not found" $py "$tools/tunecast-train" --timings "$work/absent.db" --out "$work/t"
expect_error "train.py knows the kernels" $py "$tools/train.py" --solver MyHgemm --out "$work/t"
[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
