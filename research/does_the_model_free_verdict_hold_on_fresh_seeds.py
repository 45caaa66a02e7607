#!/usr/bin/python3
"""Does issue 31's verdict hold on fresh seeds? The study (does_tunecasts_model_free_search_beat_
kernel_tuner.py) compares tunecast with the best of 15 Kernel Tuner strategies per cell, each a mean
over the same 50 seeds that chose it: the largest of 15 noisy means reads high (a best-of-k pick keeps
the strategies whose seeds were lucky), and tunecast's recipe was itself chosen on its seeds 0-299.
This script reads each cell's leader off those seeds and measures both sides again on seeds neither
choice saw:

  1. the leaders: per cache and budget, the best strategy in the hub's value order and the best by
     its mean over both orders (research/data/model_free_search_peers.json and ..._reversed.json,
     seeds 0-49; random_sample excluded, as in the study);
  2. those strategies again, in both orders, on seeds --first-seed .. --first-seed + --seeds - 1
     (Kernel Tuner in simulation mode, does_model_free_search_beat_kernel_tuner.Peers: the same
     runs the peers file holds);
  3. tunecast on other seeds: the study's output with `--seed 1` (eval-search's runs on seeds
     disjoint from --seed 0's), given as --tunecast-fresh;
  4. each cell's verdict again: tunecast against the hub-order leader in the hub's order, and
     against the both-orders leader's mean over both orders;
  5. Kernel Tuner's random sampling in every cell, both orders, on the same fresh seeds: the issue's
     other goal (at or above random search in every cell) read again, away from the 50 seeds whose
     noise the study's random figure carries.

  research/does_the_model_free_verdict_hold_on_fresh_seeds.py --kernel-tuner /work/ext/kernel_tuner \\
      --constraint /work/ext/python-constraint --hub /work/ext/benchmark_hub \\
      --tunecast-fresh FRESH.json [--seeds 200] [--first-seed 50] [--jobs 2] [--caches pnpoly,...] \\
      [--budgets 10,20] [--out research/data/model_free_fresh_seeds.json]

where FRESH.json comes from `does_tunecasts_model_free_search_beat_kernel_tuner.py --hub HUB --seeds
300 --seed 1 --out FRESH.json`. The output is written after every cache (atomically); a killed run
resumes with the strategies it holds for the same seeds.
"""
import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hub_spaces  # noqa: E402
from does_model_free_search_beat_kernel_tuner import Peers, import_kernel_tuner, speed_at  # noqa: E402
from does_tunecasts_model_free_search_beat_kernel_tuner import BUDGETS, leader, verdict  # noqa: E402


def leaders(hub_order, reversed_order):
    """{cache: {budget: (hub-order leader, both-orders leader)}} from the selection seeds, picked as
    the study picks them."""
    return {name: {b: (leader(entry["strategies"], b)[0],
                       leader(entry["strategies"], b, reversed_order[name]["strategies"])[0]) for b in BUDGETS}
            for name, entry in hub_order.items()}


