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

Also the library the benchmark server (bench_server.py) imports: Problem, Bench, config space.
Triton and torch are imported lazily: --help works without a GPU.
"""
import argparse
import itertools
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

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
STATUSES = ("ok", "compile_fail", "out_of_resources", "wrong_result", "launch_fail")


def config_space():
    """All configs, as tuples in PARAMS order, in a fixed order (itertools.product)."""
    return list(itertools.product(*(DOMAINS[p] for p in PARAMS)))


def params_text(cfg):
    return ",".join(str(v) for v in cfg)


def parse_params(text):
    """'128,64,32,8,4,3' -> tuple of 6 ints; ValueError with a message otherwise."""
    parts = [p.strip() for p in text.strip().split(",")]
    if len(parts) != len(PARAMS):
        raise ValueError(f"expected {len(PARAMS)} comma-separated values ({','.join(PARAMS)}), got {len(parts)}")
    try:
        vals = tuple(int(p) for p in parts)
    except ValueError:
        raise ValueError(f"not integers: {text.strip()!r}")
    if min(vals) < 1:
        raise ValueError(f"values must be positive: {text.strip()!r}")
    return vals


def spec_class(v):
    """Triton's integer specialization of N or K: '1' (a constant), '16' (multiple of 16), 'x'."""
    return "1" if v == 1 else ("16" if v % 16 == 0 else "x")


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
# Compilation (runs in worker processes, and in the main process for single configs)
# ----------------------------------------------------------------------------------------------

def _is_out_of_resources(exc):
    return type(exc).__name__ == "OutOfResources" or "out of resource" in str(exc).lower()


def _short(exc, limit=300):
    text = f"{type(exc).__name__}: {exc}".replace("\n", " ")
    return text[:limit]


def _shared_bytes(ck):
    md = getattr(ck, "metadata", None)
    if md is None:
        return getattr(ck, "shared", None)
    if isinstance(md, dict):
        return md.get("shared")
    return getattr(md, "shared", None)


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
    t0 = time.perf_counter()
    info = {"status": "ok", "shared": None, "n_regs": None, "n_spills": None, "msg": ""}
    if args is None:
        tdt = _torch_dtype(dtype)
        args = (tdt, tdt, tdt, 4096)
    try:
        ck = gemm1x1_kernel.warmup(*args, n_val, k_val, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=gm,
                                   IS_FP32=(dtype == "FP32"), num_warps=nw, num_stages=ns, grid=(1,))
        if hasattr(ck, "result"):  # a FutureKernel under Triton's async compile mode
            ck = ck.result()
    except Exception as e:  # noqa: BLE001 - every compiler failure is a result
        info["status"] = "out_of_resources" if _is_out_of_resources(e) else "compile_fail"
        info["msg"] = _short(e)
    else:
        info["shared"] = _shared_bytes(ck)
        try:
            init = getattr(ck, "_init_handles", None)
            if init is not None:
                init()  # loads the cubin; raises OutOfResources past the device's shared memory
            else:
                getattr(ck, "function")
        except Exception as e:  # noqa: BLE001
            info["status"] = "out_of_resources" if _is_out_of_resources(e) else "compile_fail"
            info["msg"] = _short(e)
        info["n_regs"] = getattr(ck, "n_regs", None)
        info["n_spills"] = getattr(ck, "n_spills", None)
    info["compile_s"] = time.perf_counter() - t0
    return info


def _worker_init():
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    import torch  # noqa: F401  (Triton's driver asks torch for the current device and stream)
    import gemm1x1_kernel  # noqa: F401


def _worker_task(task):
    dtype, n_val, k_val, cfg = task
    try:
        return compile_config(dtype, n_val, k_val, cfg)
    except Exception as e:  # noqa: BLE001
        return {"status": "compile_fail", "shared": None, "n_regs": None, "n_spills": None,
                "msg": _short(e), "compile_s": 0.0}


