#!/usr/bin/python3
"""Does a model-free search beat Kernel Tuner's strategies on the benchmark hub's exhaustive caches?
(issue 31). This script measures the peers: Kernel Tuner 1.x's own strategies in its simulation mode
(its SimulationRunner and CostFunc over each cache; the hub kernel script's tune_params and
restrictions, research/hub_spaces.py), `--seeds` seeds per strategy, at budgets of `max_fevals`
distinct configs. Speed = the cache's best time / the time of the best config found (0 if none ran).
It also writes every cache's space and restrictions (`spaces`) for the C++ side's rules.

  research/does_model_free_search_beat_kernel_tuner.py peers --kernel-tuner /work/ext/kernel_tuner \\
      --constraint /work/ext/python-constraint --hub /work/ext/benchmark_hub \\
      [--strategies pso,adaptive_tabu_greywolf,...] [--caches convolution_milo,...] [--seeds 20] \\
      [--budgets 10,20,50,100] [--out research/data/model_free_search_peers.json]
  research/does_model_free_search_beat_kernel_tuner.py spaces --hub /work/ext/benchmark_hub \\
      [--out research/data/hub_spaces.json]
  research/does_model_free_search_beat_kernel_tuner.py table research/data/model_free_search_peers.json
`--held-out` (peers, spaces): the hub's caches that no choice of the recipe looked at instead
(hub_spaces.HELD_OUT; research/data/*_held_out.json).

Kernel Tuner is imported from the path given (a work tree of github.com/KernelTuner/kernel_tuner,
1.4.0 at 96a6abc), never installed; its dependency python-constraint2 likewise from a work tree of
github.com/python-constraint/python-constraint (2.6.0 at cac0041, its pure-Python modules). `importlib.metadata.version` is
patched to answer "1.4.0" for kernel_tuner (its __init__ asks the installed metadata). Debian's
python3-numpy (1.24), -scipy, -pandas, -sklearn, -jsonschema, -xmltodict suffice for the
single-objective strategies; pymoo (nsga2/3, multi-objective) and scikit-optimize/pyATF (skopt,
pyatf_strategies: wrappers of other libraries) are not measured.

One run per (cache, strategy, seed, budget): a run at budget 100 is not a run at budget 10 carried on
(simulated_annealing scales its schedule to max_fevals, greedy_ils, diff_evo and dual_annealing
choose differently too), so no budget is read off another's prefix. Each run seeds Python's `random`
and NumPy's global generator with the seed (Kernel Tuner's strategies draw from both), and starts
from a Searchspace as fresh as tune_kernel's (Peers.reset_searchspace: same traces as a new one per
run, `--fresh`, on 2 caches x 8 strategies x 4 seeds). Every strategy but bayes_opt is then
deterministic for a seed; bayes_opt is not (two runs of 4 seeds: 0.501 and 0.583 at budget 10 on
convolution_milo/A100), its means carry that noise too. Not measured: brute_force (exhaustive).

Checks against issue 31's table: convolution_milo/A100 budget 10 pso 0.578, random 0.519;
gemm_clblast/RTX_3090 budget 100 adaptive_tabu_greywolf 0.981, random 0.852: equal to 3 decimals.
"""
import argparse
import importlib
import json
import math
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hub_spaces  # noqa: E402

ALL_STRATEGIES = ["random_sample", "adaptive_tabu_greywolf", "hybrid_vndx", "pso", "genetic_algorithm",
                  "diff_evo", "firefly_algorithm", "greedy_ils", "greedy_mls", "ordered_greedy_mls", "mls",
                  "simulated_annealing", "dual_annealing", "basinhopping", "minimize", "bayes_opt"]


def import_kernel_tuner(kt_path, constraint_path):
    import importlib.metadata as md
    real = md.version
    md.version = lambda name: "1.4.0" if name == "kernel_tuner" else real(name)
    sys.path.insert(0, constraint_path)
    sys.path.insert(0, kt_path)
    import warnings
    warnings.filterwarnings("ignore")
    import kernel_tuner  # noqa: F401
    from kernel_tuner import interface, util
    from kernel_tuner.runners.simulation import SimulationRunner
    from kernel_tuner.searchspace import Searchspace
    return interface, util, SimulationRunner, Searchspace