def measure(job):
    """One cache: every strategy asked for (a leader, or random sampling) in both orders on the fresh
    seeds, at the budgets asked for."""
    args, name, wanted = job
    kt = import_kernel_tuner(args.kernel_tuner, args.constraint)
    _, rel, spec = next(c for c in hub_spaces.CACHES if c[0] == name)
    space = hub_spaces.load(args.hub, name, rel, spec)
    t0 = time.time()
    out = {}
    for order, reverse in (("hub", False), ("reversed", True)):
        peers = Peers(kt, space, reverse_values=reverse)
        for strategy, budgets in sorted(wanted.items()):
            for b in sorted(budgets, key=int):
                speeds = [speed_at(peers.run(strategy, seed, int(b)), space.best, int(b))
                          for seed in range(args.first_seed, args.first_seed + args.seeds)]
                out.setdefault(strategy, {}).setdefault(b, {})[order] = round(sum(speeds) / len(speeds), 4)
    return name, out, time.time() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernel-tuner", required=True)
    ap.add_argument("--constraint", required=True)
    ap.add_argument("--hub", required=True)
    ap.add_argument("--tunecast-fresh", required=True,
                    help="the study's output run with --seed 1 (tunecast on seeds its recipe was not chosen on)")
    ap.add_argument("--peers", default=os.path.join(HERE, "data", "model_free_search_peers.json"))
    ap.add_argument("--peers-reversed", default=os.path.join(HERE, "data", "model_free_search_peers_reversed.json"))
    ap.add_argument("--seeds", type=int, default=200, help="fresh seeds per leader strategy and order")
    ap.add_argument("--first-seed", type=int, default=50, help="the first fresh seed (the peers files used 0-49)")
    ap.add_argument("--jobs", type=int, default=2, help="caches measured at once (one CPU core each)")
    ap.add_argument("--caches", default="", help="only the caches whose name contains one of these comma-separated "
                                                 "substrings")
    ap.add_argument("--budgets", default=",".join(BUDGETS),
                    help="only these budgets' cells, comma-separated (a long run on many seeds for a few cells)")
    ap.add_argument("--out", default=os.path.join(HERE, "data", "model_free_fresh_seeds.json"))
    args = ap.parse_args()
    budgets = [b for b in BUDGETS if b in args.budgets.split(",")]
    if not budgets or len(budgets) != len(args.budgets.split(",")):
        sys.exit(f"--budgets {args.budgets}: each one of {', '.join(BUDGETS)}")

    hub_order = json.load(open(args.peers))
    selection_seeds = hub_order["about"]["seeds"]
    if args.first_seed < selection_seeds:
        sys.exit(f"--first-seed {args.first_seed}: the peers files chose on seeds 0-{selection_seeds - 1}; "
                 f"fresh seeds start at {selection_seeds} or later")
    reversed_order = json.load(open(args.peers_reversed))
    lead = leaders(hub_order["caches"], reversed_order["caches"])
    chosen = {name for name, _, _ in hub_spaces.select(args.caches)}
    lead = {name: {b: cells[b] for b in budgets} for name, cells in lead.items() if name in chosen}
    tunecast = json.load(open(args.tunecast_fresh))
    if not tunecast["about"].get("seed"):
        sys.exit(f"{args.tunecast_fresh}: run with --seed 0, the seeds tunecast's recipe was chosen on; "
                 "run the study with --seed 1")
    missing = [n for n in lead if n not in tunecast["caches"]]
    if missing:
        sys.exit(f"{args.tunecast_fresh}: no tunecast figures for {', '.join(missing)}")

    about = {"selection_seeds": f"0-{selection_seeds - 1}",
             "fresh_seeds": f"{args.first_seed}-{args.first_seed + args.seeds - 1}",
             "tunecast": {k: tunecast["about"][k] for k in ("seeds", "seed", "command")},
             "command": "research/does_the_model_free_verdict_hold_on_fresh_seeds.py " + " ".join(sys.argv[1:])}
    out = {"about": about, "caches": {}}
    if os.path.exists(args.out):
        old = json.load(open(args.out))
        if old["about"]["fresh_seeds"] == about["fresh_seeds"]:
            out["caches"] = old["caches"]  # resume: these caches are done
    jobs = []
    for name, cells in lead.items():
        wanted = {}
        done = out["caches"].get(name, {}).get("fresh", {})
        for b, (by_hub, by_both) in cells.items():
            for s in (by_hub, by_both, "random_sample"):
                if b not in done.get(s, {}):  # else resumed: measured by an earlier run on the same seeds
                    wanted.setdefault(s, set()).add(b)
        if wanted:
            jobs.append((args, name, wanted))

    def write():
        tmp = args.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(out, f, indent=1, sort_keys=True)
        os.replace(tmp, args.out)

    with ProcessPoolExecutor(max(1, args.jobs)) as pool:
        for name, fresh, seconds in pool.map(measure, jobs):
            merged = out["caches"].setdefault(name, {}).setdefault("fresh", {})
            for strategy, budgets in fresh.items():
                merged.setdefault(strategy, {}).update(budgets)
            print(f"{name:28s} {len(fresh)} strategies, {args.seeds} seeds x 2 orders ({seconds:.0f} s)", flush=True)
            write()

    # The verdicts, cell by cell, on the fresh seeds.
    sel_hub, sel_rev = hub_order["caches"], reversed_order["caches"]
    counts = {order: {"won": 0, "within_0.02": 0, "lost": 0, "below_random": 0} for order in ("hub", "both_orders")}
    for name, cells in lead.items():
        fresh = out["caches"][name]["fresh"]
        rows = {}
        for b, (by_hub, by_both) in cells.items():
            ours = tunecast["caches"][name][b]["tunecast"]
            hub_fresh = fresh[by_hub][b]["hub"]
            both_fresh = round((fresh[by_both][b]["hub"] + fresh[by_both][b]["reversed"]) / 2, 4)
            random_hub = fresh["random_sample"][b]["hub"]
            random_both = round((random_hub + fresh["random_sample"][b]["reversed"]) / 2, 4)
            rows[b] = {"tunecast_fresh": ours,
                       "hub_leader": by_hub, "hub_leader_selection": sel_hub[name]["strategies"][by_hub][b],
                       "hub_leader_fresh": hub_fresh, "verdict": verdict(ours, hub_fresh),
                       "both_leader": by_both,
                       "both_leader_selection": leader(sel_hub[name]["strategies"], b, sel_rev[name]["strategies"])[1],
                       "both_leader_fresh": both_fresh, "verdict_both_orders": verdict(ours, both_fresh),
                       "random_fresh": random_hub, "random_fresh_both_orders": random_both}
            counts["hub"][rows[b]["verdict"]] += 1
            counts["both_orders"][rows[b]["verdict_both_orders"]] += 1
            counts["hub"]["below_random"] += ours < random_hub
            counts["both_orders"]["below_random"] += ours < random_both
        out["caches"][name]["cells"] = rows
    out["counts"] = counts
    n = len(lead)
    out["means"] = {b: {k: round(sum(out["caches"][c]["cells"][b][k] for c in lead) / n, 4)
                        for k in ("tunecast_fresh", "hub_leader_selection", "hub_leader_fresh",
                                  "both_leader_selection", "both_leader_fresh", "random_fresh")} for b in budgets}
    write()
    for name in lead:
        cells = out["caches"][name]["cells"]
        print(f"{name:28s}" + "  ".join(
            f"{cells[b]['tunecast_fresh']:.3f}/{cells[b]['hub_leader_fresh']:.3f}({cells[b]['hub_leader_selection']:.3f})"
            f"{'W' if cells[b]['verdict'] == 'won' else '~' if cells[b]['verdict'] == 'within_0.02' else 'L'}"
            for b in budgets))
    print(json.dumps(counts))
    print(json.dumps(out["means"]))


if __name__ == "__main__":
    main()
