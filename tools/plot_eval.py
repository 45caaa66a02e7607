#!/usr/bin/env python3
"""Plot perfect@k from `tunecast eval --json` output: model vs baselines.

usage: plot_eval.py EVAL.json OUT.png   (or OUT.svg / OUT.pdf)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tunecast_train import eval_results, files  # noqa: E402

FORMATS = (".png", ".svg", ".pdf")


def main():
    if len(sys.argv) != 3 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help") else 2
    out = sys.argv[2]
    if not out.lower().endswith(FORMATS):
        sys.exit(f"plot_eval.py: {out}: the plot's name must end with {', '.join(FORMATS)}")
    result = eval_results.read(sys.argv[1], "plot_eval.py")
    try:  # after the checks of the arguments, which need no matplotlib
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot_eval.py: needs matplotlib (Debian: python3-matplotlib)")
    ks = sorted(int(k) for k in result["perfect"])
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ax.plot(ks, [result["perfect"][str(k)] for k in ks], "o-", label="tunecast", linewidth=2)
    for name, label in (("most_frequent", "most frequent"), ("nearest", "nearest neighbours")):
        base = result.get("baselines", {}).get(name)
        if base:
            ax.plot(ks, [base["perfect"][str(k)] for k in ks], "s--", label=label, alpha=0.8)
    ax.set_xscale("log")
    ax.set_xticks(ks)
    ax.set_xticklabels([str(k) for k in ks])
    ax.set_xlabel("k (beam width / candidates)")
    ax.set_ylabel("perfect@k (%)")
    ax.set_ylim(0, 100)
    ax.grid(True, alpha=0.3)
    precisions = ",".join(result.get("precisions", []))
    arch = eval_results.arch_of(result)
    ax.set_title(f"{result.get('solver', '')} {arch} {precisions} ({result['n']} problems, split {result.get('split')})")
    ax.legend(loc="lower right")
    fig.tight_layout()
    try:
        with files.replacing(out) as partial:  # a failed run leaves no half-written plot
            fig.savefig(partial, dpi=120)
    except OSError as e:
        sys.exit(f"plot_eval.py: cannot write {out}: {e.strerror}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