class Peers:
    """Kernel Tuner's simulation mode over one cache, set up once and run many times."""

    def __init__(self, kt, space, fresh=False, reverse_values=False):
        self.kt, self.fresh = kt, fresh
        self.interface, self.util, SimulationRunner, Searchspace = kt
        self.SimulationRunner = SimulationRunner
        data = space.raw
        keys = data["tune_params_keys"]
        # reverse_values: the same space written with every value list the other way round (the
        # cache is keyed by values, so the times are the same); a strategy that depends on the
        # order Kernel Tuner enumerates the space in reads differently.
        self.tune_params = {k: list(data["tune_params"][k])[::-1 if reverse_values else 1] for k in keys}
        self.restrictions = list(space.restrictions)
        # failed configs as Kernel Tuner's read_cache marks them (an ErrorConfig under "__error__")
        errors = {n: getattr(self.util, n)() for n in
                  ("ErrorConfig", "InvalidConfig", "CompilationFailedConfig", "RuntimeFailedConfig")}
        self.cache = {}
        for key, element in data["cache"].items():
            element = dict(element)
            for v in list(element.values()):
                if isinstance(v, str) and v in errors:
                    element["__error__"] = errors[v]
            self.cache[key] = element
        self.best = space.best
        Options = self.interface.Options
        self.kernel_options = Options(kernel_name=data["kernel_name"], problem_size=None)
        self.device_options = Options(quiet=True)
        self.searchspace = Searchspace(self.tune_params, self.restrictions, 1_000_000_000)
        if self.searchspace.size != len(space.configs):
            raise SystemExit(f"{space.name}: Kernel Tuner's space has {self.searchspace.size} configs, ours {len(space.configs)}")

    def reset_searchspace(self):
        """Forget the neighbour caches a run leaves in the Searchspace: get_random_neighbor pops
        neighbours from a partial cache, so a run on a used Searchspace draws other neighbours than
        tune_kernel's fresh one would (simulated_annealing on gemm_clblast/RTX_2080_Ti, budget 10:
        0.897 after the other strategies had run, 0.807 fresh). Everything else it builds lazily
        (lookups, numpy views) is a pure function of the space. `--fresh` builds a new Searchspace
        per run instead (the check that this reset suffices)."""
        from collections import defaultdict
        ss = self.searchspace
        if self.fresh:
            _, _, _, Searchspace = self.kt
            self.searchspace = Searchspace(self.tune_params, self.restrictions, 1_000_000_000)
            return
        from kernel_tuner.searchspace import supported_neighbor_methods
        ss._Searchspace__neighbor_cache = {m: dict() for m in supported_neighbor_methods}
        ss._Searchspace__neighbor_partial_cache = {m: defaultdict(list) for m in supported_neighbor_methods}
        ss.neighbors_index = dict()

    def run(self, strategy, seed, budget):
        """The distinct configs' times in the order the strategy benchmarked them (inf: failed)."""
        Options = self.interface.Options
        util = self.util
        runner = self.SimulationRunner(None, self.kernel_options, self.device_options, 1, None)
        runner.dev.env["device_name"] = "sim"
        order = []
        base_run = runner.run

        def run(parameter_space, tuning_options):
            results = base_run(parameter_space, tuning_options)
            for element, r in zip(parameter_space, results):
                if r is None:
                    continue
                key = ",".join(str(i) for i in element)
                if key in seen:
                    continue
                seen.add(key)
                t = r.get("time")
                order.append(float(t) if isinstance(t, (int, float)) and "__error__" not in r and math.isfinite(t) else math.inf)
            return results
        seen = set()
        runner.run = run
        opts = Options(
            tune_params=self.tune_params, restrictions=self.restrictions, answer=None, atol=1e-6, verify=None,
            strategy=strategy, strategy_options=Options(max_fevals=budget), iterations=1, objective=["time"],
            objective_higher_is_better=[False], verbose=False, cache=self.cache, metrics=None,
            simulation_mode=True, seed=seed, parallel=None, observers=None)
        opts["max_fevals"] = budget
        opts.restrictions_unmodified = self.restrictions
        opts.simulated_time = 0
        opts.cachefile = None
        opts["budget"] = util.TuningBudget(None, budget)
        self.reset_searchspace()
        random.seed(seed)
        import numpy as np
        np.random.seed(seed)
        module = self.interface.strategy_map[strategy]
        module.tune(self.searchspace, runner, opts)
        if len(order) > budget:
            raise SystemExit(f"{strategy} benchmarked {len(order)} configs at budget {budget}")
        return order