class CompilePool:
    """Compiles every config for (dtype, N class, K class) keys in worker processes."""

    def __init__(self, workers, configs):
        import concurrent.futures as cf
        self.cf = cf
        self.configs = configs
        self.workers = workers
        self.executor = None
        self.restarts = 0
        self.futures = {}   # key -> list of futures (configs order)
        self.tasks = {}     # key -> list of tasks
        self.results = {}   # key -> {cfg: info}
        self.submitted_at = {}
        if workers > 0:
            self._start()

    def _start(self):
        import multiprocessing as mp
        self.executor = self.cf.ProcessPoolExecutor(max_workers=self.workers, mp_context=mp.get_context("spawn"),
                                                    initializer=_worker_init)

    def _restart(self):
        """A worker died (BrokenProcessPool): resubmit every unfinished task to a fresh pool."""
        self.restarts += 1
        try:
            self.executor.shutdown(wait=False, cancel_futures=True)
        except Exception:  # noqa: BLE001
            pass
        if self.restarts > 5:
            log("compile pool broke 6 times; compiling the rest in this process")
            self.executor = None
            return
        log(f"compile pool broke; restart {self.restarts}")
        self._start()
        for key, futs in self.futures.items():
            if key in self.results:
                continue
            for i, f in enumerate(futs):
                if not f.done() or f.exception() is not None:
                    futs[i] = self.executor.submit(_worker_task, self.tasks[key][i])

    def submit(self, key, n_val, k_val):
        if key in self.tasks:
            return
        dtype = key[0]
        tasks = [(dtype, n_val, k_val, cfg) for cfg in self.configs]
        self.tasks[key] = tasks
        self.submitted_at[key] = time.time()
        if self.executor is not None:
            self.futures[key] = [self.executor.submit(_worker_task, t) for t in tasks]

    def ready(self, key):
        if key in self.results:
            return True
        if self.executor is None or key not in self.futures:
            return False
        return all(f.done() and f.exception() is None for f in self.futures[key])

    def settled(self, key):
        """Every compile task of key has finished, well or not (get() then returns at once, apart
        from failed tasks, which it compiles again in this process)."""
        if key in self.results or self.executor is None or key not in self.futures:
            return True
        return all(f.done() for f in self.futures[key])

    def get(self, key):
        """Blocks until every config of key is compiled; returns {cfg: info}."""
        if key in self.results:
            return self.results[key]
        out = {}
        for i, t in enumerate(self.tasks[key]):
            while t[3] not in out:
                fut = self.futures[key][i] if (self.executor is not None and key in self.futures) else None
                if fut is None:
                    out[t[3]] = _worker_task(t)
                    break
                try:
                    out[t[3]] = fut.result()
                except self.cf.process.BrokenProcessPool:
                    self._restart()
                except Exception as e:  # noqa: BLE001
                    log(f"compile task failed on {key} {params_text(t[3])}: {_short(e)}; compiling in-process")
                    out[t[3]] = _worker_task(t)
        self.results[key] = out
        return out

    def shutdown(self):
        """Stops the workers now (a compile still running would otherwise hold the exit)."""
        if self.executor is not None:
            procs = list(getattr(self.executor, "_processes", {}).values())
            self.executor.shutdown(wait=False, cancel_futures=True)
            for proc in procs:  # only the processes this pool started
                try:
                    proc.terminate()
                except Exception:  # noqa: BLE001
                    pass
            self.executor = None


# ----------------------------------------------------------------------------------------------
# Checking and timing on the GPU
# ----------------------------------------------------------------------------------------------

class FatalCudaError(RuntimeError):
    """The CUDA context is unusable: stop the run."""


