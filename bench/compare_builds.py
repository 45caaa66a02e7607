#!/usr/bin/python3
"""Compares two builds of tunecast_bench figure by figure, in one run (issue 22's goal: the
portable build at its best SIMD level within 1.1x of a -march=native build on every figure).

  bench/compare_builds.py build/bench/tunecast_bench build-native/bench/tunecast_bench \
      [--rounds 3] [--goal 1.1] [-- BENCH ARGS...]   (e.g. -- --no-torch: passed to both)

Runs the two benches alternately (A B A B ...), each at its best level with `--json`, and keeps
for every figure the lowest CPU-time median over the rounds (the host is shared: the minimum of
medians is the steadiest estimate). Prints A / B per figure and whether each is within the goal.
A native build: cmake -S . -B build-native -DCMAKE_BUILD_TYPE=Release -DTUNECAST_NATIVE=ON.
Exit status 0 whatever the ratios (a benchmark reports, it does not fail on a time); 2 on bad
arguments, 1 when a bench fails.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

FIGURES = ["load_ns", "greedy_ns", "beam10_ns", "beam100_ns", "step100_ns"]


def run_bench(binary, args, json_path):
    cmd = [binary, "--json", json_path] + args
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.exit(f"compare_builds: {' '.join(cmd)} failed (exit {done.returncode}): {done.stderr.strip()}")
    with open(json_path) as f:
        return json.load(f)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("a", help="the bench under test (the portable build's)")
    parser.add_argument("b", help="the reference bench (the -march=native build's)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--goal", type=float, default=1.1, help="largest A / B allowed (default 1.1)")
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)  # what follows -- goes to both benches
    o = parser.parse_args(argv[:split])
    o.bench_args = argv[split + 1:]
    for path in (o.a, o.b):
        if not os.access(path, os.X_OK):
            parser.error(f"{path} is not an executable bench")
    if o.rounds < 1:
        parser.error("--rounds must be >= 1")

    best = {"a": {}, "b": {}}
    level = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(o.rounds):
            for side, binary in (("a", o.a), ("b", o.b)):
                print(f"compare_builds: round {r + 1}/{o.rounds}: {binary}", file=sys.stderr, flush=True)
                data = run_bench(binary, o.bench_args, os.path.join(tmp, f"{side}.json"))
                level[side] = data["best_level"]
                for f in data["figures"]:
                    # Shipped predictors are named by their path in each build folder.
                    subject = f["subject"].split(" (imported from")[0]
                    subject = os.path.basename(subject) if subject.endswith(".tcm") else subject
                    for name in FIGURES:
                        key = (subject, name)
                        value = f[name]
                        if value > 0:
                            best[side][key] = min(value, best[side].get(key, value))

    print(f"A = {o.a} (level {level['a']}), B = {o.b} (level {level['b']}); "
          f"lowest CPU-time median of {o.rounds} alternating rounds")
    print(f"{'subject':40} {'figure':12} {'A':>12} {'B':>12} {'A/B':>6}")
    worst = 0.0
    for key in sorted(best["a"]):
        if key not in best["b"]:
            continue
        a, b = best["a"][key], best["b"][key]
        ratio = a / b
        worst = max(worst, ratio)
        flag = "" if ratio <= o.goal else f"  over {o.goal}"
        print(f"{key[0][:40]:40} {key[1][:-3]:12} {a / 1e3:10.1f}us {b / 1e3:10.1f}us {ratio:6.2f}{flag}")
    print(f"worst A/B {worst:.2f}: goal <= {o.goal}: {'met' if worst <= o.goal else 'NOT met'}")


if __name__ == "__main__":
    main()
