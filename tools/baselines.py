#!/usr/bin/python3
"""Baselines on the test split, per solver / arch / precision: perfect@k (k = 1, 10, 30, 50, 100) and
the top-1's per-parameter accuracy, for (a) the most frequent training vectors and (b) the distinct
tuned vectors of the nearest training problems. Exact definitions: docs/training.md.

Example:
  /usr/bin/python3 tools/baselines.py --data .device/data --json out/baselines.json
"""
import argparse
import json
import os
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tunecast_train import baselines, data, files, metrics  # noqa: E402


def run(rows, split="test"):
    """{(arch, precision): {"frequent": metrics, "nearest": metrics}} for one solver's rows."""
    out = {}
    inv = {v: k for k, v in data.DTYPES.items()}
    for arch in sorted({r["arch_name"] for r in rows}):
        for dt in sorted({r["dtype"] for r in rows}):
            tr = [r for r in rows if r["arch_name"] == arch and r["dtype"] == dt and r["split"] == "train"]
            te = [r for r in rows if r["arch_name"] == arch and r["dtype"] == dt and r["split"] == split]
            if not tr or not te:
                continue
            targets = [r["params"] for r in te]
            freq = baselines.frequent([r["params"] for r in tr])
            near = baselines.nearest(data.fields_matrix(tr), [r["params"] for r in tr],
                                     data.fields_matrix(te), max(metrics.KS))
            out[(arch, inv[dt])] = {"frequent": metrics.score([freq] * len(te), targets),
                                    "nearest": metrics.score(near, targets)}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=data.DEFAULT_PERFDB_DIR,
                    help="perf DB folder, or folder of <solver>.csv from tools/dataset.py")
    ap.add_argument("--solver", nargs="+", default=list(data.SOLVER_PARAMS), choices=list(data.SOLVER_PARAMS))
    ap.add_argument("--arch", nargs="+", default=["gfx900", "gfx906"], choices=list(data.ARCHS))
    ap.add_argument("--precision", nargs="+", default=["FP32", "FP16"], choices=list(data.DTYPES))
    ap.add_argument("--split", default="test", choices=["val", "test"])
    ap.add_argument("--seed", type=int, default=0, help="unused (baselines are deterministic)")
    ap.add_argument("--json", help="write results here")
    args = ap.parse_args()

    results, table = {}, []
    for solver in args.solver:
        print(f"[baselines] {solver} ...", flush=True)
        try:
            rows = data.load(args.data, [solver], args.arch, args.precision)
        except (OSError, ValueError, sqlite3.Error) as e:
            sys.exit(f"baselines.py: {e}")
        for (arch, prec), res in run(rows, args.split).items():
            results[f"{solver}/{arch}/{prec}"] = res
            for name, m in res.items():
                table.append((f"{solver} {arch} {prec} {name}", m))
    if not table:
        sys.exit(f"baselines.py: no group of {', '.join(args.arch)} x {', '.join(args.precision)} has both "
                 f"train and {args.split} rows in {args.data}")
    print(metrics.table(table))
    if args.json:
        with files.replacing(args.json) as partial, open(partial, "w") as f:
            json.dump(results, f, indent=1)
        print(f"[baselines] wrote {args.json}")


if __name__ == "__main__":
    main()
