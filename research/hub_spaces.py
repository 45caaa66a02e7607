"""The benchmark hub's exhaustive Kernel Tuner caches used by the model-free search studies (issue 31):
where each cache lies in a checkout of github.com/AutoTuningAssociation/benchmark_hub, and the
tune_params and restrictions of the hub's own kernel script that produced it (copied from the script
named in `script`, hub commit 8eeb99e; `load` checks them against the cache). Imported by
does_model_free_search_beat_kernel_tuner.py and model_free_candidates.py; not a study by itself.

Left out: gemm_milo and hotspot_milo (every cache file is 4 MiB or more, absent from the snapshot we
can fetch), convolution_milo/A6000_original (an older 6-parameter space of the same kernel),
"KernelTuner data/gemm/RTX_3060_laptop" (10,000 of the 17,956 valid configs) and the duplicate
convolution and pnpoly caches under "KernelTuner data/" (the hub's curated copies, with T4 twins,
are in currently_unused/cachefiles/convolution and pnpoly).
"""
import gzip
import json
import math
import os

GPUS_MILO = ["A100", "A4000", "A6000", "MI250X", "W6600", "W7800"]

CONV_MILO = dict(
    script="kernels/convolution_milo.py",
    tune_params={
        "block_size_x": [16 * i for i in range(1, 17)],
        "block_size_y": [2 ** i for i in range(5)],
        "tile_size_x": [1, 2, 3, 4],
        "tile_size_y": [1, 2, 3, 4],
        "read_only": [0, 1],
        "use_padding": [0, 1],
        "use_shmem": [0, 1],
        "use_cmem": [1],
        "filter_height": [15],
        "filter_width": [15],
    },
    restrictions=[
        "use_padding==0 or block_size_x % 32 != 0",
        "block_size_x*block_size_y<=1024",
        "use_padding==0 or use_shmem != 0",
        "use_shmem == 0 or (((block_size_x*tile_size_x+(filter_width-1)))*((block_size_y*tile_size_y+(filter_height-1)))) < 12*1024",
    ],
)

DEDISP_MILO = dict(
    script="kernels/dedisp_milo/dedispersion_milo.py",
    tune_params={
        "block_size_x": [1, 2, 4, 8, 16, 32],
        "block_size_y": [8 * i for i in range(4, 33)],
        "block_size_z": [1],
        "tile_size_x": [1, 2, 3, 4],
        "tile_size_y": [1, 2, 3, 4, 5, 6, 7, 8],
        "tile_stride_x": [0, 1],
        "tile_stride_y": [0, 1],
        "loop_unroll_factor_channel": [0],
    },
    restrictions=[
        "32 <= block_size_x * block_size_y <= 1024",
        "tile_size_x > 1 or tile_stride_x == 0",
        "tile_size_y > 1 or tile_stride_y == 0",
    ],
)

GEMM_CLBLAST = dict(
    script="currently_unused/kernels/gemm.py",
    tune_params={
        "MWG": [16, 32, 64, 128], "NWG": [16, 32, 64, 128], "KWG": [32],
        "MDIMC": [8, 16, 32], "NDIMC": [8, 16, 32], "MDIMA": [8, 16, 32], "NDIMB": [8, 16, 32],
        "KWI": [2], "VWM": [1, 2, 4, 8], "VWN": [1, 2, 4, 8], "STRM": [0], "STRN": [0],
        "SA": [0, 1], "SB": [0, 1], "PRECISION": [32],
    },
    restrictions=[
        "KWG % KWI == 0",
        "MWG % (MDIMC * VWM) == 0",
        "NWG % (NDIMC * VWN) == 0",
        "MWG % (MDIMA * VWM) == 0",
        "NWG % (NDIMB * VWN) == 0",
        "KWG % ((MDIMC * NDIMC)/MDIMA) == 0",
        "KWG % ((MDIMC * NDIMC)/NDIMB) == 0",
    ],
)

CONV_KT = dict(
    script="currently_unused/kernels/convolution.py",
    tune_params={
        "block_size_x": [1, 2, 4, 8, 16, 32, 48, 64, 96, 112, 128],
        "block_size_y": [1, 2, 4, 8, 16, 32],
        "filter_height": [15], "filter_width": [15],
        "read_only": [0, 1],
        "tile_size_x": [1, 2, 3, 4, 5, 6, 7, 8],
        "tile_size_y": [1, 2, 3, 4, 5, 6, 7, 8],
        "use_padding": [0, 1],
    },
    restrictions=["block_size_x*block_size_y>=64", "block_size_x*block_size_y<=1024", "tile_size_x*tile_size_y<30"],
)

PNPOLY = dict(
    script="currently_unused/kernels/pnpoly.py",
    tune_params={
        "between_method": [0, 1, 2, 3],
        "block_size_x": [32 * i for i in range(1, 32)],
        "tile_size": [1] + [2 * i for i in range(1, 11)],
        "use_method": [0, 1, 2],
    },
    restrictions=[],
)


