#!/usr/bin/python3
"""The prune hook on the recorded H100 timings, without a GPU (docs/triton.md).

For each held-out problem (the trainer's split, seed 0, as the model cards: test by default) and
precision of TritonGemm1x1 and TritonGemmSplitK, two lists a user might give @triton.autotune:
  space   every recorded config of the problem (the whole space, 576 and 768 configs);
  public  the list users copy (weights/<kernel>/public_configs.txt: Triton's matmul tutorial's
          configs for TritonGemm1x1, Triton 2.x's triton.ops.matmul list for the split-K GEMM; the
          configs inside the space, in their order).
The autotuner benchmarks what the hook keeps (keep = 1, 2, 4, 8 benchmarks, against len(list)
without it) and picks the fastest; replayed, its kernel time is the recorded time of the best kept
config. Reported: speed = recorded optimum / that time (as the model cards; 1 = the optimum, and
1 / speed is the kernel time reached relative to the optimum), geometric mean and 10th percentile
over problems, beside autotuning the whole list (the list's best). A kept set where nothing runs is
charged the problem's slowest recorded time (as `tunecast eval-search`).

The hook is the one users import (tunecast_triton.Pruner: `tunecast predict --among LIST` once per
problem and list), on stand-in Config objects. Inputs (out/timing/, git-ignored):
  python3 tools/gpu_timing/merge.py timings/TritonGemm1x1_h100/*.db.xz -o out/timing/h100_132.db
  python3 tools/gpu_timing/timing_db.py timings/TritonGemmSplitK_h100/*.db.xz -o out/timing/splitk_h100.db
Prints a markdown table; writes every figure and each problem's detail to --out (JSON).
"""
import argparse
import json
import math
import os
import sqlite3
import statistics
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tools"))
import tunecast_triton  # noqa: E402

# Each kernel as its Triton code names its parameters (tools/gpu_timing/*_kernel.py).
KERNELS = {
    "TritonGemm1x1": {"db": "out/timing/h100_132.db", "precisions": ("FP16", "FP32"),
                      "params": {"block_m": "BLOCK_M", "block_n": "BLOCK_N", "block_k": "BLOCK_K", "group_m": "GROUP_M",
                                 "num_warps": "num_warps", "num_stages": "num_stages"}},
    "TritonGemmSplitK": {"db": "out/timing/splitk_h100.db", "precisions": ("FP16", "BF16"),
                         "params": {"block_m": "BLOCK_M", "block_n": "BLOCK_N", "block_k": "BLOCK_K",
                                    "split_k": "SPLIT_K", "num_warps": "num_warps", "num_stages": "num_stages"}},
}


class Config:
    """A stand-in for triton.Config (what the hook reads of it)."""

    def __init__(self, values, names, keys):
        self.values = values
        self.kwargs = {k: v for n, k, v in zip(names, keys, values) if k not in ("num_warps", "num_stages")}
        self.num_warps = values[names.index("num_warps")]
        self.num_stages = values[names.index("num_stages")]


