#!/usr/bin/env python3
"""Exhaustive timing of the Triton 1x1-convolution GEMM (gemm1x1_kernel.py) on a CUDA GPU.

For every shape (n, c, k, h, w) of a shapes CSV (shapes.py), both precisions (FP16; FP32 with a
TF32 dot) and every config of the 576-config space (block_m, block_n, block_k, group_m,
num_warps, num_stages), this:
  1. compiles the config (once per dtype and N/K specialization class, in a pool of processes
     that fills Triton's on-disk cache; a config Triton reports out of shared memory or other
     resources is recorded 'out_of_resources' and never launched; a compiler error
     'compile_fail');
  2. launches it once on a NaN-poisoned output and checks the result against an fp32 (no TF32)
     torch reference: max|Y - ref| / max|ref| <= 1e-2, NaN fails ('wrong_result'); a launch
     that raises is 'launch_fail';
     The checking launch is timed too (CUDA events around that one launch).
  3. times it: a CUDA graph of 10 back-to-back launches is captured, replayed once as warm-up,
     then replayed 5 times, each replay between two CUDA events; per-launch time = replay time
     / 10; the recorded time is the median of the 5 (microseconds). Configs whose checking
     launch took more than 2x the pair's fastest checking launch and more than 50 us are far
     from the optimum and get a cheaper measurement: a graph of 2 launches, 1 warm-up replay,
     median of 3 timed replays (they dominate the device time otherwise: the worst configs are
     5-50x slower). The 50 us floor matters: a 2-launch graph reads ~1.07 us more per launch
     than a 10-launch one, a 20-50 % error for a 2-5 us kernel (merge.py --short-offset-us
     takes it off the short rows).
Results go to a SQLite file (tables meta, kernels, pairs, results), flushed atomically every
--flush-seconds and at the end; merge.py turns parts into the perf-DB-like timings file.

The compile pool, the checking launch, the CUDA-graph measurement, the failure kinds, the time
guard and the flushing are the shared harness's (harness.py), which gemm_splitk.py uses too; this
file gives what is this kernel's: its space, problems, compile call, buffers and launch, the
measurement rule above (plan), and its part-file tables.

Also the library the benchmark server (bench_server.py) imports: Problem, Bench, config space.
Triton and torch are imported lazily: --help works without a GPU.
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import harness  # noqa: E402  (the shared harness: compile pool, check, measurement, output, time guard)
from harness import (STATUSES, CompilePool, FatalCudaError, environment, log, params_text,  # noqa: E402,F401
                     read_done, spec_class)

SOLVER = "TritonGemm1x1"
PARAMS = ("block_m", "block_n", "block_k", "group_m", "num_warps", "num_stages")
DOMAINS = {
    "block_m": (32, 64, 128, 256),
    "block_n": (32, 64, 128, 256),
    "block_k": (32, 64, 128),
    "group_m": (1, 8),
    "num_warps": (4, 8),
    "num_stages": (2, 3, 4),
}
DTYPES = ("FP16", "FP32")
ELEMENT_BYTES = {"FP16": 2, "FP32": 4}
BATCH = 10          # launches per timed CUDA graph
REPEATS = 5         # timed replays; the median is kept
WARMUP_REPLAYS = 1  # untimed replays before the first timed one (after the checking launch)
NEAR_FACTOR = 2.0   # configs whose checking launch took <= this x the pair's fastest get BATCH x REPEATS
FULL_BELOW_US = 50.0  # ... and so do all configs whose checking launch took <= this (see below)
SHORT_BATCH = 2     # ... the slower ones a graph of SHORT_BATCH launches, SHORT_REPEATS timed replays
SHORT_REPEATS = 3
TOLERANCE = {"FP16": 1e-2, "FP32": 1e-2}  # max|Y - ref| / max|ref|

# The autotune list users copy for this GEMM: the CUDA configs of Triton's matrix-multiplication
# tutorial (triton-lang/triton python/tutorials/03-matrix-multiplication.py, get_cuda_autotune_config:
# 8 configs, then 8 "good for fp8 inputs"), as (block_m, block_n, block_k, group_m, num_warps,
# num_stages) (the tutorial's BLOCK_SIZE_M/N/K and GROUP_SIZE_M).
PUBLIC_AUTOTUNE_SOURCE = ("triton-lang/triton python/tutorials/03-matrix-multiplication.py: "
                          "get_cuda_autotune_config()")
PUBLIC_AUTOTUNE_CONFIGS = [
    (128, 256, 64, 8, 8, 3), (64, 256, 32, 8, 4, 4), (128, 128, 32, 8, 4, 4), (128, 64, 32, 8, 4, 4),
    (64, 128, 32, 8, 4, 4), (128, 32, 32, 8, 4, 4), (64, 32, 32, 8, 2, 5), (32, 64, 32, 8, 2, 5),
    (128, 256, 128, 8, 8, 3), (256, 128, 128, 8, 8, 3), (256, 64, 128, 8, 4, 4), (64, 256, 128, 8, 4, 4),
    (128, 128, 128, 8, 4, 4), (128, 64, 64, 8, 4, 4), (64, 128, 64, 8, 4, 4), (128, 32, 64, 8, 4, 4),
]


def config_space():
    """All configs, as tuples in PARAMS order, in a fixed order (itertools.product)."""
    return harness.config_space(PARAMS, DOMAINS)


def public_in_space():
    """(configs of PUBLIC_AUTOTUNE_CONFIGS inside the space (distinct, in list order),
    {reason: count} of those outside)."""
    return harness.public_in_space(PUBLIC_AUTOTUNE_CONFIGS, PARAMS, DOMAINS)


def parse_params(text):
    """'128,64,32,8,4,3' -> tuple of 6 ints; ValueError with a message otherwise."""
    return harness.parse_params(text, PARAMS)


# ----------------------------------------------------------------------------------------------
# Problems (tunecast's problem syntax)
# ----------------------------------------------------------------------------------------------

PROBLEM_DEFAULTS = {"dir": "F", "dtype": "FP16", "layout": "NHWC", "y": "1", "x": "1", "pad_h": "0",
                    "pad_w": "0", "stride_h": "1", "stride_w": "1", "dil_h": "1", "dil_w": "1", "g": "1"}
PROBLEM_ALIASES = {"direction": "dir", "precision": "dtype", "batch": "n", "u": "stride_h", "v": "stride_w",
                   "p": "pad_h", "q": "pad_w", "l": "dil_h", "j": "dil_w", "group": "g"}


class Problem:
    def __init__(self, n, c, k, h, w, dtype):
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
        for name, v in (("n", n), ("c", c), ("k", k), ("h", h), ("w", w)):
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        self.n, self.c, self.k, self.h, self.w, self.dtype = n, c, k, h, w, dtype

    @property
    def M(self):
        return self.n * self.h * self.w

    @property
    def N(self):
        return self.k

    @property
    def K(self):
        return self.c

    def key(self):
        return (self.dtype, spec_class(self.N), spec_class(self.K))

    def class_args(self):
        """compile_config's arguments after dtype (N and K of the compile key)."""
        return (self.N, self.K)

    def describe(self):
        return f"n={self.n} c={self.c} k={self.k} h={self.h} w={self.w} {self.dtype}"

    def __str__(self):
        return (f"dir=F,dtype={self.dtype},layout=NHWC,n={self.n},c={self.c},k={self.k},h={self.h},w={self.w},"
                f"y=1,x=1")


