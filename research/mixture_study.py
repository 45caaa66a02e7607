#!/usr/bin/python3
"""Whole-vector ensembles of runs that decode in different orders, on one split, in PyTorch.

The shipped ensembles average the members' next-token distributions step by step, which only works
for members that emit the parameters in the same order. A mixture over whole vectors has no such
limit: every run gives every candidate vector a probability (its tokens fed in the run's own decode
order, train.py --param-order), so members of any order can vote. This study measures that:

1. every run of the pool searches each problem (beam --width, training's masked search, no validity
   rules) and the candidates of all runs are pooled per problem;
2. every run scores every pooled candidate (log p of the whole vector, end token included); scored
   whole, a run's own candidates must keep the order its search gave them, or the tool stops (a
   decode order mishandled);
3. for each recipe ("mlp=2,mlp@041235=1": KIND=COUNT, the kind of a run being its model, followed by
   @ and its decode order if it has one, digits joined, or by "-" where a position is 10 or more)
   --draws member sets are drawn (research/recipe_study.py's draws), and each draw ranks the union of
   its own members' candidates by
     mixture: log of the mean of the members' probabilities of the vector, or
     product: the mean of their log-probabilities (the geometric mean);
   for a draw whose members share one order, --step also runs the shipped combination (the mean of
   next-token distributions, one beam of --width) for comparison.
perfect@k is the share of problems whose tuned vector is among the first k. Steps 1-2 are cached in
--work (scores.pt), so recipes can be added without searching again; a GPU (--device cuda) makes
step 1 fast for a large pool.

  /usr/bin/python3 research/mixture_study.py --runs RUN... --work DIR --recipe mlp=3 \\
      --recipe mlp=2,mlp@041235=1 [--draws 12] [--seed 0] [--width 100] [--step] [--split val] \\
      [--data .device/data] [--device cpu] [--max-problems N]
prints one line per recipe and combination (mean and sd over draws of p@1 + p@10, the mean over
groups of each p@k, and gfx900 FP32's p@k) and writes DIR/mixtures.json and DIR/mixtures.png.
Runs need model.pt (train.py writes it); they must share solver, split seed, archs and precisions,
and their vocabularies must hold the same values (orders may differ).
"""
import argparse
import hashlib
import json
import math
import os
import random
import statistics
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
# The studies beside this file, and tools/: the trainer's package tunecast_train.
sys.path[:0] = [HERE, os.path.join(os.path.dirname(HERE), "tools")]
from tunecast_train import data, metrics, search  # noqa: E402
from study_ensemble import Ensemble, load_run  # noqa: E402
from recipe_study import draws_of, mean_sd, parse_recipe  # noqa: E402

KS = (1, 10, 30, 50, 100)


def kind_of(args):
    order = args.get("param_order")
    if not order:
        return args["model"]
    return args["model"] + "@" + ("" if max(order) < 10 else "-").join(str(q) for q in order)


def in_solver_order(values, order):
    """A vector decoded in `order` (step s emits solver position order[s]) in the solver's order."""
    if not order:
        return list(values)
    out = [None] * len(values)
    for step, q in enumerate(order):
        out[q] = values[step]
    return out


@torch.no_grad()
def vector_logp(model, X, vocab, problem_of, vectors, batch=16384):
    """log p of each solver-ordered vector under `model`: its tokens fed in the run's decode order by
    the model's teacher forcing, scored as the search scores a finished hypothesis (every step's
    token, then the end token). -inf for a value the run never learned."""
    tokens = torch.tensor([vocab.encode(vocab.to_decode_order(v)) for v in vectors], dtype=torch.long)
    unknown = (tokens < 0).any(1)
    tokens = tokens.clamp(min=0).to(X.device)
    problem_of = torch.tensor(problem_of, dtype=torch.long, device=X.device)
    out = torch.empty(len(tokens))
    for s in range(0, len(tokens), batch):
        t = tokens[s:s + batch]
        start_end = torch.zeros(len(t), 1, dtype=torch.long, device=X.device)  # token 0 starts and ends
        logits = model.teacher(X[problem_of[s:s + batch]], torch.cat([start_end, t], 1))
        logp = torch.log_softmax(logits.float(), -1)
        out[s:s + len(t)] = logp.gather(2, torch.cat([t, start_end], 1).unsqueeze(2)).sum((1, 2)).cpu()
    out[unknown] = -math.inf
    return out


