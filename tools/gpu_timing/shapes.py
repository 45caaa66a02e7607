#!/usr/bin/env python3
"""Select the 1x1-convolution problem shapes that the exhaustive Triton timing run covers.

Reads MIOpen perf DBs (SQLite, table `config`) and keeps the distinct forward 2-D 1x1
convolutions with stride 1, pad 0, dilation 1 and group 1, of any layout and data type, as
(n, c, k, h, w). The timed kernel is the GEMM Y[M,N] = X[M,K] @ W[K,N] with M = n*h*w, N = k,
K = c.

Selection rule (deterministic, documented in timings/README.md):
  1. candidates: the distinct (n, c, k, h, w) above, over every *.db in the perf-DB folder;
  2. keep those with M*N*K <= --max-mnk (default 2^29), so that the slowest of the 576 configs
     stays timeable within the device budget;
  3. order them by sha256("n,c,k,h,w") (hex digest, ascending) and keep the first --count
     (default: all); any prefix of the list is a uniform sample of step 2.

Writes CSV (header n,c,k,h,w,m,mnk,sha) atomically. Runs on the CPU; needs no GPU.

With --held-out-from N --skip-file FILE it also writes, for triton_gemm1x1.py --skip-done, the
`index:DTYPE` pairs of shapes N on that are NOT in the trainer's --split (test, val
or train; seed 0, tools/tunecast_train/data.py, over the problem descriptor the timings file gives the
pair): a run with it times only that split's pairs of those shapes. With val or test it grows a
held-out split without touching what a model trains on; with --held-out-from 0, any split's pairs
can be measured again. (--test-only-from is the older name of --held-out-from.)
"""
import argparse
import glob
import os
import sqlite3
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import shape_lists  # noqa: E402  (what this script shares with gemm_shapes.py)
from shape_lists import shape_hash  # noqa: E402  (the order key; shapes.shape_hash as before)

REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
DEFAULT_DATA = os.environ.get("TUNECAST_DATA_DIR") or os.path.join(REPO, "..", "shared", "data")

QUERY = ("SELECT batchsize, in_channels, out_channels, in_h, in_w FROM config "
         "WHERE direction = 'F' AND spatial_dim = 2 AND fil_h = 1 AND fil_w = 1 "
         "AND pad_h = 0 AND pad_w = 0 AND conv_stride_h = 1 AND conv_stride_w = 1 "
         "AND dilation_h = 1 AND dilation_w = 1 AND group_count = 1")


def candidates(perfdb_dir):
    paths = sorted(glob.glob(os.path.join(perfdb_dir, "*.db")))
    if not paths:
        raise SystemExit(f"shapes.py: no perf DB (*.db) in {perfdb_dir} "
                         "(set TUNECAST_DATA_DIR or pass --perfdb-dir)")
    found = set()
    for path in paths:
        try:
            con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            rows = con.execute(QUERY).fetchall()
            con.close()
        except sqlite3.Error as e:
            raise SystemExit(f"shapes.py: cannot read {path}: {e}")
        print(f"shapes.py: {os.path.basename(path)}: {len(rows)} forward 1x1 stride-1 rows",
              file=sys.stderr)
        found.update(tuple(int(v) for v in r) for r in rows)
    return paths, found


def select(found, max_mnk, count):
    kept = [s for s in found if s[0] * s[3] * s[4] * s[1] * s[2] <= max_mnk]
    kept.sort(key=shape_hash)
    return kept, kept[:count]


def write_csv_atomic(path, shapes):
    lines = ["n,c,k,h,w,m,mnk,sha\n"]
    for n, c, k, h, w in shapes:
        m = n * h * w
        lines.append(f"{n},{c},{k},{h},{w},{m},{m * k * c},{shape_hash((n, c, k, h, w))[:16]}\n")
    shape_lists.write_atomic(path, "".join(lines), ".shapes.")


