#!/usr/bin/env python3
"""Plot speed against benchmark budget from `tunecast eval-search --json` output: one line per
tuning strategy (geometric mean over problems, solid; 10th percentile, dotted), log x.

usage: plot_eval_search.py EVAL_SEARCH.json OUT.png   (or OUT.svg / OUT.pdf)
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tunecast_train import files  # noqa: E402

FORMATS = (".png", ".svg", ".pdf")
LABELS = {
    "predictor_top1": "predictor top-1 (no benchmark)",
    "predictor_top_b": "predictor top-B",
    "predictor_search": "predictor + coordinate descent",
    "default_search": "default + coordinate descent (Droplet)",
    "random": "random search",
    "exhaustive": "exhaustive, random order (GenericSearch)",
}


def read(path):
    """The result in `path`, or a one-line exit naming what is wrong with it."""
    try:
        with open(path) as f:
            result = json.load(f)
    except OSError as e:
        sys.exit(f"plot_eval_search.py: cannot read {path}: {e.strerror}")
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        sys.exit(f"plot_eval_search.py: {path} is not JSON ({e})")
    missing = [key for key in ("n", "budgets", "strategies") if not isinstance(result, dict) or key not in result]
    if missing:
        sys.exit(f"plot_eval_search.py: {path} is not a `tunecast eval-search --json` result (no {', '.join(missing)})")
    return result


def main():
    if len(sys.argv) != 3 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help") else 2
    out = sys.argv[2]
    if not out.lower().endswith(FORMATS):
        sys.exit(f"plot_eval_search.py: {out}: the plot's name must end with {', '.join(FORMATS)}")
    result = read(sys.argv[1])
    try:  # after the checks of the arguments, which need no matplotlib
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot_eval_search.py: needs matplotlib (Debian: python3-matplotlib)")
    budgets = sorted(int(b) for b in result["budgets"])
    fig, ax = plt.subplots(figsize=(7.0, 4.4))
    strategies = result["strategies"]
    order = [n for n in LABELS if n in strategies] + [n for n in strategies if n not in LABELS]
    for name in order:
        per_budget = strategies[name]
        try:
            speeds = [per_budget[str(b)]["geomean_speed"] for b in budgets]
            p10 = [per_budget[str(b)]["p10_speed"] for b in budgets]
        except (KeyError, TypeError):
            sys.exit(f"plot_eval_search.py: {sys.argv[1]}: strategy {name} lacks a budget's figures")
        line, = ax.plot(budgets, speeds, "o-", label=LABELS.get(name, name), linewidth=2 if "predictor" in name else 1.4)
        ax.plot(budgets, p10, ":", color=line.get_color(), alpha=0.7)
    ax.set_xscale("log")
    ax.set_xticks(budgets)
    ax.set_xticklabels([str(b) for b in budgets])
    ax.set_xlabel("budget (benchmarks)")
    ax.set_ylabel("speed: optimum / found time (geomean; dotted: p10)")
    ax.set_ylim(top=1.03)  # markers at 1.0 (the optimum found) drawn whole
    ax.grid(True, alpha=0.3)
    ax.set_title(f"{result.get('solver', '')}: {result['n']} problems, split {result.get('split')}")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    try:
        with files.replacing(out) as partial:  # a failed run leaves no half-written plot
            fig.savefig(partial, dpi=120)
    except OSError as e:
        sys.exit(f"plot_eval_search.py: cannot write {out}: {e.strerror}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
