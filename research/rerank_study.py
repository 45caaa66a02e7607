#!/usr/bin/python3
"""Would a candidate re-ranker that remembers the training problems beat the model's own order?

Issue 7 names "a candidate re-ranker" among the ways to raise perfect@1. The information a
re-ranker can add to the model's log-probability is memory of the training data: which tuned
vectors the nearest training problems have (the nearest-neighbour baseline, docs/training.md) and
how often a vector was tuned at all. This study re-orders the runtime's beam candidates with such
evidence, fits each rule's one or two weights on the validation split (train-only model, memory =
train) and applies them to the test split (the train + val twin, memory = train + val), exactly as
a shipped re-ranker would have to be chosen. It also tries the plain mix: the model's first 10 - j
candidates followed by the nearest problems' first j vectors. Scores are means over the
(arch, precision) groups of perfect@1 and perfect@10, and perfect@1 alone.

  /usr/bin/python3 research/rerank_study.py --solver ConvAsmBwdWrW3x3 \\
      --val-model TRAIN_ONLY.tcm --test-model TRAIN_VAL.tcm --data .device/data --work /tmp/rerank

runs `tunecast eval --candidates` (beam 30, the models' search width) on both DBs and prints the
table. Findings: research/history.md, "Targets, honestly".
"""
import argparse
import collections
import json
import math
import os
import subprocess
import sys

import numpy as np

# tools/ holds the trainer's package tunecast_train.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools"))
from tunecast_train import baselines, data  # noqa: E402

DBS = {"gfx900": "gfx900_56", "gfx906": "gfx906_60"}
MEMORY = {"val": ("train",), "test": ("train", "val")}
BEAM = 30

# rule -> candidate weights; a candidate's new score is log p + bonus(rule, weights, evidence)
GRID = {
    "nearest-bonus": [(g, r) for g in (0.1, 0.25, 0.5, 1.0, 2.0) for r in (1, 2, 3, 5)],
    "nearest-log-rank": [(g,) for g in (0.05, 0.1, 0.2, 0.3, 0.5, 1.0)],
    "log-frequency": [(g,) for g in (0.05, 0.1, 0.2, 0.3, 0.5)],
}


def bonus(rule, w, near_rank, count):
    if rule == "nearest-bonus":  # + g when among the nearest problems' first r vectors
        return w[0] if near_rank <= w[1] else 0.0
    if rule == "nearest-log-rank":  # - g log(rank among the nearest problems' vectors)
        return -w[0] * math.log(min(near_rank, 2 * BEAM))
    return w[0] * math.log1p(count)  # log-frequency: + g log(1 + times tuned in memory)


def run_eval(args, model, arch, split, path):
    cmd = [args.tunecast, "eval", model, "--perfdb", os.path.join(args.perfdb_dir, DBS[arch] + ".db"),
           "--solver", args.solver, "--precision", "FP32,FP16", "--split", split, "--beam", str(BEAM),
           "--no-baselines", "--json", "--candidates", path]
    if subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode != 0:  # tunecast said why on stderr
        sys.exit(f"rerank_study: failed: {' '.join(cmd)}")


def load_split(args, rows, model, split):
    """{(arch, precision): [problem]}, a problem = (tuned, [(vector, score)], nearest rank, counts)."""
    groups = {}
    for arch in DBS:
        path = os.path.join(args.work, f"{args.solver}.{arch}.{split}.jsonl")
        print(f"[rerank] {split}: tunecast eval {os.path.basename(model)} on {arch} -> {path}", flush=True)
        run_eval(args, model, arch, split, path)
        by_id = {r["config_id"]: r for r in rows if r["arch_name"] == arch}
        lines = [json.loads(t) for t in open(path)]
        for precision, dtype in (("FP32", data.DTYPES["FP32"]), ("FP16", data.DTYPES["FP16"])):
            evaluated = [(l, by_id[l["config_id"]]) for l in lines if by_id[l["config_id"]]["dtype"] == dtype]
            memory = [r for r in rows if r["arch_name"] == arch and r["dtype"] == dtype
                      and r["split"] in MEMORY[split]]
            if not evaluated or not memory:
                continue
            near = baselines.nearest(data.fields_matrix(memory), [r["params"] for r in memory],
                                     data.fields_matrix([r for _, r in evaluated]), 2 * BEAM)
            counts = collections.Counter(tuple(r["params"]) for r in memory)
            groups[(arch, precision)] = [
                (tuple(l["tuned"]), [(tuple(c["values"]), c["score"]) for c in l["candidates"]],
                 {tuple(v): i + 1 for i, v in enumerate(n)}, [tuple(v) for v in n], counts)
                for (l, _), n in zip(evaluated, near)]
    return groups