def percentile(values, q):
    """Linear interpolation between closest ranks (as tunecast eval-search's p10)."""
    v = sorted(values)
    pos = q * (len(v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (pos - lo) * (v[hi] - v[lo])


def geomean(values):
    return math.exp(sum(math.log(x) for x in values) / len(values))


def times_of(rows):
    """[(key, params, time_us, status)] -> {key: {params tuple: time_us, or None when any row failed}}."""
    measured = {}
    for key, params, t, status in rows:
        measured.setdefault(key, {}).setdefault(tuple(int(x) for x in params.split(",")), []).append(
            t if status == "ok" else None)
    return {key: {p: (None if None in ts else statistics.median(ts)) for p, ts in cfgs.items()}
            for key, cfgs in measured.items()}


def read_gemm1x1(path, split, split_of, descriptor_text):
    """The merged MIOpen-style DB (merge.py): [(problem text, precision, {config: time})] of `split`."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    times = times_of(con.execute("SELECT config, params, time_us, status FROM timings"))
    out = []
    for r in con.execute("SELECT * FROM config ORDER BY id"):
        if split != "all" and split_of(descriptor_text(r)) != split:
            continue
        text = (f"dir=F,dtype={r['data_type']},layout=NHWC,n={r['batchsize']},c={r['in_channels']},"
                f"k={r['out_channels']},h={r['in_h']},w={r['in_w']},y=1,x=1")
        out.append((text, r["data_type"], times[r["id"]]))
    con.close()
    return out


def read_splitk(path, split, split_of):
    """A generic timing DB (timing_db.py): the split hashes the canonical text without the arch item."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    times = times_of(con.execute("SELECT problem, params, time_us, status FROM timings"))
    out = []
    for pid, text, dtype in con.execute("SELECT id, problem, dtype FROM problems ORDER BY id"):
        no_arch = ",".join(item for item in text.split(",") if not item.startswith("arch="))
        if split == "all" or split_of(no_arch) == split:
            out.append((text, dtype, times[pid]))
    con.close()
    return out


def public_list(kernel):
    with open(os.path.join(REPO, "weights", kernel, "public_configs.txt")) as f:
        return [tuple(int(x) for x in line.split(",")) for line in f if line.strip() and not line.startswith("#")]


def replay(kernel, problems, pruner, keeps):
    """{(list name, precision): per-problem results} for one kernel."""
    spec = KERNELS[kernel]
    names, keys = pruner.names, pruner.keys
    public = public_list(kernel)
    results = {}
    for text, precision, times in problems:
        ok = [t for t in times.values() if t is not None]
        best, worst = min(ok), max(ok)
        for name, values in (("space", sorted(times)), ("public", public)):
            configs = [Config(v, names, keys) for v in values]
            ranked = pruner.rank(configs, text)

            def reached(kept):
                found = [times.get(c.values) for c in kept]
                found = [t for t in found if t is not None]
                return min(found) if found else worst
            row = {"problem": text, "list_len": len(configs), "optimum_us": best, "list_best_us": reached(configs),
                   "kept_us": {k: reached(ranked[:k]) for k in keeps},
                   "kept": {k: [",".join(map(str, c.values)) for c in ranked[:k]] for k in keeps},
                   "none_found": {k: all(times.get(c.values) is None for c in ranked[:k]) for k in keeps}}
            results.setdefault((name, precision), []).append(row)
    return {key: rows for key, rows in results.items() if key[1] in spec["precisions"]}


def summarize(rows, keeps):
    def stats(times):
        speeds = [r["optimum_us"] / t for r, t in zip(rows, times)]
        ratios = [1.0 / s for s in speeds]
        return {"geomean_speed": geomean(speeds), "p10_speed": percentile(speeds, 0.1),
                "time_ratio_geomean": geomean(ratios), "time_ratio_p90": percentile(ratios, 0.9)}
    n_list = max(r["list_len"] for r in rows)
    out = {"problems": len(rows), "list_len": n_list,
           "whole_list": {"benchmarks": n_list, **stats([r["list_best_us"] for r in rows])}, "hook": {}}
    for k in keeps:
        spent = min(k, n_list)
        out["hook"][str(k)] = {"benchmarks": spent, "benchmarks_saved": n_list - spent,
                               **stats([r["kept_us"][k] for r in rows]),
                               "reaches_list_best": sum(r["kept_us"][k] <= r["list_best_us"] for r in rows) / len(rows),
                               "none_found": sum(r["none_found"][k] for r in rows)}
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tunecast", help="the tunecast binary (default: tunecast_triton.find_tunecast)")
    ap.add_argument("--weights", default=os.path.join(REPO, "build", "weights"),
                    help="folder of the compiled models <kernel>.tcm (default build/weights)")
    ap.add_argument("--gemm1x1-db", default=os.path.join(REPO, KERNELS["TritonGemm1x1"]["db"]))
    ap.add_argument("--splitk-db", default=os.path.join(REPO, KERNELS["TritonGemmSplitK"]["db"]))
    ap.add_argument("--split", default="test", choices=("test", "val", "train", "all"),
                    help="the held-out problems (default test, as the cards)")
    ap.add_argument("--keeps", default="1,2,4,8", help="the hook's keep values (default 1,2,4,8)")
    ap.add_argument("--limit", type=int, default=0, help="the first N problems of each kernel only (a quick run)")
    ap.add_argument("--out", default=os.path.join(REPO, "out", "triton", "replay.json"), help="JSON output")
    args = ap.parse_args(argv)
    try:
        keeps = sorted({int(k) for k in args.keeps.split(",")})
    except ValueError:
        ap.error(f"--keeps {args.keeps}: comma-separated integers")
    for db in (args.gemm1x1_db, args.splitk_db):
        if not os.path.isfile(db):
            ap.error(f"{db}: no such file (this script's help says how to make it)")
    from tunecast_train.data import descriptor_text, split_of   # the trainer's own split (numpy)

    t0 = time.time()
    report = {"command": " ".join([os.path.relpath(sys.argv[0], REPO)] + (argv if argv is not None else sys.argv[1:])),
              "split": args.split, "keeps": keeps, "metric": "speed = recorded optimum / recorded time of the best "
              "config the autotuner benchmarks; time_ratio = 1 / speed", "kernels": {}}
    table = []
    for kernel, spec in KERNELS.items():
        model = os.path.join(args.weights, f"{kernel}.tcm")
        pruner = tunecast_triton.Pruner(model, lambda a: a["problem"], spec["params"], keep=max(keeps),
                                        tunecast=args.tunecast)
        if kernel == "TritonGemm1x1":
            problems = read_gemm1x1(args.gemm1x1_db, args.split, split_of, descriptor_text)
        else:
            problems = read_splitk(args.splitk_db, args.split, split_of)
        if args.limit:
            problems = problems[:args.limit]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # extrapolation notes, one per problem: counted in the JSON instead
            results = replay(kernel, problems, pruner, keeps)
        report["kernels"][kernel] = {"model": model, "tunecast_runs": pruner.predictions, "rows": []}
        for (name, precision), rows in sorted(results.items(), key=lambda kv: (kv[0][0] != "space", kv[0][1])):
            s = summarize(rows, keeps)
            report["kernels"][kernel]["rows"].append({"list": name, "precision": precision, **s, "detail": rows})
            cell = lambda d: f"{d['geomean_speed']:.3f} ({d['p10_speed']:.3f})"  # noqa: E731
            table.append(f"| {kernel} | {name} | {precision} ({s['problems']}) | {s['list_len']} | "
                         f"{cell(s['whole_list'])} | " + " | ".join(cell(s["hook"][str(k)]) for k in keeps) + " |")
    report["seconds"] = round(time.time() - t0, 1)
    print("speed = recorded optimum / recorded time of the best config benchmarked: geomean (p10) over problems\n")
    print("| kernel | list | precision (problems) | list length | autotune the whole list | "
          + " | ".join(f"hook keep={k}" for k in keeps) + " |")
    print("|---|---|---|---|---|" + "---|" * len(keeps))
    print("\n".join(table))
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    tmp = args.out + ".part"
    with open(tmp, "w") as f:
        json.dump(report, f, indent=1)
    os.replace(tmp, args.out)
    print(f"\n{args.out}: {report['seconds']} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
