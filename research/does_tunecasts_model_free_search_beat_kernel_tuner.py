#!/usr/bin/python3
"""tunecast's own model-free search (the runtime engine, through the CLI) on the benchmark hub's
caches, beside Kernel Tuner's strategies (research/data/model_free_search_peers.json, measured by
research/does_model_free_search_beat_kernel_tuner.py) at the same budgets, averaged over the same
number of seeds: the issue 31 comparison, cell by cell, with what the C++ engine ships (the Python
prototypes of research/model_free_candidates.py chose its recipe).

  research/does_tunecasts_model_free_search_beat_kernel_tuner.py --hub /work/ext/benchmark_hub \\
      [--tunecast build/codegen/tunecast] [--seeds 20] [--out research/data/model_free_tunecast.json] \\
      [--plot docs/model_free_search.png] [--jobs 2]

Each cache's space (the hub script's tune_params and restrictions, research/data/hub_spaces.json)
becomes a kernel definition with tools/kt_definition.py; `tunecast eval-search DEF --timings CACHE
--strategies free_search --random-runs SEEDS` replays the search on the cache (speed = the cache's
best time / the best found; a failed config costs one benchmark, a config the restrictions forbid
is never proposed). A cell is won when tunecast's mean is at least the best Kernel Tuner strategy's.
Random search is also given calculated, as the hub's autotuning methodology does (hub_spaces.
expected_random_speed: the exact mean of B draws without replacement, failures included, where
Kernel Tuner's random sampling over the seeds reads within its noise, up to 0.04 off at budget 10).

--peers-reversed FILE (the peers measured with `--reverse-values`: the same spaces, every value list
written the other way round) adds a second verdict per cell, against each strategy's mean over both
orders: the figure a user gets whichever way the space happens to be written (tunecast's search does
not depend on it; Kernel Tuner's differential evolution does: its first population is evaluated in
the order Kernel Tuner enumerates the space, largest values first).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import hub_spaces  # noqa: E402
BUDGETS = ["10", "20", "50", "100"]


def leader(strategies, budget, flipped=None):
    """A cell's best Kernel Tuner strategy and its figure, random sampling excluded: by its mean in the
    hub's order, or, given the same strategies' means in the reversed order (`flipped`), by its mean
    over both orders."""
    def figure(k):
        return strategies[k][budget] if flipped is None else round((strategies[k][budget] + flipped[k][budget]) / 2, 4)
    best = max((k for k in strategies if k != "random_sample" and (flipped is None or k in flipped)), key=figure)
    return best, figure(best)


def verdict(ours, best):
    """The issue's reading of a cell: at or above the best strategy, within 0.02 of it, or below."""
    return "won" if ours >= best else "within_0.02" if ours >= best - 0.02 else "lost"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hub", required=True, help="a benchmark_hub checkout (its cachefiles/)")
    ap.add_argument("--tunecast", default=os.path.join(ROOT, "build", "codegen", "tunecast"))
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0,
                    help="eval-search's --seed: another value gives runs on other seeds (a confirmation on fresh "
                         "seeds: research/does_the_model_free_verdict_hold_on_fresh_seeds.py)")
    ap.add_argument("--jobs", type=int, default=1, help="caches replayed at once (one CPU core each)")
    ap.add_argument("--budgets", default=",".join(BUDGETS), help="comma-separated, each one the peers measured")
    ap.add_argument("--caches", default="", help="only the caches whose name contains one of these comma-separated substrings")
    ap.add_argument("--spaces", default=os.path.join(HERE, "data", "hub_spaces.json"))
    ap.add_argument("--peers", default=os.path.join(HERE, "data", "model_free_search_peers.json"))
    ap.add_argument("--peers-reversed", help="the peers measured with --reverse-values (adds the order-averaged verdict)")
    ap.add_argument("--reverse-values", action="store_true",
                    help="tunecast on the spaces with every value list written the other way round (the same "
                         "configs and times): checks that its figures do not depend on the order")
    ap.add_argument("--out", default=os.path.join(HERE, "data", "model_free_tunecast.json"))
    ap.add_argument("--plot", help="a PNG of the mean speed over caches per budget")
    ap.add_argument("--prior", choices=["none", "other-gpus"], default="none",
                    help="other-gpus: each cache's search starts from the best configs of the same kernel's "
                         "caches on the other GPUs (tune --prior; leave one GPU out); none: nothing known")
    args = ap.parse_args()
    budgets = [b for b in args.budgets.split(",") if b]
    if not budgets or any(b not in BUDGETS for b in budgets):
        sys.exit(f"--budgets {args.budgets!r}: choose among {','.join(BUDGETS)} (the peers' budgets)")
    if not os.access(args.tunecast, os.X_OK):
        sys.exit(f"{args.tunecast}: not an executable (build it: cmake --build build)")
    spaces = json.load(open(args.spaces))["caches"]
    peers_file = json.load(open(args.peers))
    peers = peers_file["caches"]
    reversed_peers = json.load(open(args.peers_reversed))["caches"] if args.peers_reversed else None
    results, counts = {}, {"won": 0, "within_0.02": 0, "lost": 0, "below_random": 0, "below_random_calculated": 0}
    counts_both = dict(counts)
    keys = [k for k in args.caches.split(",") if k]
    chosen = [(name, space) for name, space in spaces.items() if not keys or any(k in name for k in keys)]

    def replay(work, name, space):
        """tunecast's free_search cells of one cache (eval-search's JSON)."""
        stem = os.path.join(work, name.replace("/", "_"))
        with open(stem + ".json", "w") as f:
            tune_params = {k: v[::-1] if args.reverse_values else v for k, v in space["tune_params"].items()}
            json.dump({"kernel": name.split("/")[0], "tune_params": tune_params,
                       "restrictions": space["restrictions"]}, f)
        subprocess.run([sys.executable, os.path.join(ROOT, "tools", "kt_definition.py"), stem + ".json",
                        "-o", stem + ".tcr"], check=True, capture_output=True)
        prior = []
        if args.prior == "other-gpus":
            others = [os.path.join(args.hub, s["cache"]) for n, s in spaces.items()
                      if n.split("/")[0] == name.split("/")[0] and n != name]
            prior = ["--prior", ",".join(others)]
        r = subprocess.run([args.tunecast, "eval-search", stem + ".tcr", "--timings",
                            os.path.join(args.hub, space["cache"]), "--budgets", ",".join(budgets),
                            "--strategies", "free_search", "--random-runs", str(args.seeds), "--seed", str(args.seed),
                            "--json"] + prior,
                           capture_output=True, text=True)
        if r.returncode:
            sys.exit(f"{name}: {r.stderr.strip()}")
        return json.loads(r.stdout)["strategies"]["free_search"]

    with tempfile.TemporaryDirectory() as work, ThreadPoolExecutor(max(1, args.jobs)) as pool:
        replays = pool.map(lambda item: replay(work, *item), chosen)  # in order, --jobs at a time
        for (name, space), cells in zip(chosen, replays):
            times = hub_spaces.load(args.hub, name, space["cache"], space).times
            row = {}
            for b in budgets:
                strategies = peers[name]["strategies"]
                best_name, best = leader(strategies, b)
                ours, rnd = cells[b]["geomean_speed"], strategies["random_sample"][b]
                cell = verdict(ours, best)
                counts[cell] += 1
                counts["below_random"] += ours < rnd
                calculated = round(hub_spaces.expected_random_speed(times, int(b)), 4)
                counts["below_random_calculated"] += ours < calculated
                row[b] = {"tunecast": round(ours, 4), "best_peer": best, "best_peer_strategy": best_name,
                          "random": rnd, "random_calculated": calculated, "verdict": cell,
                          "overhead_us_per_benchmark": round(cells[b].get("overhead_us_per_benchmark", 0.0), 1)}
                if reversed_peers:
                    flipped = reversed_peers[name]["strategies"]
                    best_name2, best2 = leader(strategies, b, flipped)
                    rnd2 = round((strategies["random_sample"][b] + flipped["random_sample"][b]) / 2, 4)
                    cell2 = verdict(ours, best2)
                    counts_both[cell2] += 1
                    counts_both["below_random"] += ours < rnd2
                    counts_both["below_random_calculated"] += ours < calculated
                    row[b].update({"best_peer_both_orders": best2, "best_peer_both_orders_strategy": best_name2,
                                   "random_both_orders": rnd2, "verdict_both_orders": cell2})
            results[name] = row
            print(f"{name:28s}" + "  ".join(f"{row[b]['tunecast']:.3f}/{row[b]['best_peer']:.3f}/"
                                             f"{row[b]['random']:.3f}{'W' if row[b]['verdict'] == 'won' else '~' if row[b]['verdict'] == 'within_0.02' else 'L'}"
                                             for b in budgets), flush=True)
    means = {b: {k: round(sum(results[c][b][k] for c in results) / len(results), 4) for k in ("tunecast", "best_peer", "random", "random_calculated")}
             for b in budgets}
    out = {"about": {"seeds": args.seeds, "seed": args.seed, "budgets": [int(b) for b in budgets], "caches": len(results),
                     "prior": args.prior, "reverse_values": args.reverse_values,
                     "command": "research/does_tunecasts_model_free_search_beat_kernel_tuner.py --hub HUB"
                                + (f" --prior {args.prior}" if args.prior != "none" else "")
                                + (f" --seeds {args.seeds}" if args.seeds != 20 else "")
                                + (f" --seed {args.seed}" if args.seed else "")
                                + (f" --budgets {args.budgets}" if budgets != BUDGETS else "")
                                + (" --reverse-values" if args.reverse_values else "")
                                + "".join(f" --{flag} {os.path.relpath(path, ROOT)}" for flag, path, default in
                                          (("spaces", args.spaces, ap.get_default("spaces")),
                                           ("peers", args.peers, ap.get_default("peers"))) if path != default)
                                + (" --peers-reversed " + os.path.relpath(args.peers_reversed, ROOT) if args.peers_reversed else "")},
           "counts": counts, "means": means, "caches": results}
    if reversed_peers:
        out["counts_both_orders"] = counts_both
        out["means_both_orders"] = {b: {k: round(sum(results[c][b][k] for c in results) / len(results), 4)
                                        for k in ("best_peer_both_orders", "random_both_orders")} for b in budgets}
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f, indent=1)
    os.replace(tmp, args.out)
    print(json.dumps(counts), json.dumps(means))
    if reversed_peers:
        print("against both orders:", json.dumps(counts_both), json.dumps(out["means_both_orders"]))
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        xs = [int(b) for b in budgets]
        fig, ax = plt.subplots(figsize=(6, 4))
        for key, label, style in (("tunecast", "tunecast (model-free)", "o-"),
                                  ("best_peer", "best Kernel Tuner strategy of each cell", "s--"),
                                  ("random", "random sampling (Kernel Tuner)", "^:"),
                                  ("random_calculated", "random search, calculated (exact mean)", "v:")):
            ax.plot(xs, [means[b][key] for b in budgets], style, label=label)
        if reversed_peers:
            ax.plot(xs, [out["means_both_orders"][b]["best_peer_both_orders"] for b in budgets], "s-.",
                    label="best Kernel Tuner strategy, mean of both value orders")
        ax.set_xscale("log")
        ax.set_xticks(xs)
        ax.set_xticklabels(budgets)
        ax.set_xlabel("benchmarks")
        ax.set_ylabel(f"mean speed over {len(results)} hub caches")
        peer_seeds = peers_file.get("about", {}).get("seeds", "?")
        title = (f"Model-free search, {args.seeds} seeds (Kernel Tuner {peer_seeds}); cells won {counts['won']}, "
                 f"within 0.02 {counts['within_0.02']}, lost {counts['lost']}")
        if reversed_peers:
            title += (f"\nagainst both value orders: won {counts_both['won']}, within 0.02 "
                      f"{counts_both['within_0.02']}, lost {counts_both['lost']}")
        ax.set_title(title, fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=110)


if __name__ == "__main__":
    main()
