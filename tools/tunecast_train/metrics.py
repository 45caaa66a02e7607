"""perfect@k and per-parameter accuracy, shared by the baselines and the trainer."""
import numpy as np

KS = (1, 10, 30, 50, 100)


def score(candidates, targets, ks=KS):
    """candidates: per problem, a list of parameter vectors best first (a callable k -> lists may
    be passed instead, for searches whose result depends on k). targets: tuned vectors.
    perfect@k: percentage of problems with the tuned vector among the first k candidates.
    param_acc: mean over positions of the percentage of problems whose top-1 candidate has the
    tuned value at that position (a problem with no candidate counts as wrong everywhere)."""
    out = {"n": len(targets)}
    for k in ks:
        cands = candidates(k) if callable(candidates) else candidates
        hits = [tuple(t) in {tuple(c) for c in cs[:k]} for cs, t in zip(cands, targets)]
        out[f"perfect@{k}"] = 100.0 * float(np.mean(hits)) if hits else 0.0
    cands = candidates(1) if callable(candidates) else candidates
    P = len(targets[0]) if len(targets) else 0
    acc = np.zeros(P)
    for cs, t in zip(cands, targets):
        if cs:
            acc += np.array(cs[0]) == np.array(t)
    out["param_acc"] = 100.0 * float(acc.mean() / max(len(targets), 1))
    return out


def table(results, ks=KS):
    """results: list of (label, metrics) -> aligned text table."""
    head = f"{'':44s} {'n':>5s} " + " ".join(f"{'p@' + str(k):>6s}" for k in ks) + f" {'pacc':>6s}"
    lines = [head]
    for label, m in results:
        lines.append(f"{label:44s} {m['n']:5d} " + " ".join(f"{m[f'perfect@{k}']:6.1f}" for k in ks)
                     + f" {m['param_acc']:6.1f}")
    return "\n".join(lines)
