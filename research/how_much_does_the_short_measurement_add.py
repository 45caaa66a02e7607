#!/usr/bin/python3
"""How much slower per launch does the harness's short measurement (a CUDA graph of 2 launches)
read than the full one (a graph of 10), for the same config of the same problem?

The first timings (timings/ at commit ed77676) measured a config in full only when its lone
checking launch took <= 2x the problem's fastest; tiny problems' checking launches are mostly
launch overhead, so which configs drew the full measurement was close to chance. The timings
measured again (2026-11-26, every config whose checking launch took <= 50 us in full) measured
many configs the other way round. Pairs of rows of one (problem, config) measured short in one
file and full in the other give the offset; pairs measured the same way in both give the
day-to-day repeatability to compare it with. Prints the medians by measurement pair and by time.

  research/how_much_does_the_short_measurement_add.py FIRST.db AGAIN.db

FIRST.db, AGAIN.db: merged timing files (tools/gpu_timing/merge.py); an offset a file carries
(meta short_launch_offset_us) is added back to its short rows first, so both are as measured.
"""
import argparse
import collections
import os
import sqlite3
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "gpu_timing"))
from triton_gemm1x1 import BATCH, SHORT_BATCH  # noqa: E402  (torch and triton load lazily: none needed here)


def rows(path):
    """{(dtype, n, c, k, h, w, params): (time_us as measured, launches)} of the rows that ran."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    meta = dict(con.execute("SELECT key, value FROM meta"))
    offset = float(meta.get("short_launch_offset_us", "0"))
    problem = {r[0]: r[1:] for r in con.execute(
        "SELECT id, data_type, batchsize, in_channels, out_channels, in_h, in_w FROM config")}
    launches = {(c, p): b for c, p, b in con.execute("SELECT config, params, launches FROM timing_detail")}
    out = {}
    for c, p, t in con.execute("SELECT config, params, time_us FROM timings WHERE status = 'ok'"):
        b = launches[(c, p)]
        out[problem[c] + (p,)] = (t + offset if b == SHORT_BATCH else t, b)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("first", help="merged timings measured first")
    ap.add_argument("again", help="merged timings measured again")
    args = ap.parse_args()
    for path in (args.first, args.again):
        if not os.path.exists(path):
            ap.error(f"{path}: no such file")
    first, again = rows(args.first), rows(args.again)
    pairs = collections.defaultdict(list)
    for key, (t1, b1) in first.items():
        if key in again:
            t2, b2 = again[key]
            pairs[(b1, b2)].append((t1, t2))
    print(f"{len(first)} and {len(again)} rows that ran; {sum(map(len, pairs.values()))} in both")
    print("| launches (first, again) | rows | median first - again (us) | median first / again | "
          "by the time measured in full (else again): <5 us, 5-10, 10-50, >=50 us (median difference, rows) |")
    print("|---|---|---|---|---|")
    short_minus_full = []
    for (b1, b2), v in sorted(pairs.items()):
        full = [t1 if b1 == BATCH and b2 != BATCH else t2 for t1, t2 in v]
        diff = [t1 - t2 for t1, t2 in v]
        bins = []
        for lo, hi in ((0, 5), (5, 10), (10, 50), (50, float("inf"))):
            d = [x for x, f in zip(diff, full) if lo <= f < hi]
            bins.append(f"{statistics.median(d):+.2f} ({len(d)})" if d else "-")
        print(f"| {b1}, {b2} | {len(v)} | {statistics.median(diff):+.2f} | "
              f"{statistics.median(t1 / t2 for t1, t2 in v):.3f} | {', '.join(bins)} |")
        if b1 != b2:
            short_minus_full += diff if b1 == SHORT_BATCH else [-x for x in diff]
    if not short_minus_full:
        sys.exit("no (problem, config) measured short in one file and full in the other")
    print(f"\nshort - full over {len(short_minus_full)} pairs of rows: median "
          f"{statistics.median(short_minus_full):.2f} us, quartiles "
          f"{statistics.quantiles(short_minus_full, n=4)[0]:.2f} .. {statistics.quantiles(short_minus_full, n=4)[2]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