def parse_problem(text):
    """tunecast's problem syntax: comma-separated key=value. Needs n, c, k, h, w; dtype FP16 or
    FP32 (default FP16); the rest, if given, must describe this kernel's problems (forward, 1x1,
    stride 1, pad 0, dilation 1, group 1)."""
    fields = dict(PROBLEM_DEFAULTS)
    seen = set()
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        if "=" not in item:
            raise ValueError(f"problem item {item!r} is not key=value")
        key, value = (s.strip() for s in item.split("=", 1))
        key = PROBLEM_ALIASES.get(key, key)
        if key in seen:
            raise ValueError(f"problem field {key!r} given twice")
        seen.add(key)
        fields[key] = value
    missing = [f for f in ("n", "c", "k", "h", "w") if f not in fields]
    if missing:
        raise ValueError(f"problem lacks {', '.join(missing)} (got {text!r})")
    ints = {}
    for key, value in fields.items():
        if key in ("dir", "dtype", "layout", "arch"):
            continue
        try:
            ints[key] = int(value, 0)
        except ValueError:
            raise ValueError(f"problem field {key}={value!r} is not an integer")
    if fields["dir"] not in ("F", "0"):
        raise ValueError(f"this kernel computes forward convolutions only (dir={fields['dir']})")
    dtype = fields["dtype"].upper()
    if fields["layout"].upper() != "NHWC":
        raise ValueError(f"this kernel times the NHWC layout: give layout=NHWC (or no layout), got "
                         f"layout={fields['layout']}")
    need = {"y": 1, "x": 1, "pad_h": 0, "pad_w": 0, "stride_h": 1, "stride_w": 1, "dil_h": 1, "dil_w": 1, "g": 1}
    for key, want in need.items():
        if ints.get(key, want) != want:
            raise ValueError(f"this kernel needs {key}={want} (1x1, stride 1, pad 0, dilation 1, group 1); "
                             f"got {key}={ints[key]}")
    for key in ("d", "z"):
        if ints.get(key, 1) != 1:
            raise ValueError(f"this kernel is 2-D: {key} must be 1")
    return Problem(ints["n"], ints["c"], ints["k"], ints["h"], ints["w"], dtype)