def inputs_of(enc, rows, device):
    return torch.tensor(enc.matrix(data.fields_matrix(rows)), dtype=torch.float32, device=device)


def search_and_score(runs, loaded, groups, width, device):
    """Steps 1-2: {group: {"targets", "union" (per problem, candidate vectors), "beams" (per run, per
    problem, indices into the union, best first), "logp" (per run, per problem, a tensor over the
    union)}}."""
    out = {}
    t0 = time.time()
    for g, rows in groups.items():
        beams = []
        for run, (model, enc, vocab, _) in zip(runs, loaded):
            X = inputs_of(enc, rows, device)
            found = search.beam_search(model.to(device), X, vocab, width)
            beams.append([[tuple(in_solver_order(vocab.decode(t), vocab.decode_order)) for t in b]
                          for b in found])
            print(f"[mixture] {g[0]}/{g[1]}: {os.path.basename(run)} searched ({time.time() - t0:.0f}s)",
                  flush=True)
        union, index = [], []
        for i in range(len(rows)):
            seen = {}
            for b in beams:
                for v in b[i]:
                    seen.setdefault(v, len(seen))
            union.append(list(seen))
            index.append(seen)
        problem_of = [i for i, u in enumerate(union) for _ in u]
        flat = [list(v) for u in union for v in u]
        bounds = np.cumsum([0] + [len(u) for u in union])
        logp = []
        for run, b, (model, enc, vocab, _) in zip(runs, beams, loaded):
            lp = vector_logp(model, inputs_of(enc, rows, device), vocab, problem_of, flat)
            logp.append([lp[bounds[i]:bounds[i + 1]] for i in range(len(rows))])
            # Self-check: scored whole, a run's own candidates keep the order its search gave them
            # (a vector fed in the wrong decode order would not).
            for i in range(len(rows)):
                own = logp[-1][i][[index[i][v] for v in b[i]]]
                if not torch.isfinite(own).all() or (len(own) > 1 and (own[1:] - own[:-1]).max() > 1e-4):
                    sys.exit(f"mixture_study: {run} scores its own beam out of order for a {g[0]}/{g[1]} "
                             f"problem ({own.tolist()[:5]}...): the vector scoring disagrees with the search")
        print(f"[mixture] {g[0]}/{g[1]}: {len(rows)} problems, {len(flat)} pooled candidates scored by "
              f"{len(runs)} runs ({time.time() - t0:.0f}s)", flush=True)
        out[g] = {"targets": [tuple(r["params"]) for r in rows], "union": union,
                  "beams": [[[index[i][v] for v in b[i]] for i in range(len(rows))] for b in beams],
                  "logp": logp}
    return out


def perfect(ranked, targets, ks):
    """{k: perfect@k} of candidate lists, best first (metrics.score's figures)."""
    scored = metrics.score(ranked, targets, ks)
    return {k: scored[f"perfect@{k}"] for k in ks}


def combine(cache, members, how, ks):
    """{group: perfect@k} of the draw `members` (indices into the pool) ranking its own candidates."""
    res = {}
    for g, c in cache.items():
        ranked = []
        for i in range(len(c["targets"])):
            own = sorted({j for m in members for j in c["beams"][m][i]})
            lp = torch.stack([c["logp"][m][i][own] for m in members])
            score = torch.logsumexp(lp, 0) if how == "mixture" else lp.mean(0)
            order = torch.sort(score, descending=True, stable=True).indices.tolist()
            ranked.append([c["union"][i][own[j]] for j in order])
        res[g] = perfect(ranked, c["targets"], ks)
    return res


