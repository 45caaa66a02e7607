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
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    # Markers may sit at 0 % or 100 %: the axis leaves room and nothing is clipped.
    ax.plot(ks, [result["perfect"][str(k)] for k in ks], "o-", label="tunecast", linewidth=2, clip_on=False, zorder=3)
    for name, label in (("most_frequent", "most frequent"), ("nearest", "nearest neighbours")):
        base = (result.get("baselines") or {}).get(name)
        if base:
            ax.plot(ks, [base["perfect"][str(k)] for k in ks], "s--", label=label, alpha=0.8, clip_on=False)
    ax.set_xscale("log")
    ax.set_xticks(ks)
    ax.set_xticklabels([str(k) for k in ks])
    ax.set_xlabel("k (beam width / candidates)")
    ax.set_ylabel("perfect@k (%)")
    ax.set_ylim(-2, 102)
    ax.grid(True, alpha=0.3)
    precisions = ",".join(result.get("precisions", []))
    arch = eval_results.arch_of(result)
    title = f"{result.get('solver', '')} {arch} {precisions} ({result['n']} problems, split {result.get('split')})"
    in_sample, learned = result.get("in_sample"), result.get("in_sample_problems")
    if in_sample is None:  # older results, or unknown: by the count
        in_sample = bool(result.get("in_sample_splits")) and (learned is None or learned > 0)
    if in_sample:
        title += "\nIN-SAMPLE: " + (f"the model learned {learned} of them" if learned is not None else
                                     "the model may have learned them") + "; no baselines"
    ax.set_title(title, fontsize=10)
    # Below the axes, so that no marker (k = 30 included) is hidden behind it.
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3, frameon=False)
    fig.tight_layout()
    try:
        with files.replacing(out) as partial:  # a failed run leaves no half-written plot
            fig.savefig(partial, dpi=120)
    except OSError as e:
        sys.exit(f"plot_eval.py: cannot write {out}: {e.strerror}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