class Bench:
    """Buffers of one (problem, dtype) and the check + timing of configs on them.

    Phase 1, check(cfg): one launch on a NaN-poisoned output between two CUDA events, and the
    error against the reference, queued without synchronizing; collect_checks() synchronizes
    once and returns {cfg: (status, single-launch us, rel_err)}.
    Phase 2, time(cfg, batch, repeats): a CUDA graph of `batch` launches, replayed once as
    warm-up, then `repeats` times between CUDA events; collect_times() synchronizes and returns
    {cfg: [per-launch us of each timed replay]}."""

    def __init__(self, problem, seed=0, use_graphs=True):
        import torch
        import triton
        from gemm1x1_kernel import gemm1x1_kernel
        self.torch, self.triton, self.kernel = torch, triton, gemm1x1_kernel
        self.problem = problem
        self.dtype = problem.dtype
        self.M, self.N, self.K = problem.M, problem.N, problem.K
        self.use_graphs = use_graphs
        self.graph_fallbacks = 0
        self.stream = torch.cuda.Stream()
        tdt = _torch_dtype(self.dtype)
        gen = torch.Generator(device="cuda")
        gen.manual_seed(seed)
        torch.backends.cuda.matmul.allow_tf32 = False
        with torch.cuda.stream(self.stream):
            self.X = torch.randn(self.M, self.K, device="cuda", dtype=torch.float32, generator=gen).to(tdt)
            self.W = torch.randn(self.K, self.N, device="cuda", dtype=torch.float32, generator=gen).to(tdt)
            self.Y = torch.empty(self.M, self.N, device="cuda", dtype=tdt)
            self.ref = torch.matmul(self.X.float(), self.W.float())
            self.ref_max = self.ref.abs().amax()
        self.stream.synchronize()
        self.ref_max_value = float(self.ref_max.item())
        if not self.ref_max_value > 0:
            raise RuntimeError(f"degenerate reference for {problem} (max |ref| = {self.ref_max_value})")
        self.checks = []
        self.timings = []
        self.events = []
        self.n_events_used = 0

    def _event(self):
        if self.n_events_used == len(self.events):
            self.events.append(self.torch.cuda.Event(enable_timing=True))
        ev = self.events[self.n_events_used]
        self.n_events_used += 1
        return ev

    def _launcher(self, cfg):
        bm, bn, bk, gm, nw, ns = cfg
        grid = (self.triton.cdiv(self.M, bm) * self.triton.cdiv(self.N, bn),)
        run = self.kernel[grid]
        X, W, Y, M, N, K = self.X, self.W, self.Y, self.M, self.N, self.K
        fp32 = self.dtype == "FP32"

        def launch():
            run(X, W, Y, M, N, K, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=gm, IS_FP32=fp32,
                num_warps=nw, num_stages=ns)
        return launch

    def prepare(self, cfg):
        """Compiles and loads cfg for this problem in this process (the server's path)."""
        return compile_config(self.dtype, self.N, self.K, cfg, args=(self.X, self.W, self.Y, self.M))

    def _health_check(self):
        try:
            self.torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001
            raise FatalCudaError(f"CUDA context lost: {_short(e)}")

    def check(self, cfg):
        """Queues the checking launch of cfg. Returns None if queued, else (status, message)."""
        torch = self.torch
        launch = self._launcher(cfg)
        with torch.cuda.stream(self.stream):
            self.Y.fill_(float("nan"))
            ev0, ev1 = self._event(), self._event()
            ev0.record(self.stream)
            try:
                launch()
            except Exception as e:  # noqa: BLE001
                if _is_out_of_resources(e):
                    return "out_of_resources", _short(e)
                self._health_check()
                return "launch_fail", _short(e)
            ev1.record(self.stream)
            err = (self.Y.float() - self.ref).abs_().amax()
        self.checks.append((cfg, err, ev0, ev1))
        return None

    def _sync(self):
        try:
            self.stream.synchronize()
        except Exception as e:  # noqa: BLE001
            raise FatalCudaError(f"CUDA error: {_short(e)}")

    def collect_checks(self):
        self._sync()
        out = {}
        if self.checks:
            errs = self.torch.stack([c[1] for c in self.checks]).float().cpu().tolist()
            for (cfg, _, ev0, ev1), err in zip(self.checks, errs):
                rel = err / self.ref_max_value
                ok = rel <= TOLERANCE[self.dtype]  # False for NaN
                out[cfg] = ("ok" if ok else "wrong_result", ev0.elapsed_time(ev1) * 1000.0, rel)
        self.checks = []
        self.n_events_used = 0
        return out

    def time(self, cfg, batch=BATCH, repeats=REPEATS):
        """Queues the timing of cfg (already checked). Returns None, or (status, message)."""
        torch = self.torch
        launch = self._launcher(cfg)
        with torch.cuda.stream(self.stream):
            graph = None
            if self.use_graphs:
                graph = torch.cuda.CUDAGraph()
                try:
                    graph.capture_begin()
                    try:
                        for _ in range(batch):
                            launch()
                    finally:
                        graph.capture_end()
                except Exception as e:  # noqa: BLE001
                    log(f"graph capture failed for {params_text(cfg)} ({_short(e, 120)}); timing plain launches")
                    graph = None
                    self.graph_fallbacks += 1
                    self._health_check()
            if graph is not None:
                replay = graph.replay
            else:
                def replay():
                    for _ in range(batch):
                        launch()
            try:
                for _ in range(WARMUP_REPLAYS):
                    replay()
                evs = [self._event()]
                evs[0].record(self.stream)
                for _ in range(repeats):
                    replay()
                    ev = self._event()
                    ev.record(self.stream)
                    evs.append(ev)
            except Exception as e:  # noqa: BLE001
                self._health_check()
                return "launch_fail", _short(e)
        self.timings.append((cfg, batch, evs, graph))
        return None

    def collect_times(self):
        self._sync()
        out = {}
        for cfg, batch, evs, _ in self.timings:
            out[cfg] = [evs[i].elapsed_time(evs[i + 1]) * 1000.0 / batch for i in range(len(evs) - 1)]
        self.timings = []
        self.n_events_used = 0
        return out

    def measure(self, cfg, batch=BATCH, repeats=REPEATS):
        """One config, synchronously (the server's path): (status, time_us or None, detail)."""
        info = self.prepare(cfg)
        if info["status"] != "ok":
            return info["status"], None, info["msg"]
        st = self.check(cfg)
        if st is not None:
            return st[0], None, st[1]
        status, t1, rel = self.collect_checks()[cfg]
        if status != "ok":
            return status, None, f"rel_err={rel:.2e}"
        st = self.time(cfg, batch, repeats)
        if st is not None:
            return st[0], None, st[1]
        times = self.collect_times()[cfg]
        return "ok", statistics.median(times), \
            f"rel_err={rel:.2e} first_launch_us={t1:.3f} batches_us={','.join(f'{x:.3f}' for x in times)}"