def speed_at(order, best, budget):
    ts = order[:budget]
    m = min(ts) if ts else math.inf
    return 0.0 if m == math.inf else best / m


def cmd_peers(args):
    kt = import_kernel_tuner(args.kernel_tuner, args.constraint)
    budgets = sorted(int(b) for b in args.budgets.split(","))
    strategies = args.strategies.split(",") if args.strategies else ALL_STRATEGIES
    out = {}
    if os.path.exists(args.out):
        with open(args.out) as f:
            out = json.load(f)
    out.setdefault("about", {})
    out["about"].update({
        "what": "mean speed over seeds (cache best time / best found), Kernel Tuner 1.4.0 (96a6abc) simulation mode, "
                "hub 8eeb99e; one run per (strategy, seed, budget)",
        "seeds": args.seeds, "budgets": budgets,
        "command": "research/does_model_free_search_beat_kernel_tuner.py peers " + " ".join(sys.argv[2:])})
    out.setdefault("caches", {})
    for name, rel, spec in hub_spaces.select(args.caches, args.held_out):
        space = hub_spaces.load(args.hub, name, rel, spec)
        peers = Peers(kt, space, args.fresh, args.reverse_values)
        entry = out["caches"].setdefault(name, {"size": len(space.configs), "failed": space.n_failed,
                                                "best_time": space.best, "strategies": {}})
        for strategy in strategies:
            t0 = time.time()
            speeds = {b: [] for b in budgets}
            for seed in range(args.seeds):
                for b in budgets:
                    speeds[b].append(speed_at(peers.run(strategy, seed, b), space.best, b))
            entry["strategies"][strategy] = {str(b): round(sum(v) / len(v), 4) for b, v in speeds.items()}
            print(f"{name:28s} {strategy:24s} " + " ".join(f"{b}:{sum(v) / len(v):.3f}" for b, v in speeds.items())
                  + f"  ({time.time() - t0:.0f} s)", flush=True)
            tmp = args.out + ".tmp"
            with open(tmp, "w") as f:
                json.dump(out, f, indent=1, sort_keys=True)
            os.replace(tmp, args.out)


def cmd_table(args):
    with open(args.peers) as f:
        peers = json.load(f)
    budgets = [str(b) for b in peers["about"]["budgets"]]
    print("| cache | " + " | ".join(f"B={b} best KT (strategy) / random" for b in budgets) + " |")
    print("|---|" + "---|" * len(budgets))
    for name, e in peers["caches"].items():
        row = []
        for b in budgets:
            cand = {s: v[b] for s, v in e["strategies"].items() if s != "random_sample" and b in v}
            best = max(cand, key=cand.get) if cand else None
            rnd = e["strategies"].get("random_sample", {}).get(b)
            row.append(f"{cand[best]:.3f} ({best}) / {rnd:.3f}" if best else "-")
        print(f"| {name} | " + " | ".join(row) + " |")


def cmd_spaces(args):
    import ast
    out = {"about": "tune_params (the hub kernel script's order) and restrictions (Python expressions over the "
                    "parameter names, every one must hold) per cache, with the same restriction in tunecast's "
                    "rules language (docs/rules_language.md) where it converts mechanically; research/hub_spaces.py",
           "caches": {}}
    for name, rel, spec in hub_spaces.select(args.caches, args.held_out):
        space = hub_spaces.load(args.hub, name, rel, spec)
        out["caches"][name] = {
            "cache": rel, "script": spec["script"], "tune_params": spec["tune_params"],
            "restrictions": spec["restrictions"],
            "rules": [to_rule(r, ast) for r in spec["restrictions"]],
            "integer_division_agrees": integer_division_agrees(spec, ast),
            "valid_configs": len(space.configs), "failed_configs": space.n_failed, "best_time": space.best}
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
    print(f"wrote {args.out}: {len(out['caches'])} caches")


