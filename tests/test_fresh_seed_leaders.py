#!/usr/bin/python3
"""research/does_the_model_free_verdict_hold_on_fresh_seeds.py picks each cell's leaders off the
selection seeds: the best strategy in the hub's value order, and the best by its mean over both
orders, random sampling never (the study's rule). A strategy that leads only in one order must not
lead over both."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "research"))
from does_the_model_free_verdict_hold_on_fresh_seeds import BUDGETS, leaders  # noqa: E402


def cache(**strategies):
    return {"strategies": {name: {b: speed for b in BUDGETS} for name, speed in strategies.items()}}


hub = {"k/gpu": cache(random_sample=0.99, diff_evo=0.90, pso=0.80, greedy_ils=0.70)}
flipped = {"k/gpu": cache(random_sample=0.99, diff_evo=0.60, pso=0.78, greedy_ils=0.75)}
picked = leaders(hub, flipped)
for b in BUDGETS:
    if picked["k/gpu"][b] != ("diff_evo", "pso"):
        sys.exit(f"budget {b}: leaders {picked['k/gpu'][b]}, expected diff_evo in the hub's order "
                 "(0.90) and pso over both orders (0.79 against diff_evo's 0.75)")
print("leaders: hub order diff_evo, both orders pso, random sampling excluded")