# ----------------------------------------------------------------------------------------------
# The exhaustive run
# ----------------------------------------------------------------------------------------------

_T0 = time.time()


def log(msg):
    print(f"[{time.time() - _T0:7.1f}s] {msg}", file=sys.stderr, flush=True)


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


def environment():
    import torch
    import triton
    env = {"torch": torch.__version__, "triton": triton.__version__, "cuda_runtime": str(torch.version.cuda),
           "python": sys.version.split()[0]}
    props = torch.cuda.get_device_properties(0)
    env["gpu"] = props.name
    env["sm_count"] = str(props.multi_processor_count)
    env["compute_capability"] = f"{props.major}.{props.minor}"
    for attr in ("shared_memory_per_block_optin", "shared_memory_per_multiprocessor", "L2_cache_size"):
        if hasattr(props, attr):
            env[attr] = str(getattr(props, attr))
    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm,clocks.max.mem,power.limit",
                            "--format=csv,noheader"], capture_output=True, text=True, timeout=20)
        env["nvidia_smi"] = q.stdout.strip()
        env["driver"] = q.stdout.strip().split(",")[0]
    except Exception as e:  # noqa: BLE001
        env["nvidia_smi"] = f"unavailable: {_short(e)}"
    return env


class PartDB:
    """The run's results in a SQLite file, copied (gzip if the name ends .gz) to the output path
    atomically. Every pairs_per_file pairs the file is closed and a new one started (same name
    with _1, _2, ... before the extension), each holding meta, kernels and its own pairs."""

    def __init__(self, out_path, flush_seconds, pairs_per_file=250):
        self.base_path = out_path
        self.out_path = out_path
        self.part = 0
        self.pairs_in_part = 0
        self.pairs_per_file = pairs_per_file
        self.flush_seconds = flush_seconds
        fd, self.work_path = tempfile.mkstemp(prefix="gemm1x1_part_", suffix=".db")
        os.close(fd)
        self.con = sqlite3.connect(self.work_path)
        self.con.executescript(SCHEMA)
        self.last_flush = time.time()
        self.cfg_index = {params_text(cfg): i for i, cfg in enumerate(config_space())}

    def meta(self, items):
        self.con.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", [(k, str(v)) for k, v in items.items()])
        self.con.commit()

    def kernels(self, key, infos):
        dtype, nc, kc = key
        self.con.executemany("INSERT OR REPLACE INTO kernels VALUES (?,?,?,?,?,?,?,?,?,?)", [
            (dtype, nc, kc, params_text(cfg), i["status"], i["shared"], i["n_regs"], i["n_spills"],
             i["compile_s"], i["msg"]) for cfg, i in infos.items()])
        self.con.commit()

    def pair(self, idx, shape, dtype, seconds, rows, fallbacks):
        ok = [(t, p) for p, st, t, *_ in rows if st == "ok"]
        best_t, best_p = min(ok) if ok else (None, None)
        self.con.execute("INSERT OR REPLACE INTO pairs VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                         (idx, *shape, dtype, seconds, len(ok), best_t, best_p, fallbacks))
        def ns(v):
            return None if v is None or v != v else int(round(v * 1000.0))

        def ppb(v):
            return None if v is None or v != v or v == float("inf") else int(round(min(v, 1e9) * 1e9))
        self.con.executemany("INSERT OR REPLACE INTO results VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", [
            (idx, dtype, self.cfg_index[p], st, ns(t), ppb(rel), ns(t1), ns(tmin), ns(tmax), b, r, msg)
            for p, st, t, rel, t1, tmin, tmax, b, r, msg in rows])
        self.con.commit()
        self.pairs_in_part += 1
        if self.pairs_in_part >= self.pairs_per_file:
            self.flush()
            self.con.execute("DELETE FROM pairs")
            self.con.execute("DELETE FROM results")
            self.con.commit()
            self.part += 1
            self.pairs_in_part = 0
            root, ext = self.base_path, ""
            for e in (".db.gz", ".db", ".gz"):
                if root.endswith(e):
                    root, ext = root[:-len(e)], e
                    break
            self.out_path = f"{root}_{self.part}{ext}"
            return
        if time.time() - self.last_flush >= self.flush_seconds:
            self.flush()

    def flush(self):
        folder = os.path.dirname(os.path.abspath(self.out_path))
        fd, tmp = tempfile.mkstemp(prefix=".part.", suffix=".tmp", dir=folder)
        os.close(fd)
        try:
            plain = self.work_path + ".copy"
            dst = sqlite3.connect(plain)
            self.con.backup(dst)
            dst.close()
            if self.out_path.endswith(".gz"):
                import gzip
                import shutil
                with open(plain, "rb") as fi, gzip.open(tmp, "wb", compresslevel=5) as fo:
                    shutil.copyfileobj(fi, fo, 1 << 20)
                os.unlink(plain)
            else:
                os.replace(plain, tmp)
            os.replace(tmp, self.out_path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        self.last_flush = time.time()


def read_done(paths):
    done = set()
    for path in paths or []:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line and not line.startswith("#"):
                    idx, dtype = line.split(":")
                    done.add((int(idx), dtype))
    return done


def run_exhaustive(args):
    from shapes import read_shapes
    shapes = read_shapes(args.shapes)
    lo = args.shapes_from
    hi = len(shapes) if args.shapes_to is None else min(args.shapes_to, len(shapes))
    if args.chunk:
        i, n = (int(v) for v in args.chunk.split("/"))
        if not (0 <= i < n):
            raise SystemExit(f"--chunk {args.chunk}: need 0 <= i < N")
        size = -(-len(shapes) // n)
        lo, hi = i * size, min(len(shapes), (i + 1) * size)
    dtypes = [d.strip().upper() for d in args.dtypes.split(",") if d.strip()]
    for d in dtypes:
        if d not in DTYPES:
            raise SystemExit(f"--dtypes: unknown {d!r} (FP16, FP32)")
    configs = config_space()
    if args.configs:
        step = max(1, len(configs) // args.configs)
        configs = configs[::step][:args.configs]
    done = read_done(args.skip_done)
    work = [(idx, d) for idx in range(lo, hi) for d in dtypes if (idx, d) not in done]
    if not work:
        log("nothing to do")
        return 0

    import torch
    if not torch.cuda.is_available():
        raise SystemExit("triton_gemm1x1.py: no CUDA GPU visible to torch")
    db = PartDB(args.out, args.flush_seconds, args.pairs_per_file)
    env = environment()
    smem_limit = env.get("shared_memory_per_block_optin")
    log("environment: " + "; ".join(f"{k}={v}" for k, v in env.items()))
    db.meta({**env, "solver": SOLVER, "params": ",".join(PARAMS),
             "space": "; ".join(f"{p} in {{{','.join(map(str, DOMAINS[p]))}}}" for p in PARAMS),
             "n_configs": len(configs), "timing": f"one checking launch (timed alone: t_check); then a CUDA graph of "
             f"{BATCH} launches, {WARMUP_REPLAYS} warm-up replay, {REPEATS} timed replays between CUDA events; "
             f"time_us = median of the per-launch times (replay time / launches); configs whose t_check > "
             f"{NEAR_FACTOR} x the pair's fastest t_check and > {FULL_BELOW_US:g} us: graph of {SHORT_BATCH} "
             f"launches, {SHORT_REPEATS} timed replays",
             "check": f"max|Y-ref|/max|ref| <= {TOLERANCE['FP16']} (FP16), {TOLERANCE['FP32']} (FP32), ref = fp32 "
             "torch.matmul without TF32; output poisoned with NaN before the checking launch",
             "shapes_file": os.path.basename(args.shapes), "shapes_range": f"{lo}:{hi}",
             "started": time.strftime("%Y-%m-%d %H:%M:%S %Z")})

    # Compile: submit keys in order of how many pairs need them, so the common key is ready first.
    pool = CompilePool(args.workers, configs)
    need = {}
    for idx, d in work:
        n, c, k, h, w = shapes[idx]
        key = Problem(n, c, k, h, w, d).key()
        need.setdefault(key, [0, k, c])[0] += 1
    order = sorted(need, key=lambda kk: (-need[kk][0], kk))
    for key in order:
        pool.submit(key, need[key][1], need[key][2])
    log(f"{len(work)} (shape, dtype) pairs to time over shapes [{lo}, {hi}); {len(configs)} configs; "
        f"compile keys (dtype, N class, K class) -> pairs: {', '.join(f'{k}:{need[k][0]}' for k in order)}; "
        f"{args.workers} compile workers")

    started = time.time()
    max_pair = 0.0
    remaining = list(work)
    n_done = 0
    stopped = None
    kernels_logged = set()
    while remaining:
        elapsed = time.time() - _T0
        if elapsed + max(args.min_reserve, 1.5 * max_pair) > args.max_seconds:
            stopped = f"time guard: {elapsed:.0f} s elapsed, longest pair {max_pair:.1f} s, limit {args.max_seconds} s"
            break
        # the first remaining pair (list order) whose compiles are ready; else wait for the first
        pick = None
        for j, (idx, d) in enumerate(remaining):
            n, c, k, h, w = shapes[idx]
            if pool.ready(Problem(n, c, k, h, w, d).key()):
                pick = j
                break
        if pick is None:
            # Every remaining pair waits on a compile. Wait here, under the time guard, rather than
            # blocking in pool.get past --max-seconds (and past the caller's own limit, which
            # would lose what was timed since the last flush).
            db.flush()
            n, c, k, h, w = shapes[remaining[0][0]]
            first_key = Problem(n, c, k, h, w, remaining[0][1]).key()
            while not pool.settled(first_key):
                elapsed = time.time() - _T0
                if elapsed + max(args.min_reserve, 1.5 * max_pair) > args.max_seconds:
                    break
                time.sleep(0.5)
            if not pool.settled(first_key):
                stopped = (f"time guard while compiling {first_key}: {time.time() - _T0:.0f} s elapsed, "
                           f"limit {args.max_seconds} s")
                break
            pick = 0
        idx, d = remaining.pop(pick)
        shape = shapes[idx]
        problem = Problem(*shape, d)
        key = problem.key()
        t_wait = time.time()
        infos = pool.get(key)
        if key not in kernels_logged:
            kernels_logged.add(key)
            db.kernels(key, infos)
            ct = sorted(i["compile_s"] for i in infos.values())
            by = {s: sum(1 for i in infos.values() if i["status"] == s) for s in STATUSES}
            log(f"compiled {key}: {len(infos)} configs in {time.time() - pool.submitted_at[key]:.1f} s wall "
                f"(waited {time.time() - t_wait:.1f} s); per config median {statistics.median(ct):.2f} s, "
                f"max {ct[-1]:.1f} s; status {by}")
            if smem_limit:
                over = [i for i in infos.values() if i["status"] == "ok" and i["shared"] and i["shared"] > int(smem_limit)]
                if over:
                    log(f"warning: {len(over)} configs loaded although shared > {smem_limit}")
            if len(kernels_logged) == len(need):
                pool.shutdown()
        t0 = time.time()
        bench = Bench(problem, seed=idx)
        rows = []
        try:
            for cfg in configs:
                info = infos[cfg]
                if info["status"] != "ok":
                    rows.append((params_text(cfg), info["status"], None, None, None, None, None, 0, 0, ""))
                    continue
                st = bench.check(cfg)
                if st is not None:
                    rows.append((params_text(cfg), st[0], None, None, None, None, None, 0, 0, st[1]))
            checks = bench.collect_checks()
            t_enq = time.time() - t0
            fastest = min((t1 for st, t1, _ in checks.values() if st == "ok"), default=None)
            plan = {}
            for cfg, (st, t1, rel) in checks.items():
                if st != "ok":
                    rows.append((params_text(cfg), st, None, rel, t1, None, None, 0, 0, ""))
                    continue
                # A lone checking launch of a tiny kernel is mostly launch overhead, so NEAR_FACTOR alone
                # sorted tiny problems' configs at random; and a graph of SHORT_BATCH launches reads
                # ~1.07 us more per launch than one of BATCH, which made the configs that drew the full
                # measurement look up to 2x faster than the rest (timings/README.md, "Two measurements").
                # A config this short is cheap to measure in full; merge.py --short-offset-us puts
                # the short rows that remain on the full scale.
                full = t1 <= NEAR_FACTOR * fastest or t1 <= FULL_BELOW_US
                batch, repeats = (BATCH, REPEATS) if full else (SHORT_BATCH, SHORT_REPEATS)
                st2 = bench.time(cfg, batch, repeats)
                if st2 is not None:
                    rows.append((params_text(cfg), st2[0], None, rel, t1, None, None, 0, 0, st2[1]))
                else:
                    plan[cfg] = (rel, t1, batch, repeats)
            for cfg, times in bench.collect_times().items():
                rel, t1, batch, repeats = plan[cfg]
                rows.append((params_text(cfg), "ok", statistics.median(times), rel, t1, min(times), max(times),
                             batch, repeats, ""))
        except FatalCudaError as e:
            log(f"FATAL on shape {idx} {shape} {d}: {e}; writing what is done and stopping")
            db.meta({"fatal": str(e), "fatal_pair": f"{idx}:{d}"})
            db.flush()
            pool.shutdown()
            return 3
        secs = time.time() - t0
        max_pair = max(max_pair, secs)
        db.pair(idx, shape, d, secs, rows, bench.graph_fallbacks)
        n_done += 1
        ok = [(t, p) for p, st, t, *_ in rows if st == "ok"]
        counts = {s: sum(1 for r in rows if r[1] == s) for s in STATUSES if s != "ok"}
        best = min(ok) if ok else (float("nan"), "-")
        med = statistics.median(t for t, _ in ok) if ok else float("nan")
        log(f"pair {n_done}/{len(work)} shape {idx} n={shape[0]} c={shape[1]} k={shape[2]} h={shape[3]} w={shape[4]} "
            f"{d}: {secs:.2f} s (enqueue {t_enq:.2f} s); ok {len(ok)}, {counts}; best {best[0]:.3f} us "
            f"[{best[1]}], median/best {med / best[0]:.2f}")
        del bench
    pool.shutdown()
    left = [f"{i}:{d}" for i, d in remaining]
    db.meta({"finished": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "pairs_done": n_done,
             "pairs_left": " ".join(left), "stopped": stopped or "complete",
             "timing_seconds": f"{time.time() - started:.1f}"})
    db.flush()
    log(f"done: {n_done} pairs in {time.time() - started:.0f} s; {len(left)} left"
        + (f" ({stopped})" if stopped else ""))
    if left:
        log(f"left: {len(left)} pairs (meta pairs_left lists them)")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default=os.path.join(HERE, "shapes.csv"), help="shapes CSV (shapes.py)")
    ap.add_argument("--shapes-from", type=int, default=0, help="first shape index (0-based, file order)")
    ap.add_argument("--shapes-to", type=int, default=None, help="one past the last shape index")
    ap.add_argument("--chunk", help="i/N: the i-th of N contiguous chunks of the shapes (overrides from/to)")
    ap.add_argument("--skip-done", action="append",
                    help="file of 'shape_idx:DTYPE' lines already timed elsewhere (repeatable)")
    ap.add_argument("--dtypes", default="FP16,FP32", help="comma-separated: FP16, FP32 (default both)")
    ap.add_argument("--configs", type=int, default=0, help="time only N configs spread over the space (tests)")
    ap.add_argument("--out", required=False, help="output SQLite file (written atomically)")
    ap.add_argument("--workers", type=int, default=max(1, min(14, (os.cpu_count() or 2) - 2)),
                    help="compile processes (0: compile in this process)")
    ap.add_argument("--max-seconds", type=float, default=500.0,
                    help="stop before a pair that would end past this many seconds since start (default 500)")
    ap.add_argument("--min-reserve", type=float, default=15.0, help="seconds kept free for the last pair (default 15)")
    ap.add_argument("--flush-seconds", type=float, default=20.0, help="copy results to --out this often (default 20)")
    ap.add_argument("--pairs-per-file", type=int, default=250,
                    help="start a new output file (_1, _2, ...) after this many pairs (default 250)")
    ap.add_argument("--list-space", action="store_true", help="print the config space and exit (no GPU)")
    args = ap.parse_args(argv)
    if args.list_space:
        for cfg in config_space():
            print(params_text(cfg))
        return 0
    if not args.out:
        ap.error("--out is required")
    if not os.path.exists(args.shapes):
        ap.error(f"--shapes {args.shapes}: no such file")
    return run_exhaustive(args)


if __name__ == "__main__":
    rc = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc or 0)  # no waiting on compile workers at interpreter exit
