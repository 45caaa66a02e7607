#!/usr/bin/env python3
"""Plot perfect@k from `tunecast eval --json` output: model vs baselines.

usage: plot_eval.py EVAL.json OUT.png
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) != 3 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help") else 2
    with open(sys.argv[1]) as f:
        result = json.load(f)
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
    arch = os.path.basename(result.get("perfdb", "")).split("_")[0]
    ax.set_title(f"{result.get('solver', '')} {arch} {precisions} ({result['n']} problems, split {result.get('split')})")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