def reorder(problem, rule, w, mix=0):
    _, cands, near_rank, near, counts = problem
    if rule == "mix":  # the model's first 10 - mix, then the nearest problems' vectors
        out = [v for v, _ in cands[:10 - mix]]
        out += [v for v in near if v not in out][:mix]
        return out + [v for v, _ in cands if v not in out]
    if rule == "model":
        return [v for v, _ in cands]
    key = lambda c: c[1] + bonus(rule, w, near_rank.get(c[0], 2 * BEAM), counts.get(c[0], 0))
    return [v for v, _ in sorted(cands, key=key, reverse=True)]


def scores(groups, rule, w=None, mix=0):
    """(mean over groups of p@1 + p@10, mean p@1, mean p@10)."""
    p1, p10 = [], []
    for problems in groups.values():
        lists = [reorder(p, rule, w, mix) for p in problems]
        p1.append(100.0 * np.mean([p[0] in l[:1] for p, l in zip(problems, lists)]))
        p10.append(100.0 * np.mean([p[0] in l[:10] for p, l in zip(problems, lists)]))
    return np.mean(p1) + np.mean(p10), np.mean(p1), np.mean(p10)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--solver", required=True, choices=sorted(data.SOLVER_PARAMS))
    ap.add_argument("--val-model", required=True, help="compiled model trained on train (.tcm)")
    ap.add_argument("--test-model", required=True, help="compiled model trained on train + val (.tcm)")
    ap.add_argument("--data", required=True, help="tools/dataset.py output: a folder of <solver>.csv")
    ap.add_argument("--perfdb-dir", default=data.DEFAULT_PERFDB_DIR)
    ap.add_argument("--tunecast", default="build/codegen/tunecast")
    ap.add_argument("--work", required=True, help="folder for the candidate files")
    args = ap.parse_args()
    for path in (args.val_model, args.test_model, args.tunecast, args.data):
        if not os.path.exists(path):
            sys.exit(f"rerank_study: {path}: no such file or folder")
    os.makedirs(args.work, exist_ok=True)
    rows = data.load(args.data, [args.solver], list(DBS), ["FP32", "FP16"])
    val = load_split(args, rows, args.val_model, "val")
    test = load_split(args, rows, args.test_model, "test")

    print(f"\n{args.solver}: p@1+p@10 / p@1 / p@10, means over {len(test)} groups")
    print(f"{'rule':18s} {'weights (fit on val)':22s} {'val':>20s} {'test':>20s}")
    fmt = lambda s: f"{s[0]:6.2f} /{s[1]:6.2f} /{s[2]:6.2f}"
    print(f"{'model order':18s} {'':22s} {fmt(scores(val, 'model')):>20s} {fmt(scores(test, 'model')):>20s}")
    for rule, grid in GRID.items():
        best = max(grid, key=lambda w: scores(val, rule, w)[0])
        print(f"{rule:18s} {str(best):22s} {fmt(scores(val, rule, best)):>20s} "
              f"{fmt(scores(test, rule, best)):>20s}")
    best = max(range(1, 6), key=lambda j: scores(val, "mix", mix=j)[0])
    print(f"{'mix':18s} {f'last {best} of 10 nearest':22s} {fmt(scores(val, 'mix', mix=best)):>20s} "
          f"{fmt(scores(test, 'mix', mix=best)):>20s}")


if __name__ == "__main__":
    main()