def problem_row(shape, dtype):
    """The config row merge.py writes for a pair (MIOpen's columns; what the trainer's split reads)."""
    n, c, k, h, w = shape
    return {"layout": "NHWC", "data_type": dtype, "direction": "F", "spatial_dim": 2, "in_channels": c,
            "in_h": h, "in_w": w, "in_d": 1, "fil_h": 1, "fil_w": 1, "fil_d": 1, "out_channels": k,
            "batchsize": n, "pad_h": 0, "pad_w": 0, "pad_d": 0, "conv_stride_h": 1, "conv_stride_w": 1,
            "conv_stride_d": 0, "dilation_h": 1, "dilation_w": 1, "dilation_d": 0, "bias": 0, "group_count": 1}


def outside_split(shapes, first, split="test"):
    """(the 'index:DTYPE' pairs of shapes[first:] outside the trainer's `split`, how many are in it)."""
    sys.path.insert(0, os.path.join(REPO, "tools"))
    from tunecast_train.data import descriptor_text, split_of
    skip, timed = [], 0
    for idx in range(first, len(shapes)):
        for dtype in ("FP16", "FP32"):
            if split_of(descriptor_text(problem_row(shapes[idx], dtype))) == split:
                timed += 1
            else:
                skip.append(f"{idx}:{dtype}")
    return skip, timed


def write_lines_atomic(path, lines):
    shape_lists.write_atomic(path, "".join(line + "\n" for line in lines), ".skip.")


def read_shapes(path):
    """The harness's reader: list of (n, c, k, h, w) in file order (the header is the first line)."""
    return shape_lists.read_shapes(path, ("n", "c", "k", "h", "w"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--perfdb-dir", default=os.path.join(DEFAULT_DATA, "miopen", "perfdb"),
                    help="folder of MIOpen perf DBs (default: $TUNECAST_DATA_DIR/miopen/perfdb, "
                         "else ../shared/data/miopen/perfdb beside the checkout)")
    ap.add_argument("--max-mnk", type=int, default=2 ** 29, help="keep shapes with M*N*K <= this (default 2^29)")
    ap.add_argument("--count", type=int, default=0, help="how many shapes to keep (default 0: all)")
    ap.add_argument("--held-out-from", "--test-only-from", dest="held_out_from", type=int, metavar="N",
                    help="with --skip-file: the pairs of shapes N.. outside --split go to the skip file")
    ap.add_argument("--split", choices=("test", "val", "train"), default="test",
                    help="with --held-out-from: the split to time (default test; val grows the split that "
                         "choices are made on; with --held-out-from 0, any split's pairs can be timed again)")
    ap.add_argument("--skip-file", help="where --held-out-from writes its index:DTYPE lines")
    ap.add_argument("-o", "--output", default=os.path.join(HERE, "shapes.csv"),
                    help="output CSV (default tools/gpu_timing/shapes.csv)")
    args = ap.parse_args(argv)
    if args.count < 0 or args.max_mnk < 1:
        ap.error("--count must be >= 0 and --max-mnk positive")
    if (args.held_out_from is None) != (args.skip_file is None):
        ap.error("--held-out-from and --skip-file go together")
    paths, found = candidates(args.perfdb_dir)
    eligible, kept = select(found, args.max_mnk, args.count or None)
    write_csv_atomic(args.output, kept)
    print(f"shapes.py: {len(found)} distinct candidate shapes in {len(paths)} perf DBs; "
          f"{len(eligible)} with M*N*K <= {args.max_mnk}; kept {len(kept)} -> {args.output}", file=sys.stderr)
    if args.count and len(kept) < args.count:
        print(f"shapes.py: warning: only {len(kept)} shapes kept, {args.count} asked for", file=sys.stderr)
    if args.skip_file:
        skip, timed = outside_split(kept, args.held_out_from, args.split)
        write_lines_atomic(args.skip_file, skip)
        print(f"shapes.py: shapes {args.held_out_from}-{len(kept) - 1}: {timed} pairs in the {args.split} split to time, "
              f"{len(skip)} others -> {args.skip_file}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
