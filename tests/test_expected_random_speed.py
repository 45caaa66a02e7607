#!/usr/bin/python3
"""research/hub_spaces.py's calculated random search (the issue 31 study's baseline) against brute
force: the mean over every B-subset of a small space, a failed config (inf) included, for every B."""
import itertools
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "research"))
import hub_spaces  # noqa: E402

times = [3.0, 1.5, math.inf, 2.0, 1.0, 4.0, 2.0, 8.0]  # a tie and a failure
best = min(times)
for budget in range(1, len(times) + 1):
    subsets = list(itertools.combinations(times, budget))
    brute = sum(best / min(s) if min(s) != math.inf else 0.0 for s in subsets) / len(subsets)
    calculated = hub_spaces.expected_random_speed(times, budget)
    if abs(brute - calculated) > 1e-12:
        sys.exit(f"budget {budget}: calculated {calculated!r}, brute force {brute!r}")
if hub_spaces.expected_random_speed(times, 100) != 1.0:
    sys.exit("a budget beyond the space must find its best config")
print(f"expected_random_speed matches brute force for budgets 1-{len(times)}")