# ----------------------------------------------------------------------------------------------
# Compilation (in the harness's worker processes, and in the main process for single configs)
# ----------------------------------------------------------------------------------------------

_short = harness.short  # bench_server.py's name for it
_is_out_of_resources = harness.is_out_of_resources


def _torch_dtype(dtype):
    import torch
    return torch.float16 if dtype == "FP16" else torch.float32


def compile_config(dtype, n_val, k_val, cfg, args=None):
    """Compiles (or loads from Triton's cache) one config and loads it on the GPU.
    args: the real (X, W, Y, M) to warm up with; None: dtype placeholders (no memory needed).
    Returns a dict: status ('ok', 'out_of_resources', 'compile_fail'), shared, n_regs,
    n_spills, compile_s, msg."""
    from gemm1x1_kernel import gemm1x1_kernel
    bm, bn, bk, gm, nw, ns = cfg
    if args is None:
        tdt = _torch_dtype(dtype)
        args = (tdt, tdt, tdt, 4096)
    return harness.compile_kernel(lambda: gemm1x1_kernel.warmup(
        *args, n_val, k_val, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=gm, IS_FP32=(dtype == "FP32"),
        num_warps=nw, num_stages=ns, grid=(1,)))


# ----------------------------------------------------------------------------------------------
# Checking and timing on the GPU (harness.Bench: the check, the CUDA-graph measurement)
# ----------------------------------------------------------------------------------------------

