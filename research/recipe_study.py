#!/usr/bin/python3
"""Scores ensemble RECIPES on the runtime's VALIDATION split by their mean over random draws of seeds.

A recipe says how many members of each kind an ensemble has ("mlp=1,attention=1,paper=1"); the kind of a
run is its metrics.json "model" (mlp, paper, attention, hybrid). For each recipe, --draws ensembles are
drawn from the pool (seeds without replacement inside a kind, a fixed random seed), merged by
tools/ensemble.py, compiled with the kernel's rules and scored by `tunecast eval --split val` at
each k of --k (research/select_ensemble.py's Scorer and cache). Greedy member selection picks the
luckiest set among many; on a small kernel that is mostly noise (66-118 val problems a group), while a
recipe's mean over draws says what the recipe itself is worth and its spread says how much one draw can
move. Only the validation split is read (never test).

  /usr/bin/python3 research/recipe_study.py --solver ConvAsmBwdWrW3x3 --runs RUN... --work DIR \\
      --recipe mlp=3 --recipe mlp=1,attention=1,paper=1 [--draws 6] [--seed 0] [--k 1 10 30 50 100] \\
      [--tunecast build/codegen/tunecast] [--perfdb-dir ../shared/data/miopen/perfdb]
prints one line per recipe (mean and standard deviation over draws of the criterion, mean over the 4
groups of perfect@1 + perfect@10, and of each perfect@k), writes DIR/recipes.json (every draw, its
members and per-group figures) and DIR/recipes.png (mean perfect@k per recipe, and its difference from
the first recipe; error bars one standard deviation of the draws).
"""
import argparse
import itertools
import json
import math
import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # select_ensemble.py beside this file
from select_ensemble import ROOT, Scorer, check_args, score_members  # noqa: E402


def parse_recipe(text, kinds, prog="recipe_study"):
    recipe = {}
    for part in text.split(","):
        kind, sep, count = part.partition("=")
        if not sep or not count.isdigit() or int(count) < 1:
            sys.exit(f"{prog}: '{part}' in --recipe '{text}' is not KIND=COUNT (COUNT >= 1)")
        if kind in recipe:
            sys.exit(f"{prog}: --recipe '{text}' names '{kind}' twice")
        if kind not in kinds:
            sys.exit(f"{prog}: no run of kind '{kind}' in the pool (kinds: {', '.join(sorted(kinds))})")
        if int(count) > len(kinds[kind]):
            sys.exit(f"{prog}: --recipe '{text}' wants {count} '{kind}' runs, the pool has "
                     f"{len(kinds[kind])}")
        recipe[kind] = int(count)
    return recipe


def draws_of(recipe, kinds, n, rng):
    """n distinct member lists for `recipe` (seeds without replacement inside a kind), or every
    possible one when the pool allows no more than n."""
    possible = math.prod(math.comb(len(kinds[kind]), count) for kind, count in recipe.items())
    if possible <= n:
        per_kind = [itertools.combinations(sorted(kinds[kind]), count) for kind, count in recipe.items()]
        return [[m for part in combo for m in part] for combo in itertools.product(*per_kind)]
    seen, out = set(), []
    while len(out) < n:
        members = [m for kind, count in recipe.items() for m in sorted(rng.sample(kinds[kind], count))]
        if tuple(members) not in seen:
            seen.add(tuple(members))
            out.append(members)
    return out


