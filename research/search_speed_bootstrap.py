#!/usr/bin/python3
"""How sure is a search-speed figure of a split? Replays `tunecast tune --replay --budget B` on
every problem of one precision in the trainer's split (the same problems and speeds as
`tunecast eval-search`'s predictor_search), then resamples the problems (bootstrap, 2,000 draws)
and prints the geomean and the 10th percentile with their 5 % and 95 % bootstrap quantiles: whether
a goal such as "p10 >= 0.95" can be told apart from the figure at this many problems.

  research/search_speed_bootstrap.py --model M.tcm --timings out/timing/h100_132.db --precision FP16 \\
      --budget 10 [--split test] [--tunecast build/codegen/tunecast]
"""
import argparse
import json
import math
import os
import random
import sqlite3
import subprocess
import sys

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(REPO, "tools"))
from tunecast_train.data import descriptor_text, split_of  # noqa: E402


def p10(values):
    """The 10th percentile with linear interpolation, as eval-search computes it."""
    s = sorted(values)
    pos = 0.1 * (len(s) - 1)
    lo = int(pos)
    return s[lo] + (s[min(lo + 1, len(s) - 1)] - s[lo]) * (pos - lo)


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--timings", required=True, help="timing DB (decompressed SQLite)")
    ap.add_argument("--precision", required=True, choices=["FP16", "FP32"])
    ap.add_argument("--budget", type=int, required=True)
    ap.add_argument("--split", default="test", choices=["train", "val", "test"])
    ap.add_argument("--split-seed", type=int, default=0)
    ap.add_argument("--draws", type=int, default=2000)
    ap.add_argument("--tunecast", default=os.path.join(REPO, "build", "codegen", "tunecast"))
    args = ap.parse_args()
    for path, what in ((args.model, "--model"), (args.timings, "--timings"), (args.tunecast, "--tunecast")):
        if not os.path.exists(path):
            ap.error(f"{what} {path}: no such file")
    con = sqlite3.connect(f"file:{args.timings}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    speeds = []
    for row in con.execute("SELECT * FROM config WHERE data_type = ? ORDER BY id", (args.precision,)):
        if split_of(descriptor_text(row), args.split_seed) != args.split:
            continue
        problem = (f"dir=F,dtype={args.precision},layout={row['layout']},n={row['batchsize']},c={row['in_channels']},"
                   f"k={row['out_channels']},h={row['in_h']},w={row['in_w']},y={row['fil_h']},x={row['fil_w']}")
        done = subprocess.run([args.tunecast, "tune", args.model, "--problem", problem, "--budget", str(args.budget),
                               "--replay", args.timings, "--json", "--quiet"], capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"search_speed_bootstrap: tune failed on {problem}: {done.stderr.strip()}")
        speeds.append(json.loads(done.stdout)["speed"])
    if not speeds:
        sys.exit(f"search_speed_bootstrap: no {args.precision} problem in the {args.split} split")
    rng = random.Random(0)
    draws = [[rng.choice(speeds) for _ in speeds] for _ in range(args.draws)]
    for name, stat in (("geomean", geomean), ("p10", p10)):
        boot = sorted(stat(d) for d in draws)
        lo, hi = boot[int(0.05 * (len(boot) - 1))], boot[int(0.95 * (len(boot) - 1))]
        print(f"{args.precision} budget {args.budget}, {len(speeds)} {args.split} problems: {name} "
              f"{stat(speeds):.3f}, bootstrap 5-95 % [{lo:.3f}, {hi:.3f}]")
    print("worst ten: " + " ".join(f"{v:.3f}" for v in sorted(speeds)[:10]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
