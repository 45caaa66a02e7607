#!/usr/bin/python3
"""Extract tuned problems from MIOpen perf DBs into CSV, with the deterministic 80/10/10 split.

Example (one CSV per solver, all four kernels, both archs, FP32+FP16, into the git-ignored .device/):
  /usr/bin/python3 tools/dataset.py --out .device/data
"""
import argparse
import collections
import os
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tunecast_train import data  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--perfdb-dir", default=data.DEFAULT_PERFDB_DIR, help="folder of <arch>_<CUs>.db")
    ap.add_argument("--solver", nargs="+", default=list(data.SOLVER_PARAMS), choices=list(data.SOLVER_PARAMS),
                    help="solvers (default: the four)")
    ap.add_argument("--arch", nargs="+", default=["gfx900", "gfx906"], choices=list(data.ARCHS))
    ap.add_argument("--precision", nargs="+", default=["FP32", "FP16"], choices=list(data.DTYPES))
    ap.add_argument("--split-seed", type=int, default=0, help="salt of the split hash (default 0)")
    ap.add_argument("--seed", type=int, default=0, help="unused (extraction is deterministic); for uniformity")
    ap.add_argument("--out", required=True, help="output folder: writes <solver>.csv")
    args = ap.parse_args()

    written = 0
    for solver in args.solver:
        print(f"[dataset] {solver}: reading {', '.join(args.arch)} {', '.join(args.precision)}", flush=True)
        try:
            rows = data.extract(args.perfdb_dir, [solver], args.arch, args.precision, args.split_seed)
        except (OSError, sqlite3.Error) as e:
            sys.exit(f"dataset.py: {e}")
        path = os.path.join(args.out, f"{solver}.csv")
        if not rows:  # and no CSV of an earlier extraction left to be read as this one's
            stale = os.path.exists(path)
            if stale:
                os.remove(path)
            print(f"  no {solver} rows for {', '.join(args.arch)} {', '.join(args.precision)}: nothing written"
                  + (f" (removed the earlier {path})" if stale else ""), flush=True)
            continue
        written += 1
        data.write_csv(rows, path)
        counts = collections.Counter((r["arch_name"], r["dtype"], r["split"]) for r in rows)
        for arch in args.arch:
            for prec in args.precision:
                c = [counts[(arch, data.DTYPES[prec], s)] for s in data.SPLITS]
                print(f"  {arch} {prec}: train {c[0]} val {c[1]} test {c[2]}")
        train = [r for r in rows if r["split"] == "train"]
        vocab = data.Vocabulary.from_rows(data.SOLVER_PARAMS[solver], train)
        for name, vals in zip(vocab.param_names, vocab.position_values):
            print(f"  vocab {name}: {vals}")
        unseen = sum(-1 in vocab.encode(r["params"]) for r in rows if r["split"] == "test")
        print(f"  -> {path}: {len(rows)} rows, vocabulary {vocab.size} tokens;"
              f" {unseen} test rows hold a value unseen in training", flush=True)
    if not written:
        sys.exit("dataset.py: no rows for any solver asked: nothing written")


if __name__ == "__main__":
    main()
