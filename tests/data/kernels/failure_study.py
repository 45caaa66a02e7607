#!/usr/bin/python3
"""Does tunecast-train learn failures as bad? Trains ToyGemm on a synthetic timing DB
(make_toy_timings.py: partial data, failures the rules do not know) with and without the failure
term, then scores each model on the held-out problems (val + test) against the landscape's ground
truth: the top-1 config (the first candidate of a width-10 beam that the rules accept, as the
runtime's constrained beam returns it; and greedy), the % of problems where it fails, and the
speed (the problem's fastest running config's time / the top-1's, geometric mean; a failure
counts 0.5) and the % where it is the fastest.

  failure_study.py --work /tmp/fs --seeds 0 1 --runs no_term:--failure-weight=0 departure_w1:--failure-weight=1 \
      departure_w3:--failure-weight=3 sequence_w1:--failure-weight=1,--failure-loss=sequence
(about 2 minutes a run on one core; docs/training.md, "Training any kernel", has the results)
"""
import argparse
import math
import os
import subprocess
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.normpath(os.path.join(HERE, "..", "..", "..", "tools"))
sys.path.insert(0, HERE)
sys.path.insert(0, TOOLS)
import make_toy_timings as toy  # noqa: E402
from tunecast_train import data, features, kernel, models, search  # noqa: E402


def load(run):
    ck = torch.load(os.path.join(run, "model.pt"), map_location="cpu")
    a = ck["args"]
    enc = features.Encoding.from_json(ck["encoding"])
    vocab = data.Vocabulary.from_json(ck["vocabulary"])
    model = models.build(a["model"], enc.shape, vocab.size, np.array(ck["mean"]), np.array(ck["std"]),
                         emb=a["emb"], units=a["units"], hidden=a["hidden"], filters=a["filters"],
                         dropout=a["dropout"], layers=a["layers"], heads=a["heads"])
    model.load_state_dict(ck["state_dict"])
    return model.eval(), enc, vocab


def score(run, rows):
    model, enc, vocab = load(run)
    X = torch.tensor(enc.matrix(np.array([r["fields"] for r in rows])))
    out = {}
    for label, width in (("beam10", 10), ("greedy", 1)):
        beams = search.beam_search(model, X, vocab, width)
        fails = best_hits = none = 0
        logs, kinds = [], {}
        for r, bs in zip(rows, beams):
            p = r["toy"]
            cands = [tuple(vocab.decode(t)) for t in bs]
            pick = next((c for c in cands if toy.valid(p, c)), None)
            running = [toy.time_us(p, c) for c in toy.configs() if toy.valid(p, c) and not toy.failure(p, c)]
            if pick is None:
                none += 1
                logs.append(math.log(0.5))
                continue
            if toy.failure(p, pick):
                fails += 1
                kinds[toy.failure(p, pick)] = kinds.get(toy.failure(p, pick), 0) + 1
                logs.append(math.log(0.5))
                continue
            t = toy.time_us(p, pick)
            logs.append(math.log(min(running) / t))
            best_hits += t == min(running)
        n = len(rows)
        out[label] = {"fail%": 100 * fails / n, "speed": math.exp(sum(logs) / n), "best%": 100 * best_hits / n,
                      "no_valid%": 100 * none / n, "failure_kinds": kinds}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", required=True)
    ap.add_argument("--problems", type=int, default=1500)
    ap.add_argument("--fraction", type=float, default=0.35)
    ap.add_argument("--data-seed", type=int, default=0)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--recipe", default="--hidden 64 --units 64 --emb 16 --threads 1",
                    help="tunecast-train flags every run gets")
    ap.add_argument("--runs", nargs="+", default=["no_term:--failure-weight=0", "departure:--failure-weight=1"],
                    help="NAME:FLAGS (flags comma-separated) per variant")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    db = os.path.join(args.work, "toy.db")
    toy.write(db, args.problems, args.fraction, args.data_seed)
    k = kernel.Kernel.load(os.path.join(HERE, "ToyGemm.json"))
    rows, _ = kernel.Recordings(k, [db]).rows()
    held = [r for r in rows if r["split"] in ("val", "test")]
    for r in held:
        v = dict(zip(k.field_names, r["problem"].replace("=", ",").split(",")[1::2]))
        r["toy"] = {"m": int(v["m"]), "n": int(v["n"]), "k": int(v["k"]), "dtype": v["dtype"], "arch": v["arch"]}
    print(f"{len(held)} held-out problems (val + test) of {len(rows)}", flush=True)
    results = {}
    for spec in args.runs:
        name, flags = spec.split(":", 1)
        for seed in args.seeds:
            out = os.path.join(args.work, f"{name}_s{seed}")
            cmd = ["/usr/bin/python3", os.path.join(TOOLS, "tunecast-train"), "--kernel", os.path.join(HERE, "ToyGemm.json"),
                   "--timings", db, "--out", out, "--epochs", str(args.epochs), "--seed", str(seed)] + \
                args.recipe.split() + [f for f in flags.split(",") if f]
            run = subprocess.run(cmd, capture_output=True, text=True)
            if run.returncode:
                sys.exit(f"failure_study: {' '.join(cmd)} failed:\n{run.stdout[-2000:]}{run.stderr[-2000:]}")
            results[(name, seed)] = score(out, held)
            print(name, seed, {k2: {k3: (round(v3, 3) if not isinstance(v3, dict) else v3) for k3, v3 in v2.items()}
                               for k2, v2 in results[(name, seed)].items()}, flush=True)
    print("\nvariant            top-1 of        fail %   speed   best %   (mean over seeds)")
    for spec in args.runs:
        name = spec.split(":", 1)[0]
        for label in ("beam10", "greedy"):
            vals = [results[(name, s)][label] for s in args.seeds]
            print(f"{name:18s} {label:14s} {np.mean([v['fail%'] for v in vals]):7.1f} {np.mean([v['speed'] for v in vals]):7.3f} "
                  f"{np.mean([v['best%'] for v in vals]):8.1f}")


if __name__ == "__main__":
    main()
