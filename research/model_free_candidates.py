#!/usr/bin/python3
"""Which model-free search should tunecast's engine become? (issue 31) Prototypes of candidate
strategies, run on the benchmark hub's exhaustive caches (research/hub_spaces.py) at the same
budgets and seeds as the peers (Kernel Tuner's strategies, does_model_free_search_beat_kernel_tuner.py),
and scored against them: per (cache, budget) cell, the mean speed over seeds (speed = the cache's
best time / the time of the best config found) against random sampling and the best Kernel Tuner
strategy of the cell.

  research/model_free_candidates.py --hub /work/ext/benchmark_hub \\
      --peers research/data/model_free_search_peers.json [--candidates gp_ei,random] \\
      [--caches convolution_milo,...] [--seeds 20] [--budgets 10,20,50,100] \\
      [--out research/data/model_free_candidates.json]

Every candidate is deterministic for a seed (NumPy's PCG64 seeded with it), proposes only configs
the kernel's restrictions accept (a proposal is checked against them before it is "benchmarked";
a config the rules reject is never counted), never benchmarks a config twice, and counts a config
that failed (compile or runtime error in the cache) as one benchmark. Validity here is membership in
the set of configs that pass the restrictions (hub_spaces.load checks that the cache holds every
one), the same verdict as evaluating the rules.
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hub_spaces  # noqa: E402


class Problem:
    """One cache as arrays: the lists of values, the valid configs (positions) and their times."""

    def __init__(self, space):
        self.name = space.name
        self.lengths = np.array([len(v) for v in space.values])
        self.active = np.where(self.lengths > 1)[0]
        self.configs = np.array(space.configs, dtype=np.int64)
        self.times = np.array(space.times)
        self.best = space.best
        self.mult = np.cumprod(np.concatenate([[1], self.lengths[:-1]]))
        self.code_to_index = {int(c): i for i, c in enumerate(self.configs @ self.mult)}
        self.n_checks = 0

    def index(self, pos):
        """The index of a valid config, or -1 when the rules reject it (the rules check)."""
        self.n_checks += 1
        return self.code_to_index.get(int(np.dot(pos, self.mult)), -1)

    def features(self, pos):
        """Positions normalized to [0, 1] per parameter that has more than one value."""
        pos = np.atleast_2d(pos)
        return pos[:, self.active] / (self.lengths[self.active] - 1)


def random_valid(problem, rng, count, tries=10000):
    """`count` configs drawn uniformly over positions, kept when the rules accept them (rejection
    sampling; duplicates possible)."""
    out = []
    for _ in range(tries):
        pos = (rng.random(len(problem.lengths)) * problem.lengths).astype(np.int64)
        if problem.index(pos) >= 0:
            out.append(pos)
            if len(out) == count:
                break
    return np.array(out, dtype=np.int64).reshape(-1, len(problem.lengths))


class Run:
    """The benchmark side of one run: budget, visited set, trace of times."""

    def __init__(self, problem, budget):
        self.p, self.budget = problem, budget
        self.visited = set()
        self.X, self.y = [], []     # positions, log-times (inf: failed)
        self.trace = []

    def done(self):
        return len(self.trace) >= self.budget

    def measure(self, pos):
        i = self.p.index(pos)
        assert i >= 0, "a restricted config was proposed"
        assert i not in self.visited
        self.visited.add(i)
        t = self.p.times[i]
        self.trace.append(t)
        self.X.append(np.array(pos))
        self.y.append(math.log(t) if t != math.inf else math.inf)
        return t

    def seen(self, pos):
        i = self.p.index(pos)
        return i < 0 or i in self.visited


# ---------------------------------------------------------------- candidates

def cand_random(problem, budget, rng, opts):
    run = Run(problem, budget)
    while not run.done():
        for pos in random_valid(problem, rng, 64):
            if not run.seen(pos):
                run.measure(pos)
                if run.done():
                    break
    return run.trace


def maximin_start(problem, run, rng, n0, pool_size):
    """The first config at random, then each next the pool config farthest (min distance over the
    measured ones, in normalized positions) from those measured."""
    pool = random_valid(problem, rng, pool_size)
    F = problem.features(pool)
    mind = np.full(len(pool), np.inf)
    first = True
    while len(run.trace) < n0 and not run.done():
        if first:
            order = [0]
            first = False
        else:
            order = np.argsort(-mind, kind="stable")
        for k in order:
            if not run.seen(pool[k]):
                run.measure(pool[k])
                d = np.sqrt(((F - F[k]) ** 2).sum(1))
                mind = np.minimum(mind, d)
                break
        else:
            break


def neighbours(problem, pos, radius=1):
    """Every config one parameter away by +-1..radius positions, and every pair of parameters moved
    by +-1 (the coordinate-descent neighbourhood), inside the lists."""
    out = []
    act = problem.active
    for a in act:
        for r in range(1, radius + 1):
            for s in (-r, r):
                q = pos.copy()
                q[a] += s
                if 0 <= q[a] < problem.lengths[a]:
                    out.append(q)
    for i, a in enumerate(act):
        for b in act[i + 1:]:
            for sa in (-1, 1):
                for sb in (-1, 1):
                    q = pos.copy()
                    q[a] += sa
                    q[b] += sb
                    if 0 <= q[a] < problem.lengths[a] and 0 <= q[b] < problem.lengths[b]:
                        out.append(q)
    return out


def matern52(A, B, ls):
    d = np.sqrt(np.maximum(((A[:, None, :] - B[None, :, :]) ** 2 / ls ** 2).sum(-1), 0))
    s5 = math.sqrt(5) * d
    return (1 + s5 + 5.0 / 3.0 * d * d) * np.exp(-s5)


def gp_fit(F, y, ls, noise):
    K = matern52(F, F, ls) + noise * np.eye(len(F))
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    nll = 0.5 * y @ alpha + np.log(np.diag(L)).sum()
    return L, alpha, nll


def gp_predict(F, L, alpha, Fq, ls):
    Ks = matern52(Fq, F, ls)
    mu = Ks @ alpha
    v = np.linalg.solve(L, Ks.T)
    var = np.maximum(1.0 - (v * v).sum(0), 1e-12)
    return mu, np.sqrt(var)


def norm_cdf(z):
    from scipy.special import ndtr
    return ndtr(z)


def cand_gp_ei(problem, budget, rng, opts):
    """Bayesian optimization on the positions of the ordered value lists (the chosen candidate; every
    constant below is the default of an option in `opts`):
    1. start: n0 = max(3, round(0.3 B)) configs by maximin over 256 random valid configs: the first
       of them, then each time the one farthest (Euclidean, normalized positions) from those measured;
    2. model: y = log(time); a failed config gets the worst measured y + 0.5 sd (population sd of the
       finite ys); once 10 configs are measured (cap_min_n), y is capped at the median of the finite
       measured ys (cap_quantile 0.5); then standardized (mean 0, sd 1). A GP, Matern 5/2, signal
       variance 1, noise 1e-3, length scales fitted by marginal likelihood every 5 benchmarks: an
       isotropic grid (0.1, 0.2, 0.35, 0.6, 1.0) x sqrt(d), then from 8 points one ARD sweep (each
       parameter in turn: its length scale x 0.33, x 3 or x 100 (capped at 100) if that lowers the NLL);
    3. proposal: the largest expected improvement (xi 0) over a pool of 64 random valid configs (fresh
       each step) plus
       the neighbourhoods (each parameter +-1 position, each pair of parameters +-1 each) of the 3
       best measured configs, visited and restricted configs removed.
    Options tried and not kept (20 seeds unless said): pool 512 with n0_frac 0.1 (49 of 76 cells at
    or above the best peer against 54), local="mut" (Kernel Tuner SA's mutation as the
    local pool), start_pool 1 or 16 (random or milder maximin start), exploit_every 3 (every third
    proposal only from the best config's neighbourhood), ard 0 (8 seeds)."""
    run = Run(problem, budget)
    n0 = max(opts.get("n0_min", 3), int(round(opts.get("n0_frac", 0.3) * budget)))
    maximin_start(problem, run, rng, min(n0, budget), opts.get("start_pool", 256))
    grid = opts.get("ls_grid", [0.1, 0.2, 0.35, 0.6, 1.0])
    d = len(problem.active)
    state = {"ls": None, "fit_at": 0}
    while not run.done():
        X = np.array(run.X)
        y = np.array(run.y)
        ok = np.isfinite(y)
        if ok.sum() == 0:
            cand = [q for q in random_valid(problem, rng, 64) if not run.seen(q)]
            if cand:
                run.measure(cand[0])
            continue
        worst = y[ok].max()
        sd = y[ok].std() if ok.sum() > 1 else 1.0
        sd = sd if sd > 1e-9 else 1.0
        y = np.where(ok, y, worst + opts.get("fail_pen", 0.5) * sd)
        cap = opts.get("cap_quantile", 0.5)
        if cap and ok.sum() >= 4 and len(run.trace) >= opts.get("cap_min_n", 10):
            # the landscape above this quantile of the measured log-times is flattened: the model
            # spends its variance on the good region, not on how bad the bad configs are
            y = np.minimum(y, np.quantile(y[ok], cap))
        mu0, s0 = y.mean(), y.std() if y.std() > 1e-9 else 1.0
        ys = (y - mu0) / s0
        F = problem.features(X)
        noise = opts.get("noise", 1e-3)
        n = len(run.trace)
        if state.get("ls") is None or n - state["fit_at"] >= opts.get("refit_every", 5):
            best = None
            for g in grid:
                ls = np.full(d, g * math.sqrt(d) if opts.get("scale_sqrt_d", 1) else g)
                try:
                    L, alpha, nll = gp_fit(F, ys, ls, noise)
                except np.linalg.LinAlgError:
                    continue
                if best is None or nll < best[2]:
                    best = (L, alpha, nll, ls)
            if opts.get("ard", 1) and n >= opts.get("ard_min_n", 8):
                ls = best[3].copy()
                for _sweep in range(opts.get("ard_sweeps", 1)):
                    for j in range(d):
                        for m in opts.get("ard_mult", [0.33, 3.0, 100.0]):
                            trial = ls.copy()
                            trial[j] = min(ls[j] * m, 100.0)
                            try:
                                L, alpha, nll = gp_fit(F, ys, trial, noise)
                            except np.linalg.LinAlgError:
                                continue
                            if nll < best[2] - 1e-9:
                                best = (L, alpha, nll, trial)
                        ls = best[3].copy()
            state["ls"], state["fit_at"] = best[3], n
        ls = state["ls"]
        L, alpha, _ = gp_fit(F, ys, ls, noise)
        # pool
        pool = list(random_valid(problem, rng, opts.get("pool", 64)))
        order = np.argsort(np.where(ok, run.y, np.inf), kind="stable")
        local = opts.get("local", "nbr")
        for rank, k in enumerate(order[: opts.get("n_local", 3)]):
            if not np.isfinite(run.y[k]):
                break
            if local in ("nbr", "both"):
                pool += neighbours(problem, np.array(run.X[k]), opts.get("radius", 1))
            if local in ("mut", "both"):
                pool += mutants(problem, run, np.array(run.X[k]), rng,
                                opts.get("n_mut", 64) if rank == 0 else opts.get("n_mut_other", 16), opts.get("pm", 0.2))
        exploit = opts.get("exploit_every", 0)
        if exploit and n >= n0 and (n - n0) % exploit == exploit - 1:
            # an exploitation step: only the best config's neighbourhood competes (a trust region)
            k = order[0]
            if np.isfinite(run.y[k]):
                local_pool = [q for q in neighbours(problem, np.array(run.X[k]), opts.get("radius", 1)) if not run.seen(q)]
                if local_pool:
                    pool = local_pool
        pool = [q for q in pool if not run.seen(q)]
        if not pool:
            pool = [q for q in random_valid(problem, rng, 64) if not run.seen(q)]
            if not pool:
                continue
        P = np.array(pool)
        # dedupe
        codes = P @ problem.mult
        _, first = np.unique(codes, return_index=True)
        P = P[np.sort(first)]
        mu, sig = gp_predict(F, L, alpha, problem.features(P), ls)
        ybest = ys[ok].min() if ok.any() else ys.min()
        z = (ybest - mu - opts.get("xi", 0.0)) / sig
        ei = (ybest - mu - opts.get("xi", 0.0)) * norm_cdf(z) + sig * np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
        run.measure(P[int(np.argmax(ei))])
    return run.trace


def mutate(problem, pos, rng, pm):
    """Kernel Tuner's simulated-annealing move: each parameter with probability pm takes a uniformly
    drawn other value (a Hamming move), then one parameter moves one position (an adjacent move)."""
    q = pos.copy()
    act = problem.active
    for a in act:
        if rng.random() < pm:
            v = int(rng.integers(problem.lengths[a] - 1))
            q[a] = v if v < q[a] else v + 1
    a = act[int(rng.integers(len(act)))]
    if q[a] == 0:
        q[a] = 1
    elif q[a] == problem.lengths[a] - 1:
        q[a] -= 1
    else:
        q[a] += 1 if rng.random() < 0.5 else -1
    return q


def mutants(problem, run, parent, rng, k, pm, tries=50):
    out, codes = [], set()
    for _ in range(k * tries):
        q = mutate(problem, parent, rng, pm)
        c = int(q @ problem.mult)
        if c in codes or run.seen(q):
            continue
        codes.add(c)
        out.append(q)
        if len(out) == k:
            break
    return out


def incumbent(run):
    y = np.array(run.y)
    if np.isfinite(y).any():
        return np.array(run.X[int(np.argmin(y))])
    return None


def cand_ea(problem, budget, rng, opts):
    """(1+1) evolution: a random valid start, then a mutant of the best measured config."""
    run = Run(problem, budget)
    pm = opts.get("pm", 0.2)
    while not run.done():
        parent = incumbent(run)
        if parent is None:
            cand = [q for q in random_valid(problem, rng, 16) if not run.seen(q)]
        else:
            cand = mutants(problem, run, parent, rng, 1, pm)
            if not cand:
                cand = [q for q in random_valid(problem, rng, 16) if not run.seen(q)]
        if cand:
            run.measure(cand[0])
    return run.trace


CANDIDATES = {"random": cand_random, "gp_ei": cand_gp_ei, "ea": cand_ea}


def speed(trace, best, budget):
    m = min(trace[:budget]) if trace else math.inf
    return 0.0 if m == math.inf else best / m


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hub", required=True)
    ap.add_argument("--peers", default=os.path.join(HERE, "data", "model_free_search_peers.json"))
    ap.add_argument("--candidates", default="gp_ei")
    ap.add_argument("--caches", default="")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--budgets", default="10,20,50,100")
    ap.add_argument("--opts", default="{}", help="JSON options for the candidates")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    budgets = [int(b) for b in args.budgets.split(",")]
    opts = json.loads(args.opts)
    with open(args.peers) as f:
        peers = json.load(f)["caches"]
    results = {}
    for name, rel, spec in hub_spaces.select(args.caches):
        problem = Problem(hub_spaces.load(args.hub, name, rel, spec))
        for cname in args.candidates.split(","):
            t0 = time.time()
            row = {}
            for b in budgets:
                s = [speed(CANDIDATES[cname](problem, b, np.random.default_rng(seed), opts), problem.best, b)
                     for seed in range(args.seeds)]
                row[str(b)] = round(float(np.mean(s)), 4)
            results.setdefault(name, {})[cname] = row
            pe = peers.get(name, {}).get("strategies", {})
            cells = []
            for b in budgets:
                kt = {s: v[str(b)] for s, v in pe.items() if s != "random_sample" and str(b) in v}
                bk = max(kt.values()) if kt else float("nan")
                rnd = pe.get("random_sample", {}).get(str(b), float("nan"))
                cells.append(f"{b}:{row[str(b)]:.3f}(kt {bk:.3f} r {rnd:.3f})")
            print(f"{name:26s} {cname:8s} " + " ".join(cells) + f" {time.time() - t0:.0f}s", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"command": " ".join(sys.argv), "opts": opts, "seeds": args.seeds, "results": results}, f, indent=1)
    summarize(results, peers, budgets)


def summarize(results, peers, budgets):
    cands = sorted({c for r in results.values() for c in r})
    for c in cands:
        win = near = beat_r = n = 0
        for name, r in results.items():
            if c not in r:
                continue
            pe = peers.get(name, {}).get("strategies", {})
            for b in budgets:
                kt = [v[str(b)] for s, v in pe.items() if s != "random_sample" and str(b) in v]
                if not kt:
                    continue
                n += 1
                v = r[c][str(b)]
                win += v >= max(kt)
                near += v >= max(kt) - 0.02
                beat_r += v >= pe["random_sample"][str(b)]
        print(f"{c}: >= best KT {win}/{n}, within 0.02 {near}/{n}, >= random {beat_r}/{n}")


if __name__ == "__main__":
    main()