class Bench(harness.Bench):
    """Buffers of one (problem, dtype) and the check + timing of configs on them (harness.Bench:
    check/collect_checks, time/collect_times, measure)."""

    WARMUP_REPLAYS = WARMUP_REPLAYS

    def __init__(self, problem, seed=0, use_graphs=True):
        super().__init__(use_graphs)
        import torch
        import triton
        from gemm1x1_kernel import gemm1x1_kernel
        self.triton, self.kernel = triton, gemm1x1_kernel
        self.problem = problem
        self.dtype = problem.dtype
        self.M, self.N, self.K = problem.M, problem.N, problem.K
        self.tolerance = TOLERANCE[self.dtype]
        tdt = _torch_dtype(self.dtype)
        gen = torch.Generator(device="cuda")
        gen.manual_seed(seed)
        torch.backends.cuda.matmul.allow_tf32 = False
        with torch.cuda.stream(self.stream):
            self.X = torch.randn(self.M, self.K, device="cuda", dtype=torch.float32, generator=gen).to(tdt)
            self.W = torch.randn(self.K, self.N, device="cuda", dtype=torch.float32, generator=gen).to(tdt)
            self.Y = torch.empty(self.M, self.N, device="cuda", dtype=tdt)
            self.ref = torch.matmul(self.X.float(), self.W.float())
        try:
            self.finish_setup()
        except RuntimeError as e:
            raise RuntimeError(f"{e} for {problem}")

    def launcher(self, cfg):
        bm, bn, bk, gm, nw, ns = cfg
        grid = (self.triton.cdiv(self.M, bm) * self.triton.cdiv(self.N, bn),)
        run = self.kernel[grid]
        X, W, Y, M, N, K = self.X, self.W, self.Y, self.M, self.N, self.K
        fp32 = self.dtype == "FP32"

        def launch():
            run(X, W, Y, M, N, K, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=gm, IS_FP32=fp32,
                num_warps=nw, num_stages=ns)
        return launch

    def compile(self, cfg):
        """Compiles and loads cfg for this problem in this process (the server's path)."""
        return compile_config(self.dtype, self.N, self.K, cfg, args=(self.X, self.W, self.Y, self.M))

    prepare = compile

    def time(self, cfg, batch=BATCH, repeats=REPEATS):
        return super().time(cfg, batch, repeats)

    def measure(self, cfg, batch=BATCH, repeats=REPEATS):
        return super().measure(cfg, batch, repeats)


def plan(t_check, fastest):
    """The measurement of a config from its checking launch: (launches per graph, timed replays).
    A lone checking launch of a tiny kernel is mostly launch overhead, so NEAR_FACTOR alone sorted
    tiny problems' configs at random; and a graph of SHORT_BATCH launches reads ~1.07 us more per
    launch than one of BATCH, which made the configs that drew the full measurement look up to 2x
    faster than the rest (timings/README.md, "Two measurements"). A config this short is cheap to
    measure in full; merge.py --short-offset-us puts the short rows that remain on the full scale."""
    if t_check <= NEAR_FACTOR * fastest or t_check <= FULL_BELOW_US:
        return BATCH, REPEATS
    return SHORT_BATCH, SHORT_REPEATS


# ----------------------------------------------------------------------------------------------
# The exhaustive run: harness.run_exhaustive with this kernel's problems and output tables
# ----------------------------------------------------------------------------------------------

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS kernels (dtype TEXT, n_class TEXT, k_class TEXT, params TEXT, status TEXT,
    shared INTEGER, n_regs INTEGER, n_spills INTEGER, compile_s REAL, msg TEXT,
    PRIMARY KEY (dtype, n_class, k_class, params));
CREATE TABLE IF NOT EXISTS pairs (shape_idx INTEGER, n INTEGER, c INTEGER, k INTEGER, h INTEGER, w INTEGER,
    dtype TEXT, seconds REAL, n_ok INTEGER, best_us REAL, best_params TEXT, graph_fallbacks INTEGER,
    PRIMARY KEY (shape_idx, dtype));
-- results: cfg = index in config_space() order (merge.py maps it back to params); times in integer
-- nanoseconds per launch (time_ns = median), rel_err_ppb = max|Y-ref|/max|ref| in 1e-9 units (NULL: NaN)
CREATE TABLE IF NOT EXISTS results (shape_idx INTEGER, dtype TEXT, cfg INTEGER, status TEXT, time_ns INTEGER,
    rel_err_ppb INTEGER, t_check_ns INTEGER, t_min_ns INTEGER, t_max_ns INTEGER, batch INTEGER, repeats INTEGER,
    msg TEXT, PRIMARY KEY (shape_idx, dtype, cfg));
