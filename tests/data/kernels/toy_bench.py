#!/usr/bin/env python3
"""Stand-in benchmark process for tests/data/kernels/toy_gemm.tcr (docs/search.md's line protocol):
reads one candidate per line (tile_m,tile_n,split_k,warps), answers a deterministic time in us,
or 'fail' for 128x128 tiles (a config the rules allow that fails at run time)."""
import math
import sys

for line in sys.stdin:
    tile_m, tile_n, split_k, warps = (int(v) for v in line.split(","))
    if tile_m == 128 and tile_n == 128:
        print("fail", flush=True)
        continue
    time = 10 + abs(math.log2(tile_m) - 5) + 2 * abs(math.log2(tile_n) - 6) + 0.5 * split_k + abs(warps - 4)
    print(round(time, 3), flush=True)
