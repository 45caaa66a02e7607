#!/usr/bin/env python3
"""Check weights/rules/TritonGemm1x1.tcr's shared-memory rule against the timing data.

The rule (mirrored below in Python; keep the two in step) must reject every config the data
marks out_of_resources and accept every config that ran (status ok; also wrong_result and
launch_fail, which got past the resource check, though the data has none). Checks both
  - every row of the timings table (problem x config), and
  - every compiled kernel of the kernels table against Triton's own shared-memory figure
    (accepted <=> shared <= 232448 bytes),
and prints the mismatches with their numbers. Exit status 1 if any. Runs on the CPU.

The project's rules compiler checks the .tcr itself the same way when built: compile the .tcr
and evaluate its constraints on each timings row (see timings/README.md).
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from merge import load  # noqa: E402

SMEM_LIMIT = 232448  # H100 shared_memory_per_block_optin
DOMAINS = {"block_m": {32, 64, 128, 256}, "block_n": {32, 64, 128, 256}, "block_k": {32, 64, 128},
           "group_m": {1, 8}, "num_warps": {4, 8}, "num_stages": {2, 3, 4}}


def shared_need(dtype, k, c, bm, bn, bk, gm, nw, ns):
    """The .tcr's `max(pipeline, epilogue)` in bytes."""
    eb = 4 if dtype == "FP32" else 2
    x_tile, w_tile = bm * bk * eb, bk * bn * eb
    bufs = ns - 1 if bm == 32 else ns
    x_bufs = bufs if dtype == "FP32" or c % 16 == 0 else 1
    w_bufs = bufs if dtype == "FP32" or k % 16 == 0 else 1
    pipeline = x_bufs * x_tile + w_bufs * w_tile
    wide = dtype == "FP32" and nw == 8 and not (bm == 256 and bn == 256 and (k % 16 == 0 or k == 1))
    return max(pipeline, bm * bn * (4 if wide else 2))


def accepts(dtype, k, c, cfg):
    for name, v in zip(DOMAINS, cfg):
        if v not in DOMAINS[name]:
            return False
    return shared_need(dtype, k, c, *cfg) <= SMEM_LIMIT


CLASS_VALUE = {"1": 1, "16": 16, "x": 24}  # a representative N or K of each specialization class


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("db", help="merged timings (.db or .db.xz), e.g. the shipped parts merged into one: "
                    "merge.py timings/TritonGemm1x1_h100/*.db.xz -o out/timing/h100_132.db")
    args = ap.parse_args(argv)
    if not os.path.exists(args.db):
        ap.error(f"{args.db}: no such file")
    con, tmpdir = load(args.db)
    bad = 0
    try:
        counts = {}
        shown = 0
        for dtype, k, c, params, status in con.execute(
                "SELECT c.data_type, c.out_channels, c.in_channels, t.params, t.status "
                "FROM timings t JOIN config c ON c.id = t.config"):
            cfg = tuple(int(v) for v in params.split(","))
            acc = accepts(dtype, k, c, cfg)
            ran = status != "out_of_resources"
            key = ("ran" if ran else "out_of_resources", "accepted" if acc else "rejected")
            counts[key] = counts.get(key, 0) + 1
            if acc != ran:
                bad += 1
                if shown < 20:
                    shown += 1
                    print(f"MISMATCH timings: {dtype} k={k} c={c} {params}: {status}, rule needs "
                          f"{shared_need(dtype, k, c, *cfg)} bytes")
        print("timings rows: " + ", ".join(f"{a} & {b}: {n}" for (a, b), n in sorted(counts.items())))
        kcounts = {}
        for dtype, nc, kc, params, status, shared in con.execute(
                "SELECT dtype, n_class, k_class, params, status, shared FROM kernels"):
            cfg = tuple(int(v) for v in params.split(","))
            need = shared_need(dtype, CLASS_VALUE[nc], CLASS_VALUE[kc], *cfg)
            acc = need <= SMEM_LIMIT
            ran = status == "ok"
            kcounts[(ran, acc)] = kcounts.get((ran, acc), 0) + 1
            if acc != ran or (shared is not None and (shared > SMEM_LIMIT) != (status == "out_of_resources")):
                bad += 1
                print(f"MISMATCH kernels: {dtype} N class {nc} K class {kc} {params}: {status}, Triton shared "
                      f"{shared}, rule needs {need}")
        print("compiled kernels: " + ", ".join(
            f"{'ran' if r else 'refused'} & {'accepted' if a else 'rejected'}: {n}" for (r, a), n in sorted(kcounts.items())))
    finally:
        con.close()
        if tmpdir:
            import shutil
            shutil.rmtree(tmpdir, ignore_errors=True)
    print(f"{bad} mismatches")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
