#!/usr/bin/python3
"""How much of a tuning budget should the search spend on the predictor's beam (explore) before
coordinate descent (exploit)? Runs `tunecast eval-search --budgets B --explore E` for each budget B
and each share f (E = round(f B), at least 1, at most the beam), per precision, and prints a
markdown table of the predictor search's geomean speed (p10) per policy, with the mean over budgets
and precisions: the question research/history.md ("The search's defaults (issue 25)") asked of the
first timing data, asked again of a model. Score it on val; test is for the figures that ship.

  research/explore_share_study.py --model M.tcm --timings out/timing/h100_132.db --split val \\
      --shares 0.3,0.5,0.7,1 [--budgets 2,5,10,20,50,100] [--json OUT.json]
"""
import argparse
import json
import os
import subprocess
import sys

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def run(args, budget, explore, precision):
    cmd = [args.tunecast, "eval-search", args.model, "--timings", args.timings, "--split", args.split,
           "--budgets", str(budget), "--explore", str(explore), "--beam", str(args.beam),
           "--precision", precision, "--random-runs", "1", "--json"]
    if args.default:
        cmd += ["--default", args.default]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"explore_share_study: {' '.join(cmd)} failed: {done.stderr.strip().splitlines()[-1:]}")
    j = json.loads(done.stdout)
    s = j["strategies"]["predictor_search"][str(budget)]
    return j["n"], s["geomean_speed"], s["p10_speed"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="compiled model (.tcm)")
    ap.add_argument("--timings", required=True, help="timing DB (decompressed SQLite)")
    ap.add_argument("--split", default="val", help="val (default), test, train or all")
    ap.add_argument("--shares", default="0.3,0.5,0.7,1", help="explore shares f of the budget (default 0.3,0.5,0.7,1)")
    ap.add_argument("--budgets", default="2,5,10,20,50,100", help="budgets (default 2,5,10,20,50,100)")
    ap.add_argument("--precisions", default="FP16,FP32")
    ap.add_argument("--beam", type=int, default=32, help="the search's beam; caps explore (default 32)")
    ap.add_argument("--default", help="passed to eval-search (kernel default config)")
    ap.add_argument("--tunecast", default=os.path.join(REPO, "build", "codegen", "tunecast"))
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args()
    for path, what in ((args.model, "--model"), (args.timings, "--timings"), (args.tunecast, "--tunecast")):
        if not os.path.exists(path):
            ap.error(f"{what} {path}: no such file")
    try:
        shares = [float(v) for v in args.shares.split(",")]
        budgets = [int(v) for v in args.budgets.split(",")]
    except ValueError:
        ap.error("--shares and --budgets take comma-separated numbers")
    if any(not 0 < f <= 1 for f in shares) or any(b < 1 for b in budgets):
        ap.error("shares must be in (0, 1], budgets >= 1")
    precisions = args.precisions.split(",")
    figures = {}
    for f in shares:
        for p in precisions:
            for b in budgets:
                e = min(args.beam, max(1, round(f * b)))
                n, g, p10 = run(args, b, e, p)
                figures[f"{f}/{p}/{b}"] = {"n": n, "explore": e, "geomean_speed": g, "p10_speed": p10}
            print(f"explore_share_study: share {f} {p} done", file=sys.stderr)
    head = "| explore share | " + " | ".join(f"{p} B={b}" for p in precisions for b in budgets) + " | mean |"
    print(head)
    print("|---" * (2 + len(precisions) * len(budgets)) + "|")
    for f in shares:
        cells = [figures[f"{f}/{p}/{b}"] for p in precisions for b in budgets]
        mean = sum(c["geomean_speed"] for c in cells) / len(cells)
        print(f"| {f} | " + " | ".join(f"{c['geomean_speed']:.3f} ({c['p10_speed']:.3f})" for c in cells)
              + f" | {mean:.4f} |")
    if args.json:
        tmp = args.json + ".partial"
        with open(tmp, "w") as out:
            json.dump({"model": args.model, "split": args.split, "beam": args.beam, "figures": figures}, out, indent=1)
        os.replace(tmp, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
