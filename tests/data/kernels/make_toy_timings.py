#!/usr/bin/python3
"""A synthetic timing DB (tunecast-timings/2, docs/kernels.md) of ToyGemm.tcr: deterministic (the
same arguments give the same bytes of data), partial, with re-measurements and failures.

Landscape: a GEMM of m x n x k in tiles of block_m x block_n, K in blocks of block_k split in
split_k parts. Time = waves of tiles over the GPU's units x the padded work of a tile / its
efficiency (bigger and deeper tiles are more efficient, FP16 twice FP32), + split-K's reduction
+ a launch, x a deterministic noise of +-3 %. Failures the rules do not know:
- out_of_resources: the tiles' shared memory, (block_m + block_n) x block_k x bytes per element,
  over the architecture's limit (h100 24 KiB, a100 16 KiB): for large problems the fastest
  config on paper often fails;
- launch_fail: more than 65,535 tiles in the grid;
- timeout (flaky): about 1 % of the other measured configs get a second, failed row.
Each problem measures a random fraction (--fraction) of the configs the rules accept (whatever a
search measured, not a sweep); about 10 % of the ok ones twice.

  make_toy_timings.py --out toy.db [--problems 600] [--fraction 0.35] [--seed 0]
"""
import argparse
import hashlib
import math
import os
import random
import sqlite3
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ARCHS = {"h100": (132, 24576), "a100": (108, 16384)}   # (units, shared memory bytes): this toy's own
DTYPES = ("FP16", "FP32")
PARAMS = ("block_m", "block_n", "block_k", "split_k")
DOMAINS = ((16, 32, 64, 128), (16, 32, 64, 128), (16, 32, 64), (1, 2, 4))
FIELDS = ("m", "n", "k", "dtype", "arch")


def configs():
    return [(a, b, c, d) for a in DOMAINS[0] for b in DOMAINS[1] for c in DOMAINS[2] for d in DOMAINS[3]]


def valid(problem, cfg):
    """ToyGemm.tcr's rule: each split of K holds a block."""
    return cfg[2] * cfg[3] <= max(problem["k"], cfg[2])


def failure(problem, cfg):
    """The failure kind of a config that the rules accept (None: it runs), always the same."""
    bm, bn, bk, sk = cfg
    units, smem = ARCHS[problem["arch"]]
    if (bm + bn) * bk * (2 if problem["dtype"] == "FP16" else 4) > smem:
        return "out_of_resources"
    if math.ceil(problem["m"] / bm) * math.ceil(problem["n"] / bn) * sk > 65535:
        return "launch_fail"
    return None


def _unit(*key):
    """A deterministic number in [0, 1) from the key."""
    return int.from_bytes(hashlib.sha256("|".join(map(str, key)).encode()).digest()[:8], "big") / 2 ** 64


def time_us(problem, cfg, repeat=0):
    """The landscape's time of a config that runs (noise +-3 %, the same for the same repeat)."""
    bm, bn, bk, sk = cfg
    m, n, k = problem["m"], problem["n"], problem["k"]
    units, _ = ARCHS[problem["arch"]]
    tiles = math.ceil(m / bm) * math.ceil(n / bn) * sk
    waves = math.ceil(tiles / units)
    work = bm * bn * math.ceil(math.ceil(k / sk) / bk) * bk
    eff = (bm * bn / (bm + bn)) * (bk / (bk + 16)) * (2.0 if problem["dtype"] == "FP16" else 1.0)
    t = waves * work / eff / 2000.0 + 3.0 + (m * n * (sk - 1)) / 4e5
    return round(t * (1 + 0.06 * (_unit(canonical(problem), cfg, repeat) - 0.5)), 3)


def canonical(problem):
    return ",".join(f"{f}={problem[f]}" for f in FIELDS)


def problems(count, seed):
    rng = random.Random(seed)
    out, seen = [], set()
    while len(out) < count:
        p = {"m": int(2 ** rng.uniform(6, 14)), "n": int(2 ** rng.uniform(6, 14)), "k": int(2 ** rng.uniform(6, 13)),
             "dtype": "FP16" if rng.random() < 0.7 else "FP32", "arch": "h100" if rng.random() < 0.7 else "a100"}
        if canonical(p) not in seen:
            seen.add(canonical(p))
            out.append(p)
    return out


def write(path, count=600, fraction=0.35, seed=0):
    if os.path.exists(path):
        os.remove(path)
    con = sqlite3.connect(path)
    with open(os.path.join(HERE, "ToyGemm.tcr")) as fh:
        definition = fh.read()
    con.executescript("""
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
        CREATE TABLE problems (id INTEGER PRIMARY KEY, problem TEXT NOT NULL UNIQUE,
                               m INTEGER, n INTEGER, k INTEGER, dtype TEXT, arch TEXT);
        CREATE TABLE timings (problem INTEGER NOT NULL REFERENCES problems(id), params TEXT NOT NULL,
                              time_us REAL, status TEXT NOT NULL);
        CREATE INDEX timings_problem ON timings(problem);""")
    meta = {"format": "tunecast-timings/2", "solver": "ToyGemm", "params": ",".join(PARAMS),
            "fields": ",".join(FIELDS), "time_unit": "us", "definition": definition,
            "generator": f"tests/data/kernels/make_toy_timings.py --problems {count} --fraction {fraction} --seed {seed}"}
    con.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
    rng = random.Random(seed + 1)
    rows = []
    for pid, p in enumerate(problems(count, seed), 1):
        con.execute("INSERT INTO problems VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (pid, canonical(p), p["m"], p["n"], p["k"], p["dtype"], p["arch"]))
        space = [c for c in configs() if valid(p, c)]
        for cfg in rng.sample(space, max(1, round(fraction * len(space)))):
            params = ",".join(map(str, cfg))
            kind = failure(p, cfg)
            if kind:
                rows.append((pid, params, None, kind))
                continue
            rows.append((pid, params, time_us(p, cfg), "ok"))
            r = rng.random()
            if r < 0.10:
                rows.append((pid, params, time_us(p, cfg, 1), "ok"))
            elif r < 0.11:
                rows.append((pid, params, None, "timeout"))
    con.executemany("INSERT INTO timings VALUES (?, ?, ?, ?)", rows)
    con.commit()
    con.close()
    return len(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="the timing DB to write (replaced)")
    ap.add_argument("--problems", type=int, default=600)
    ap.add_argument("--fraction", type=float, default=0.35, help="share of each problem's valid configs measured")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if args.problems < 1 or not 0 < args.fraction <= 1:
        sys.exit("make_toy_timings: --problems must be at least 1 and --fraction in (0, 1]")
    n = write(args.out, args.problems, args.fraction, args.seed)
    print(f"make_toy_timings: wrote {args.out}: {args.problems} problems, {n} measurements", file=sys.stderr)


if __name__ == "__main__":
    main()