def _caches():
    out = []
    for g in GPUS_MILO:
        out.append((f"convolution_milo/{g}", f"cachefiles/convolution_milo/{g}.json.gz", CONV_MILO))
    for g in GPUS_MILO:
        out.append((f"dedispersion_milo/{g}", f"cachefiles/dedispersion_milo/{g}.json.gz", DEDISP_MILO))
    for g in ["RTX_2080_Ti", "RTX_3090", "RTX_Titan"]:
        out.append((f"gemm_clblast/{g}", f"currently_unused/cachefiles/KernelTuner data/gemm/{g}.json.gz", GEMM_CLBLAST))
    for g in ["RTX_2080_Ti", "RTX_3090"]:
        out.append((f"convolution/{g}", f"currently_unused/cachefiles/convolution/{g}.json.gz", CONV_KT))
    for g in ["RTX_2080_Ti", "RTX_3090"]:
        out.append((f"pnpoly/{g}", f"currently_unused/cachefiles/pnpoly/{g}.json.gz", PNPOLY))
    return out


CACHES = _caches()

# The hub's other complete caches of the same kernels and spaces (other GPUs), which no choice of
# the model-free search's recipe looked at: a check that what was chosen on CACHES generalizes.
# (KernelTuner data/gemm/RTX_3060_laptop lacks 7,956 valid configs; convolution_milo/mi50 and
# A6000_original have other spaces.)
_KT_DATA = "currently_unused/cachefiles/KernelTuner data"
HELD_OUT = [(f"{kernel}/{g}", f"{_KT_DATA}/{kernel}/{g}.json.gz", spec)
            for kernel, spec in (("convolution", CONV_KT), ("pnpoly", PNPOLY))
            for g in ("RTX_Titan", "RTX_3060_laptop")]


def select(names, held_out=False):
    """The CACHES (HELD_OUT with held_out) whose name contains one of the comma-separated substrings
    (all when empty)."""
    caches = HELD_OUT if held_out else CACHES
    if not names:
        return caches
    keys = [n for n in names.split(",") if n]
    chosen = [c for c in caches if any(k in c[0] for k in keys)]
    if not chosen:
        raise SystemExit(f"no cache matches {names!r}; known: {', '.join(c[0] for c in caches)}")
    return chosen


def restriction_ok(restrictions, config):
    return all(eval(r, {"__builtins__": {}}, dict(config)) for r in restrictions)


def expected_random_speed(times, budget):
    """The mean speed (best time / best found) of `budget` configs drawn uniformly without replacement
    from `times` (a failed config, inf, is speed 0): the autotuning methodology's calculated random
    search baseline, exact where a mean over seeds of random sampling is noisy. With the speeds
    sorted ascending, the best of the draws is the i-th with probability C(i, B-1) / C(n, B)."""
    best = min(times)
    speeds = sorted(best / t if t != math.inf else 0.0 for t in times)
    n = len(speeds)
    budget = min(budget, n)
    log_total = math.lgamma(n + 1) - math.lgamma(budget + 1) - math.lgamma(n - budget + 1)
    expected = 0.0
    for i in range(budget - 1, n):
        log_ways = math.lgamma(i + 1) - math.lgamma(budget) - math.lgamma(i - budget + 2)
        expected += speeds[i] * math.exp(log_ways - log_total)
    return expected


def load(hub, name, rel, spec):
    """The cache as a Space: every config of the kernel script's space that passes its restrictions,
    as value positions, with its time (inf for a config that failed: compile, runtime or
    verification error in the cache). The script's space must equal the cache's recorded space."""
    path = os.path.join(hub, rel)
    with gzip.open(path) as f:
        data = json.load(f)
    keys = data["tune_params_keys"]
    tp = spec["tune_params"]
    if sorted(keys) != sorted(tp):
        raise SystemExit(f"{name}: cache parameters {keys} differ from {spec['script']}'s {list(tp)}")
    for k in keys:
        if [v for v in data["tune_params"][k]] != tp[k]:
            raise SystemExit(f"{name}: cache values of {k} {data['tune_params'][k]} differ from the script's {tp[k]}")
    return Space(name, rel, spec, data, keys)


class Space:
    def __init__(self, name, rel, spec, data, keys):
        import itertools
        self.name, self.rel, self.spec = name, rel, spec
        self.raw = data
        self.cache_keys = keys                      # the cache's key order
        self.params = list(spec["tune_params"])     # the script's order (ours)
        self.values = [spec["tune_params"][p] for p in self.params]
        self.restrictions = spec["restrictions"]
        cache = data["cache"]
        configs, times = [], []
        missing = 0
        for combo in itertools.product(*self.values):
            cfg = dict(zip(self.params, combo))
            if not restriction_ok(self.restrictions, cfg):
                continue
            key = ",".join(str(cfg[k]) for k in keys)
            entry = cache.get(key)
            if entry is None:
                missing += 1
                continue
            t = entry.get("time")
            ok = isinstance(t, (int, float)) and math.isfinite(t) and t > 0
            configs.append(tuple(self.values[i].index(v) for i, v in enumerate(combo)))
            times.append(float(t) if ok else math.inf)
        if missing:
            raise SystemExit(f"{name}: {missing} valid configs of the script's space are not in the cache")
        self.configs = configs       # positions
        self.times = times
        self.best = min(times)
        self.n_failed = sum(1 for t in times if t == math.inf)
        self.index = {c: i for i, c in enumerate(configs)}
        extra = len(cache) - len(configs)
        self.cache_entries_outside = extra  # cache rows the restrictions reject (none expected)

    def valid(self, pos):
        return tuple(pos) in self.index

    def time(self, pos):
        return self.times[self.index[tuple(pos)]]