"""


class Spec:
    """What harness.run_exhaustive needs of this kernel; writes the part-file tables above
    (what merge.py reads)."""
    module = "triton_gemm1x1"
    plan = staticmethod(plan)
    replan = None

    def __init__(self, shapes):
        self.shapes = shapes
        self.cfg_index = {params_text(cfg): i for i, cfg in enumerate(config_space())}

    def problem(self, idx, dtype):
        return Problem(*self.shapes[idx], dtype)

    def bench(self, problem, idx):
        return Bench(problem, seed=idx)

    def write_kernels(self, db, key, infos):
        dtype, nc, kc = key
        db.con.executemany("INSERT OR REPLACE INTO kernels VALUES (?,?,?,?,?,?,?,?,?,?)", [
            (dtype, nc, kc, params_text(cfg), i["status"], i["shared"], i["n_regs"], i["n_spills"],
             i["compile_s"], i["msg"]) for cfg, i in infos.items()])
        db.con.commit()

    def write_problem(self, db, idx, problem, seconds, rows, fallbacks):
        shape = self.shapes[idx]
        ok = [(t, p) for p, st, t, *_ in rows if st == "ok"]
        best_t, best_p = min(ok) if ok else (None, None)
        db.con.execute("INSERT OR REPLACE INTO pairs VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                       (idx, *shape, problem.dtype, seconds, len(ok), best_t, best_p, fallbacks))

        def ns(v):
            return None if v is None or v != v else int(round(v * 1000.0))

        def ppb(v):
            return None if v is None or v != v or v == float("inf") else int(round(min(v, 1e9) * 1e9))
        db.con.executemany("INSERT OR REPLACE INTO results VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", [
            (idx, problem.dtype, self.cfg_index[p], st, ns(t), ppb(rel), ns(t1), ns(tmin), ns(tmax), b, r, msg)
            for p, st, t, rel, t1, tmin, tmax, b, r, msg in rows])
        db.con.commit()

    @staticmethod
    def clear_problems(con):
        con.execute("DELETE FROM pairs")
        con.execute("DELETE FROM results")


def run_exhaustive(args):
    from shapes import read_shapes
    prepared = harness.prepare_run(args, "triton_gemm1x1.py", read_shapes, DTYPES, config_space())
    if prepared is None:
        return 0
    shapes, lo, hi, work, configs, env = prepared
    db = harness.PartWriter(args.out, args.flush_seconds, args.pairs_per_file, SCHEMA)
    meta = {**env, "solver": SOLVER, "params": ",".join(PARAMS), "space": harness.space_text(PARAMS, DOMAINS),
            "n_configs": len(configs), "timing": f"one checking launch (timed alone: t_check); then a CUDA graph of "
            f"{BATCH} launches, {WARMUP_REPLAYS} warm-up replay, {REPEATS} timed replays between CUDA events; "
            f"time_us = median of the per-launch times (replay time / launches); configs whose t_check > "
            f"{NEAR_FACTOR} x the pair's fastest t_check and > {FULL_BELOW_US:g} us: graph of {SHORT_BATCH} "
            f"launches, {SHORT_REPEATS} timed replays",
            "check": f"max|Y-ref|/max|ref| <= {TOLERANCE['FP16']} (FP16), {TOLERANCE['FP32']} (FP32), ref = fp32 "
            "torch.matmul without TF32; output poisoned with NaN before the checking launch",
            "shapes_file": os.path.basename(args.shapes), "shapes_range": f"{lo}:{hi}",
            "started": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    return harness.run_exhaustive(args, Spec(shapes), work, db, configs, meta)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    harness.add_run_arguments(ap, os.path.join(HERE, "shapes.csv"), DTYPES)
    harness.add_space_arguments(ap)
    args = ap.parse_args(argv)
    if harness.run_space_arguments(args, PARAMS, DOMAINS, PUBLIC_AUTOTUNE_SOURCE, PUBLIC_AUTOTUNE_CONFIGS):
        return 0
    harness.check_run_arguments(ap, args)
    return run_exhaustive(args)


if __name__ == "__main__":
    harness.exit_script(main())