def integer_division_agrees(spec, ast):
    """Whether every restriction gives the same verdict with `/` as integer division (the rules VM's
    int64 arithmetic) as with Python's true division, over the whole product space."""
    import itertools

    class Floor(ast.NodeTransformer):
        def visit_BinOp(self, node):
            self.generic_visit(node)
            if isinstance(node.op, ast.Div):
                node.op = ast.FloorDiv()
            return node
    exact = [compile(r, "<r>", "eval") for r in spec["restrictions"]]
    floor = [compile(ast.fix_missing_locations(Floor().visit(ast.parse(r, mode="eval"))), "<r>", "eval")
             for r in spec["restrictions"]]
    names = list(spec["tune_params"])
    for combo in itertools.product(*spec["tune_params"].values()):
        env = dict(zip(names, combo))
        for e, f in zip(exact, floor):
            if bool(eval(e, {"__builtins__": {}}, env)) != bool(eval(f, {"__builtins__": {}}, env)):
                return False
    return True


def to_rule(expr, ast):
    """A Python restriction as a rules-language expression (C-like operators); raises on a construct
    the conversion does not know (a call, a float division with a fractional result, ...)."""
    ops = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Mod: "%", ast.Div: "/", ast.FloorDiv: "/",
           ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}

    def go(n):
        if isinstance(n, ast.BoolOp):
            op = " && " if isinstance(n.op, ast.And) else " || "
            return "(" + op.join(go(v) for v in n.values) + ")"
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not):
            return "!(" + go(n.operand) + ")"
        if isinstance(n, ast.BinOp) and type(n.op) in ops:
            return "(" + go(n.left) + " " + ops[type(n.op)] + " " + go(n.right) + ")"
        if isinstance(n, ast.Compare):
            parts, left = [], n.left
            for op, right in zip(n.ops, n.comparators):
                parts.append(go(left) + " " + ops[type(op)] + " " + go(right))
                left = right
            return parts[0] if len(parts) == 1 else "(" + " && ".join(parts) + ")"
        if isinstance(n, ast.Name):
            return n.id
        if isinstance(n, ast.Constant) and isinstance(n.value, int):
            return str(n.value)
        raise ValueError(f"cannot convert {ast.dump(n)}")
    return go(ast.parse(expr, mode="eval").body)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("peers")
    a.add_argument("--kernel-tuner", required=True)
    a.add_argument("--constraint", required=True)
    a.add_argument("--hub", required=True)
    a.add_argument("--strategies", default="")
    a.add_argument("--caches", default="")
    a.add_argument("--seeds", type=int, default=20)
    a.add_argument("--budgets", default="10,20,50,100")
    a.add_argument("--fresh", action="store_true", help="a new Searchspace per run (slower; checks the reset)")
    a.add_argument("--reverse-values", action="store_true",
                   help="write every parameter's value list the other way round (the same space and times): "
                        "measures how much a strategy depends on the order the space is enumerated in")
    a.add_argument("--out", default=os.path.join(HERE, "data", "model_free_search_peers.json"))
    s = sub.add_parser("spaces")
    s.add_argument("--hub", required=True)
    s.add_argument("--caches", default="")
    for sp in (a, s):
        sp.add_argument("--held-out", action="store_true",
                        help="the hub's caches that no recipe choice looked at (hub_spaces.HELD_OUT) instead")
    s.add_argument("--out", default=os.path.join(HERE, "data", "hub_spaces.json"))
    t = sub.add_parser("table")
    t.add_argument("peers")
    args = p.parse_args()
    {"peers": cmd_peers, "spaces": cmd_spaces, "table": cmd_table}[args.cmd](args)


if __name__ == "__main__":
    main()
