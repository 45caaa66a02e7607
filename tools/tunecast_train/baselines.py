"""Simple baselines: most frequent training vectors, and the tuned vectors of nearest training problems.

Both are defined exactly in docs/training.md so `tunecast eval` can reproduce them in C++.
"""
import numpy as np

from .data import FIELDS

# Nearest-neighbour features: log2(max(v, 1)) of these fields, then `dir` raw.
KNN_LOG2_FIELDS = ["n", "c", "k", "h", "w", "y", "x", "pad_h", "pad_w", "stride_h", "stride_w", "g"]


def frequent(train_params):
    """Distinct training vectors by descending count; ties by first occurrence in training order."""
    first, count = {}, {}
    for i, p in enumerate(map(tuple, train_params)):
        first.setdefault(p, i)
        count[p] = count.get(p, 0) + 1
    return [list(p) for p in sorted(count, key=lambda p: (-count[p], first[p]))]


def knn_features(fields):
    f = np.asarray(fields, dtype=np.int64)
    cols = [np.log2(np.maximum(f[:, FIELDS.index(n)], 1)) for n in KNN_LOG2_FIELDS]
    cols.append(f[:, FIELDS.index("dir")].astype(np.float64))
    return np.stack(cols, 1)


def nearest(train_fields, train_params, test_fields, kmax, features=None):
    """Per test problem: distinct tuned vectors of training problems in order of Euclidean distance
    of standardized features (mean/std of the training rows, std 0 -> 1), ties by training order;
    stops at kmax vectors. `features` (default knn_features, the convolution problem's) maps a
    field matrix to the features."""
    knn = features or knn_features
    a = knn(train_fields)
    mu, sd = a.mean(0), a.std(0)
    sd[sd == 0] = 1.0
    a = (a - mu) / sd
    b = (knn(test_fields) - mu) / sd
    out = []
    for q in b:
        d = ((a - q) ** 2).sum(1)
        order = np.lexsort((np.arange(len(d)), d))
        seen, cands = set(), []
        for i in order:
            p = tuple(train_params[i])
            if p not in seen:
                seen.add(p)
                cands.append(list(p))
                if len(cands) == kmax:
                    break
        out.append(cands)
    return out