def mean_sd(values):
    return statistics.mean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--solver", required=True)
    ap.add_argument("--runs", nargs="+", required=True, help="train-only run folders (the pool)")
    ap.add_argument("--work", required=True)
    ap.add_argument("--recipe", action="append", required=True, help="KIND=COUNT[,KIND=COUNT...]")
    ap.add_argument("--draws", type=int, default=6)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--k", type=int, nargs="+", default=[1, 10, 30, 50, 100],
                    help="perfect@k to measure (1 and 10 always: the criterion)")
    ap.add_argument("--tunecast", default=os.path.join(ROOT, "build", "codegen", "tunecast"))
    ap.add_argument("--perfdb-dir", default=os.path.join(ROOT, "..", "shared", "data", "miopen", "perfdb"))
    args = ap.parse_args()
    if args.draws < 1:
        sys.exit("recipe_study: --draws must be at least 1")
    if any(not 1 <= k <= 256 for k in args.k):
        sys.exit("recipe_study: every --k must be within 1..256 (the runtime's beam limit)")
    check_args(args, run_files=("metrics.json", "model.tcir.json", "model.tce"))

    by_name, kinds = {}, {}
    for run in args.runs:
        name = os.path.basename(os.path.normpath(run))
        if name in by_name:
            sys.exit(f"recipe_study: run folder names must be unique ({name})")
        metrics = os.path.join(run, "metrics.json")
        m = json.load(open(metrics))
        if "model" not in m:
            sys.exit(f"recipe_study: {metrics} names no model kind (written by an older train.py?)")
        if m.get("solver") != args.solver:
            sys.exit(f"recipe_study: {run} is a {m.get('solver')} run, not {args.solver}")
        if (m.get("args", {}).get("fit_on") or "train") != "train":
            sys.exit(f"recipe_study: {run} learned from more than train; its val score would be in-sample")
        by_name[name] = run
        kinds.setdefault(m["model"], []).append(name)
    recipes = [(text, parse_recipe(text, kinds)) for text in args.recipe]
    os.makedirs(args.work, exist_ok=True)
    print("[recipes] pool: " + ", ".join(f"{k} {len(v)}" for k, v in sorted(kinds.items())), flush=True)

    sc = Scorer(args, beams=args.k)
    ks = sc.beams
    result = {"solver": args.solver, "draws": args.draws, "seed": args.seed, "k": ks, "pool": kinds,
              "recipes": []}
    t0 = time.time()
    for text, recipe in recipes:
        entry = {"recipe": text, "draws": []}
        # One generator per recipe, seeded by --seed and the recipe's text: adding or reordering
        # recipes leaves every other recipe's draws as they were.
        draws = draws_of(recipe, kinds, args.draws, random.Random(f"{args.seed}:{text}"))
        if len(draws) < args.draws:
            print(f"[recipes] {text}: the pool allows {len(draws)} distinct draw(s), not {args.draws}: "
                  "scoring them all", flush=True)
        for members in draws:
            score, groups, size = score_members(sc, by_name, members)
            perfect = {str(k): statistics.mean(g["perfect"][str(k)] for g in groups.values()) for k in ks}
            entry["draws"].append({"members": members, "score": score, "perfect": perfect, "bytes": size,
                                   "groups": groups})
            print(f"[recipes] {text}: {'+'.join(members)} {score:.2f} ({time.time() - t0:.0f}s)", flush=True)
        entry["score"] = mean_sd([d["score"] for d in entry["draws"]])
        entry["perfect"] = {str(k): mean_sd([d["perfect"][str(k)] for d in entry["draws"]]) for k in ks}
        entry["mb"] = statistics.mean(d["bytes"] for d in entry["draws"]) / 1e6
        entry["n"] = len(entry["draws"])
        result["recipes"].append(entry)

    print("\nval, mean over draws (+- sd of one draw); perfect@k is the mean over the 4 groups")
    print(f"{'recipe':36s} {'draws':>5s} {'MB':>5s} {'p@1+p@10':>13s} " +
          " ".join(f"{'p@' + str(k):>12s}" for k in ks))
    for e in result["recipes"]:
        print(f"{e['recipe']:36s} {e['n']:5d} {e['mb']:5.2f} {e['score'][0]:7.2f}+-{e['score'][1]:4.2f} " +
              " ".join(f"{e['perfect'][str(k)][0]:6.1f}+-{e['perfect'][str(k)][1]:4.1f}" for k in ks))
    out = os.path.join(args.work, "recipes.json")
    with open(out, "w") as fh:
        json.dump(result, fh, indent=1)
    plot(result, os.path.join(args.work, "recipes.png"))
    print(out)


def plot(result, path):
    """Left: mean perfect@k per recipe; right: the same minus the first recipe's mean, where the
    differences (often smaller than the markers on the left) can be read. Error bars: one sd of a draw."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    recipes, ks = result["recipes"], result["k"]
    ref = recipes[0]
    fig, (ax, dx) = plt.subplots(1, 2, figsize=(11, 4.5))
    for i, e in enumerate(recipes):
        xs = [k * (1 + 0.03 * (i - len(recipes) / 2)) for k in ks]  # spread the error bars
        mean = [e["perfect"][str(k)][0] for k in ks]
        sd = [e["perfect"][str(k)][1] for k in ks]
        label = f"{e['recipe']} ({e['mb']:.1f} MB)"
        ax.errorbar(xs, mean, yerr=sd, marker="o", capsize=3, label=label)
        dx.errorbar(xs, [m - ref["perfect"][str(k)][0] for m, k in zip(mean, ks)], yerr=sd, marker="o",
                    capsize=3, label=label)
    for a in (ax, dx):
        a.set_xscale("log")
        a.set_xticks(ks)
        a.set_xticklabels([str(k) for k in ks])
        a.set_xlabel("k")
        a.grid(alpha=0.3)
    ax.set_ylabel("perfect@k on val (%), mean over groups")
    dx.set_ylabel(f"minus {ref['recipe']} (points)")
    dx.axhline(0, color="grey", lw=0.8)
    ax.legend(fontsize=7)
    fig.suptitle(f"{result['solver']}: ensemble recipes, {result['draws']} draw(s) of seeds each")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