def step_ensemble(loaded, members, groups, width, device, ks):
    """The shipped combination (mean next-token distribution), members of one decode order."""
    chosen = [loaded[m] for m in members]
    model = Ensemble([m for m, *_ in chosen], [e.shape for _, e, *_ in chosen]).to(device)
    vocab = chosen[0][2]
    res = {}
    for g, rows in groups.items():
        X = torch.cat([inputs_of(e, rows, device).reshape(len(rows), -1) for _, e, *_ in chosen], 1)
        found = search.beam_search(model, X, vocab, width)
        ranked = [[tuple(in_solver_order(vocab.decode(t), vocab.decode_order)) for t in b] for b in found]
        res[g] = perfect(ranked, [tuple(r["params"]) for r in rows], ks)
    return res


def mean_over_groups(groups_result, ks):
    return {k: statistics.mean(r[k] for r in groups_result.values()) for k in ks}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", nargs="+", required=True, help="run folders of tools/train.py (with model.pt)")
    ap.add_argument("--work", required=True, help="folder for the cache (scores.pt) and mixtures.json")
    ap.add_argument("--recipe", action="append", default=[], help="KIND=COUNT[,KIND=COUNT...]")
    ap.add_argument("--draws", type=int, default=12, help="member sets drawn per recipe")
    ap.add_argument("--seed", type=int, default=0, help="seed of the draws")
    ap.add_argument("--width", type=int, default=100, help="beam width of every search (the largest k; at least 10)")
    ap.add_argument("--step", action="store_true",
                    help="also score one-order draws with the shipped per-step combination")
    ap.add_argument("--split", default="val", choices=data.SPLITS)
    ap.add_argument("--data", default=data.DEFAULT_PERFDB_DIR,
                    help="perf DB folder, or folder of <solver>.csv written by tools/dataset.py")
    ap.add_argument("--max-problems", type=int, default=0, help="first N problems of each group (0: all)")
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    ap.add_argument("--threads", type=int, default=2, help="CPU threads")
    args = ap.parse_args()
    if args.draws < 1 or args.max_problems < 0:
        ap.error("--draws must be >= 1, --max-problems >= 0")
    if args.width < 10:
        ap.error("--width must be >= 10 (the criterion is perfect@1 + perfect@10)")
    ks = [k for k in KS if k <= args.width]
    torch.set_num_threads(args.threads)

    names = [os.path.basename(os.path.normpath(r)) for r in args.runs]
    if len(set(names)) != len(names):
        ap.error("--runs: two run folders share a name")
    loaded = [load_run(r, "mixture_study") for r in args.runs]
    first = loaded[0][3]
    same_data = lambda a: (a["solver"], a["split_seed"], sorted(a["arch"]), sorted(a["precision"]))  # noqa: E731
    values = lambda v: sorted(zip(v.param_names, v.position_values))  # noqa: E731
    kinds = {}
    for run, name, (_, _, vocab, a) in zip(args.runs, names, loaded):
        if same_data(a) != same_data(first) or values(vocab) != values(loaded[0][2]):
            sys.exit(f"mixture_study: {run} differs from {args.runs[0]} in solver, split seed, archs, "
                     "precisions or vocabulary values")
        if args.split in data.FIT_SPLITS[a.get("fit_on", "train")]:
            sys.exit(f"mixture_study: {run} learned from the {args.split} split: its score would be in-sample")
        kinds.setdefault(kind_of(a), []).append(name)
    recipes = [(text, parse_recipe(text, kinds, "mixture_study")) for text in args.recipe]
    print("[mixture] pool: " + ", ".join(f"{k} {len(v)}" for k, v in sorted(kinds.items())), flush=True)

    rows = [r for r in data.load(args.data, [first["solver"]], first["arch"], first["precision"],
                                 first["split_seed"]) if r["split"] == args.split]
    groups = {g: (sel[:args.max_problems] if args.max_problems else sel) for g, sel in data.groups(rows).items()}
    os.makedirs(args.work, exist_ok=True)
    cache_path = os.path.join(args.work, "scores.pt")
    digest = lambda run: hashlib.sha256(open(os.path.join(run, "model.pt"), "rb").read()).hexdigest()  # noqa: E731
    key = {"runs": [digest(r) for r in args.runs], "split": args.split, "width": args.width,
           "max_problems": args.max_problems, "data": os.path.abspath(args.data)}  # a retrained run searches again
    cache = torch.load(cache_path, weights_only=False) if os.path.exists(cache_path) else None
    if cache is None or cache["key"] != key:
        cache = {"key": key, "groups": search_and_score(args.runs, loaded, groups, args.width, args.device)}
        torch.save(cache, cache_path + ".tmp")
        os.replace(cache_path + ".tmp", cache_path)  # never a half-written cache
    scored = cache["groups"]

    result = {"split": args.split, "width": args.width, "draws": args.draws, "seed": args.seed,
              "pool": kinds, "recipes": []}
    at = {name: i for i, name in enumerate(names)}
    for text, recipe in recipes:
        draws = draws_of(recipe, kinds, args.draws, random.Random(f"{args.seed}:{text}"))
        one_order = len({tuple(loaded[at[m]][2].decode_order or ()) for m in draws[0]}) == 1
        hows = ["mixture", "product"] + (["step"] if args.step and one_order else [])
        entry = {"recipe": text, "combinations": {}}
        for how in hows:
            per_draw = []
            for members in draws:
                idx = [at[m] for m in members]
                res = (step_ensemble(loaded, idx, groups, args.width, args.device, ks) if how == "step"
                       else combine(scored, idx, how, ks))
                per_draw.append({"members": members, "groups": {f"{a}/{p}": r for (a, p), r in res.items()},
                                 "perfect": mean_over_groups(res, ks)})
            entry["combinations"][how] = {
                "score": mean_sd([d["perfect"][1] + d["perfect"][10] for d in per_draw]),
                "perfect": {k: statistics.mean(d["perfect"][k] for d in per_draw) for k in ks},
                "gfx900/FP32": {k: statistics.mean(d["groups"]["gfx900/FP32"][k] for d in per_draw)
                                for k in ks} if "gfx900/FP32" in per_draw[0]["groups"] else None,
                "draws": per_draw}
            c = entry["combinations"][how]
            g900 = "/".join(f"{c['gfx900/FP32'][k]:.1f}" for k in ks) if c["gfx900/FP32"] else "-"
            mean_k = "/".join(f"{c['perfect'][k]:.1f}" for k in ks)
            print(f"{text:44s} {how:8s} {len(draws):3d} draws  p@1+p@10 {c['score'][0]:6.2f} +- "
                  f"{c['score'][1]:4.2f}  p@k {mean_k}  gfx900 FP32 {g900}", flush=True)
        result["recipes"].append(entry)
    out = os.path.join(args.work, "mixtures.json")
    with open(out + ".tmp", "w") as fh:
        json.dump(result, fh, indent=1)
    os.replace(out + ".tmp", out)
    if result["recipes"]:
        plot(result, os.path.join(args.work, "mixtures.png"))
    print(out)


def plot(result, path):
    """One row per recipe: p@1 + p@10 (mean over groups) of each combination, error bars one sd of a
    draw, so that combinations of the same members sit next to each other."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    recipes = result["recipes"]
    colors = {"step": "tab:grey", "mixture": "tab:blue", "product": "tab:orange"}
    fig, ax = plt.subplots(figsize=(9, 0.5 + 0.45 * len(recipes) * 1.6))
    for r, e in enumerate(recipes):
        for j, (how, c) in enumerate(e["combinations"].items()):
            ax.errorbar(c["score"][0], -(r + 0.2 * (j - 1)), xerr=c["score"][1], fmt="o", capsize=3,
                        color=colors[how], label=how if r == 0 else None)
    ax.set_yticks([-r for r in range(len(recipes))])
    ax.set_yticklabels([e["recipe"] for e in recipes], fontsize=8)
    ax.set_xlabel(f"perfect@1 + perfect@10 on {result['split']} (%), mean over groups")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(f"whole-vector ensembles, {result['draws']} draw(s) per recipe, beam {result['width']}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
