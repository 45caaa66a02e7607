"""The exhaustive GPU timing harness shared by the tuned Triton kernels of tools/gpu_timing/.

One harness, several kernels: a kernel's script (triton_gemm1x1.py, gemm_splitk.py) gives a
`spec` object (what is kernel-specific: its config space, problems, compile call, buffers and
launch, output tables) and this module does the rest the same way for every kernel:

  1. compile: every config once per compile key (the kernel's specialization class, e.g. dtype and
     N/K divisibility), in a pool of worker processes that fills Triton's on-disk cache
     (CompilePool). A config Triton refuses for shared memory or other resources is recorded
     'out_of_resources' and never launched; any other compiler error 'compile_fail';
  2. check: one launch on a NaN-poisoned output, timed alone with CUDA events (t_check), and the
     error against an fp32 reference: max|Y - ref| / max|ref| <= the spec's tolerance, NaN fails
     ('wrong_result'); a launch that raises is 'launch_fail' (Bench.check / collect_checks);
  3. time: a CUDA graph of B launches, replayed once as warm-up, then R times between CUDA events;
     per-launch time = replay time / B; time_us = median of the R (Bench.time / collect_times).
     B and R per config come from the spec's measurement policy (spec.plan), from t_check and the
     problem's fastest t_check; a spec may also ask for a second pass (spec.replan) that measures
     again the configs whose measured time calls for a larger graph than t_check gave them;
  4. record: rows (params, status, time_us, rel_err, t_check, t_min, t_max, launches, repeats, msg)
     per problem, written by the spec's writer into a SQLite file that is copied to the output
     (gzip when the name ends .gz) atomically every --flush-seconds, after each problem that takes
     the output past its problem count (rolling over to _1, _2, ...), and at the end;
  5. guard: stops before a problem that would end past --max-seconds (also while waiting for a
     compile), so that a call under a hard time limit returns what it did.

The command line is shared too: add_run_arguments (the options, --dtypes included),
check_run_arguments, prepare_run (shapes, --dtypes, the work, --configs, the GPU check and the
environment), print_configs and exit_script; a kernel's script adds its own options, its meta
and its spec.

Torch and Triton are imported lazily: --help works without a GPU.
"""
import importlib
import itertools
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

STATUSES = ("ok", "compile_fail", "out_of_resources", "wrong_result", "launch_fail")

_T0 = time.time()


def log(msg):
    print(f"[{time.time() - _T0:7.1f}s] {msg}", file=sys.stderr, flush=True)


def elapsed():
    return time.time() - _T0


def params_text(cfg):
    return ",".join(str(v) for v in cfg)


def parse_params(text, names):
    """'128,64,32,8,4,3' -> tuple of len(names) positive ints; ValueError with a message otherwise."""
    parts = [p.strip() for p in text.strip().split(",")]
    if len(parts) != len(names):
        raise ValueError(f"expected {len(names)} comma-separated values ({','.join(names)}), got {len(parts)}")
    try:
        vals = tuple(int(p) for p in parts)
    except ValueError:
        raise ValueError(f"not integers: {text.strip()!r}")
    if min(vals) < 1:
        raise ValueError(f"values must be positive: {text.strip()!r}")
    return vals


def spec_class(v):
    """Triton's integer specialization of an argument: '1' (a constant), '16' (multiple of 16), 'x'."""
    return "1" if v == 1 else ("16" if v % 16 == 0 else "x")


def is_out_of_resources(exc):
    return type(exc).__name__ == "OutOfResources" or "out of resource" in str(exc).lower()


def short(exc, limit=300):
    text = f"{type(exc).__name__}: {exc}".replace("\n", " ")
    return text[:limit]


def shared_bytes(ck):
    md = getattr(ck, "metadata", None)
    if md is None:
        return getattr(ck, "shared", None)
    if isinstance(md, dict):
        return md.get("shared")
    return getattr(md, "shared", None)


# ----------------------------------------------------------------------------------------------
# Compilation (runs in worker processes, and in the main process for single configs)
# ----------------------------------------------------------------------------------------------

def compile_kernel(warmup):
    """Runs warmup() (a kernel's .warmup call) and loads the result on the GPU.
    Returns {status ('ok', 'out_of_resources', 'compile_fail'), shared, n_regs, n_spills,
    compile_s, msg}."""
    t0 = time.perf_counter()
    info = {"status": "ok", "shared": None, "n_regs": None, "n_spills": None, "msg": ""}
    try:
        ck = warmup()
        if hasattr(ck, "result"):  # a FutureKernel under Triton's async compile mode
            ck = ck.result()
    except Exception as e:  # noqa: BLE001 - every compiler failure is a result
        info["status"] = "out_of_resources" if is_out_of_resources(e) else "compile_fail"
        info["msg"] = short(e)
    else:
        info["shared"] = shared_bytes(ck)
        try:
            init = getattr(ck, "_init_handles", None)
            if init is not None:
                init()  # loads the cubin; raises OutOfResources past the device's shared memory
            else:
                getattr(ck, "function")
        except Exception as e:  # noqa: BLE001
            info["status"] = "out_of_resources" if is_out_of_resources(e) else "compile_fail"
            info["msg"] = short(e)
        info["n_regs"] = getattr(ck, "n_regs", None)
        info["n_spills"] = getattr(ck, "n_spills", None)
    info["compile_s"] = time.perf_counter() - t0
    return info


def _worker_init(module):
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    import torch  # noqa: F401  (Triton's driver asks torch for the current device and stream)
    importlib.import_module(module)


def _worker_task(task):
    """task = (module, dtype, class_args, cfg): module.compile_config(dtype, *class_args, cfg)."""
    module, dtype, class_args, cfg = task
    try:
        return importlib.import_module(module).compile_config(dtype, *class_args, cfg)
    except Exception as e:  # noqa: BLE001
        return {"status": "compile_fail", "shared": None, "n_regs": None, "n_spills": None,
                "msg": short(e), "compile_s": 0.0}


class CompilePool:
    """Compiles every config for compile keys in worker processes (module.compile_config)."""

    def __init__(self, workers, configs, module):
        import concurrent.futures as cf
        self.cf = cf
        self.configs = configs
        self.module = module
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
                                                    initializer=_worker_init, initargs=(self.module,))

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

    def submit(self, key, dtype, class_args):
        if key in self.tasks:
            return
        tasks = [(self.module, dtype, tuple(class_args), cfg) for cfg in self.configs]
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
                    log(f"compile task failed on {key} {params_text(t[3])}: {short(e)}; compiling in-process")
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
    """Buffers of one problem and the check + timing of configs on them. A kernel subclasses it:
    __init__ calls setup() after making self.stream; the subclass sets self.Y (the output that
    the check poisons and reads), self.ref (fp32 reference, same shape), self.tolerance, and
    defines launcher(cfg) (a no-argument function running the whole operation once) and
    compile(cfg) (compile_config for this problem, in this process).

    Phase 1, check(cfg): one launch on a NaN-poisoned output between two CUDA events, and the
    error against the reference, queued without synchronizing; collect_checks() synchronizes
    once and returns {cfg: (status, single-launch us, rel_err)}.
    Phase 2, time(cfg, batch, repeats): a CUDA graph of `batch` launches, replayed once as
    warm-up, then `repeats` times between CUDA events; collect_times() synchronizes and returns
    {cfg: [per-launch us of each timed replay]}."""

    WARMUP_REPLAYS = 1

    def __init__(self, use_graphs=True):
        import torch
        self.torch = torch
        self.use_graphs = use_graphs
        self.graph_fallbacks = 0
        self.stream = torch.cuda.Stream()
        self.checks = []
        self.timings = []
        self.events = []
        self.n_events_used = 0
        self.poison = []  # extra buffers to fill with NaN before each checking launch

    def finish_setup(self):
        self.stream.synchronize()
        self.ref_max_value = float(self.ref.abs().amax().item())
        if not self.ref_max_value > 0:
            raise RuntimeError(f"degenerate reference (max |ref| = {self.ref_max_value})")

    def launcher(self, cfg):  # pragma: no cover - the kernel's
        raise NotImplementedError

    def compile(self, cfg):  # pragma: no cover - the kernel's
        raise NotImplementedError

    def _event(self):
        if self.n_events_used == len(self.events):
            self.events.append(self.torch.cuda.Event(enable_timing=True))
        ev = self.events[self.n_events_used]
        self.n_events_used += 1
        return ev

    def _health_check(self):
        try:
            self.torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001
            raise FatalCudaError(f"CUDA context lost: {short(e)}")

    def check(self, cfg):
        """Queues the checking launch of cfg. Returns None if queued, else (status, message)."""
        torch = self.torch
        launch = self.launcher(cfg)
        with torch.cuda.stream(self.stream):
            self.Y.fill_(float("nan"))
            for buf in self.poison:
                buf.fill_(float("nan"))
            ev0, ev1 = self._event(), self._event()
            ev0.record(self.stream)
            try:
                launch()
            except Exception as e:  # noqa: BLE001
                if is_out_of_resources(e):
                    return "out_of_resources", short(e)
                self._health_check()
                return "launch_fail", short(e)
            ev1.record(self.stream)
            err = (self.Y.float() - self.ref).abs_().amax()
        self.checks.append((cfg, err, ev0, ev1))
        return None

    def _sync(self):
        try:
            self.stream.synchronize()
        except Exception as e:  # noqa: BLE001
            raise FatalCudaError(f"CUDA error: {short(e)}")

    def collect_checks(self):
        self._sync()
        out = {}
        if self.checks:
            errs = self.torch.stack([c[1] for c in self.checks]).float().cpu().tolist()
            for (cfg, _, ev0, ev1), err in zip(self.checks, errs):
                rel = err / self.ref_max_value
                ok = rel <= self.tolerance  # False for NaN
                out[cfg] = ("ok" if ok else "wrong_result", ev0.elapsed_time(ev1) * 1000.0, rel)
        self.checks = []
        self.n_events_used = 0
        return out

    def time(self, cfg, batch, repeats):
        """Queues the timing of cfg (already checked). Returns None, or (status, message)."""
        torch = self.torch
        launch = self.launcher(cfg)
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
                    log(f"graph capture failed for {params_text(cfg)} ({short(e, 120)}); timing plain launches")
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
                for _ in range(self.WARMUP_REPLAYS):
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
                return "launch_fail", short(e)
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

    def measure(self, cfg, batch, repeats):
        """One config, synchronously (a benchmark server's path): (status, time_us or None, detail)."""
        info = self.compile(cfg)
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


def measure_problem(bench, configs, infos, plan, replan=None):
    """Checks and times every config of one problem on bench. infos: {cfg: compile info}.
    plan(t_check, fastest_t_check) -> (batch, repeats); replan(time_us, best_time_us, batch,
    repeats) -> None or a larger (batch, repeats) to measure again with (the second pass).
    Returns rows (params, status, time_us, rel, t_check, t_min, t_max, batch, repeats, msg) in
    an order of configs' outcome (not configs order)."""
    rows = []
    for cfg in configs:
        info = infos[cfg]
        if info["status"] != "ok":
            rows.append((params_text(cfg), info["status"], None, None, None, None, None, 0, 0, ""))
            continue
        st = bench.check(cfg)
        if st is not None:
            rows.append((params_text(cfg), st[0], None, None, None, None, None, 0, 0, st[1]))
    checks = bench.collect_checks()
    fastest = min((t1 for st, t1, _ in checks.values() if st == "ok"), default=None)
    plan_of = {}
    for cfg, (st, t1, rel) in checks.items():
        if st != "ok":
            rows.append((params_text(cfg), st, None, rel, t1, None, None, 0, 0, ""))
            continue
        batch, repeats = plan(t1, fastest)
        st2 = bench.time(cfg, batch, repeats)
        if st2 is not None:
            rows.append((params_text(cfg), st2[0], None, rel, t1, None, None, 0, 0, st2[1]))
        else:
            plan_of[cfg] = (rel, t1, batch, repeats)
    times = bench.collect_times()
    if replan is not None and times:
        best = min(statistics.median(ts) for ts in times.values())
        again = {}
        for cfg, ts in times.items():
            rel, t1, batch, repeats = plan_of[cfg]
            new = replan(statistics.median(ts), best, batch, repeats)
            if new is not None and tuple(new) != (batch, repeats):
                if bench.time(cfg, *new) is None:
                    again[cfg] = new
        if again:
            for cfg, ts in bench.collect_times().items():
                times[cfg] = ts
                rel, t1, _, _ = plan_of[cfg]
                plan_of[cfg] = (rel, t1, *again[cfg])
    for cfg, ts in times.items():
        rel, t1, batch, repeats = plan_of[cfg]
        rows.append((params_text(cfg), "ok", statistics.median(ts), rel, t1, min(ts), max(ts), batch, repeats, ""))
    return rows


# ----------------------------------------------------------------------------------------------
# Output: a SQLite file copied atomically, rolled over every N problems
# ----------------------------------------------------------------------------------------------

class PartWriter:
    """The run's results in a SQLite file (self.con, in a temporary file), copied (gzip if the
    name ends .gz) to the output path atomically by flush(). roll() after pairs_per_file problems
    starts a new output (same name with _1, _2, ... before the extension): the spec's clear()
    removes the per-problem rows, and meta and per-kernel tables stay."""

    def __init__(self, out_path, flush_seconds, pairs_per_file, schema):
        self.base_path = out_path
        self.out_path = out_path
        self.part = 0
        self.pairs_in_part = 0
        self.pairs_per_file = pairs_per_file
        self.flush_seconds = flush_seconds
        fd, self.work_path = tempfile.mkstemp(prefix="timing_part_", suffix=".db")
        os.close(fd)
        self.con = sqlite3.connect(self.work_path)
        self.con.executescript(schema)
        self.last_flush = time.time()

    def meta(self, items):
        self.con.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", [(k, str(v)) for k, v in items.items()])
        self.con.commit()

    def problem_done(self, clear):
        """After a problem's rows are committed: roll over or flush as due. clear(con) deletes
        the per-problem rows when a new part starts."""
        self.pairs_in_part += 1
        if self.pairs_in_part >= self.pairs_per_file:
            self.flush()
            clear(self.con)
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


# ----------------------------------------------------------------------------------------------
# The exhaustive run
# ----------------------------------------------------------------------------------------------

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
        env["nvidia_smi"] = f"unavailable: {short(e)}"
    return env


def read_done(paths):
    """'index:DTYPE' lines (comments '#') of the files -> set of (index, DTYPE)."""
    done = set()
    for path in paths or []:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line and not line.startswith("#"):
                    idx, dtype = line.split(":")
                    done.add((int(idx), dtype))
    return done


def add_run_arguments(ap, default_shapes, dtypes):
    """The command-line options every kernel's exhaustive run takes (dtypes: the kernel's
    precisions, the --dtypes default)."""
    ap.add_argument("--shapes", default=default_shapes, help="shapes CSV")
    ap.add_argument("--shapes-from", type=int, default=0, help="first shape index (0-based, file order)")
    ap.add_argument("--shapes-to", type=int, default=None, help="one past the last shape index")
    ap.add_argument("--chunk", help="i/N: the i-th of N contiguous chunks of the shapes (overrides from/to)")
    ap.add_argument("--skip-done", action="append",
                    help="file of 'shape_idx:DTYPE' lines already timed elsewhere (repeatable)")
    ap.add_argument("--configs", type=int, default=0, help="time only N configs spread over the space (tests)")
    ap.add_argument("--out", required=False, help="output SQLite file (written atomically)")
    ap.add_argument("--workers", type=int, default=max(1, min(14, (os.cpu_count() or 2) - 2)),
                    help="compile processes (0: compile in this process)")
    ap.add_argument("--max-seconds", type=float, default=500.0,
                    help="stop before a pair that would end past this many seconds since start (default 500)")
    ap.add_argument("--min-reserve", type=float, default=15.0, help="seconds kept free for the last pair (default 15)")
    ap.add_argument("--flush-seconds", type=float, default=20.0, help="copy results to --out this often (default 20)")
    ap.add_argument("--wait-for", help="compile, but time nothing until FILE exists (another GPU job ends)")
    ap.add_argument("--pairs-per-file", type=int, default=250,
                    help="start a new output file (_1, _2, ...) after this many pairs (default 250)")
    ap.add_argument("--dtypes", default=",".join(dtypes),
                    help=f"comma-separated: {', '.join(dtypes)} (default {'both' if len(dtypes) == 2 else 'all'})")


def select_work(args, n_shapes, dtypes):
    """(lo, hi, [(shape index, dtype) to time]) from --shapes-from/--shapes-to/--chunk/--skip-done."""
    lo = args.shapes_from
    hi = n_shapes if args.shapes_to is None else min(args.shapes_to, n_shapes)
    if args.chunk:
        i, n = (int(v) for v in args.chunk.split("/"))
        if not (0 <= i < n):
            raise SystemExit(f"--chunk {args.chunk}: need 0 <= i < N")
        size = -(-n_shapes // n)
        lo, hi = i * size, min(n_shapes, (i + 1) * size)
    done = read_done(args.skip_done)
    return lo, hi, [(idx, d) for idx in range(lo, hi) for d in dtypes if (idx, d) not in done]


def check_run_arguments(ap, args):
    """The checks of add_run_arguments' options before a run (argparse errors: exit 2)."""
    if not args.out:
        ap.error("--out is required")
    if not os.path.exists(args.shapes):
        ap.error(f"--shapes {args.shapes}: no such file")


def parse_dtypes(text, dtypes):
    """--dtypes: 'fp16,FP32' -> ['FP16', 'FP32'], each one of dtypes (SystemExit otherwise)."""
    out = [d.strip().upper() for d in text.split(",") if d.strip()]
    for d in out:
        if d not in dtypes:
            raise SystemExit(f"--dtypes: unknown {d!r} ({', '.join(dtypes)})")
    return out


def spread_configs(configs, n):
    """--configs N: N configs spread evenly over configs (every step-th; all when n is 0)."""
    if not n:
        return configs
    step = max(1, len(configs) // n)
    return configs[::step][:n]


def space_text(params, domains):
    """meta.space: 'block_m in {32,64}; ...'."""
    return "; ".join(f"{p} in {{{','.join(map(str, domains[p]))}}}" for p in params)


def print_configs(configs):
    """--list-space and the like: one 'v1,v2,...' line per config on stdout."""
    for cfg in configs:
        print(params_text(cfg))


def public_in_space(configs, params, domains):
    """(the configs of a public autotune list inside the space (distinct, in list order),
    {reason: count} of those outside, the reason naming the values outside their domains)."""
    inside, outside = [], {}
    for cfg in configs:
        bad = [f"{p}={v}" for p, v in zip(params, cfg) if v not in domains[p]]
        if bad:
            outside["+".join(bad)] = outside.get("+".join(bad), 0) + 1
        elif cfg not in inside:
            inside.append(cfg)
    return inside, outside


def config_space(params, domains):
    """Every config, as tuples in params order, in a fixed order (itertools.product)."""
    return list(itertools.product(*(domains[p] for p in params)))


def add_space_arguments(ap):
    """The options every kernel script answers without a GPU: --list-space, --public-configs."""
    ap.add_argument("--list-space", action="store_true", help="print the config space and exit (no GPU)")
    ap.add_argument("--public-configs", action="store_true",
                    help="print the public autotune list mapped into the space and exit (no GPU)")


def run_space_arguments(args, params, domains, public_source, public_configs):
    """Answers add_space_arguments' options; True when one was given (the script then exits 0)."""
    if args.list_space:
        print_configs(config_space(params, domains))
    elif args.public_configs:
        print_public_configs(public_source, public_configs, params, domains)
    return args.list_space or args.public_configs


def print_public_configs(source, configs, params, domains):
    """--public-configs: the list's configs inside the space, one per line, after comments saying
    where the list comes from and what of it lies outside."""
    inside, outside = public_in_space(configs, params, domains)
    print(f"# {source}: {len(configs)} configs; {len(inside)} distinct inside the space, "
          f"{sum(outside.values())} outside")
    for k, v in sorted(outside.items(), key=lambda kv: -kv[1]):
        print(f"# outside: {v} with {k}")
    print_configs(inside)


def prepare_run(args, script, read_shapes, dtypes, configs):
    """The start of every kernel's exhaustive run, from add_run_arguments' options: the shapes
    (read_shapes(args.shapes)), --dtypes (of dtypes), the work (select_work) and --configs (of
    configs, spread_configs). None when there is nothing to do (logged); else, once a CUDA GPU is
    seen (SystemExit '<script>: no CUDA GPU visible to torch' otherwise) and the environment is
    logged: (shapes, lo, hi, work, configs, env); the kernel then writes its meta and calls
    run_exhaustive."""
    shapes = read_shapes(args.shapes)
    dtypes = parse_dtypes(args.dtypes, dtypes)
    lo, hi, work = select_work(args, len(shapes), dtypes)
    configs = spread_configs(configs, args.configs)
    if not work:
        log("nothing to do")
        return None
    import torch
    if not torch.cuda.is_available():
        raise SystemExit(f"{script}: no CUDA GPU visible to torch")
    env = environment()
    log("environment: " + "; ".join(f"{k}={v}" for k, v in env.items()))
    return shapes, lo, hi, work, configs, env


def exit_script(rc):
    """A kernel script's exit: flush, then os._exit (no waiting on compile workers at interpreter
    exit)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc or 0)


def run_exhaustive(args, spec, work, db, configs, meta):
    """The exhaustive loop over work [(shape index, dtype)], in list order (a problem whose compile
    key is ready goes first). spec gives:
      problem(idx, dtype) -> an object with key() (the compile key; key[0] is the dtype),
          class_args() (the compile_config arguments after dtype) and describe() (for the log);
      module: the module whose compile_config(dtype, *class_args, cfg) the workers call;
      bench(problem, seed) -> a Bench; plan, replan (measure_problem);
      write_kernels(db, key, infos), write_problem(db, idx, problem, seconds, rows, fallbacks)
          (commits; then the harness calls db.problem_done(spec.clear_problems)).
    db: a PartWriter. Returns the exit status (0, or 3 after a fatal CUDA error)."""
    smem_limit = meta.get("shared_memory_per_block_optin")
    db.meta(meta)
    pool = CompilePool(args.workers, configs, spec.module)
    need = {}
    for idx, d in work:
        p = spec.problem(idx, d)
        need.setdefault(p.key(), [0, d, p.class_args()])[0] += 1
    order = sorted(need, key=lambda kk: (-need[kk][0], kk))
    for key in order:
        pool.submit(key, need[key][1], need[key][2])
    log(f"{len(work)} (shape, dtype) pairs to time; {len(configs)} configs; compile keys -> pairs: "
        f"{', '.join(f'{k}:{need[k][0]}' for k in order)}; {args.workers} compile workers")

    wait_for = getattr(args, "wait_for", None)
    if wait_for:
        while not os.path.exists(wait_for) and elapsed() + args.min_reserve < args.max_seconds:
            time.sleep(0.5)
        log(f"{wait_for} {'exists' if os.path.exists(wait_for) else 'still missing'}: timing")
    started = time.time()
    max_pair = 0.0
    remaining = list(work)
    n_done = 0
    stopped = None
    kernels_logged = set()
    while remaining:
        if elapsed() + max(args.min_reserve, 1.5 * max_pair) > args.max_seconds:
            stopped = f"time guard: {elapsed():.0f} s elapsed, longest pair {max_pair:.1f} s, limit {args.max_seconds} s"
            break
        pick = None
        for j, (idx, d) in enumerate(remaining):
            if pool.ready(spec.problem(idx, d).key()):
                pick = j
                break
        if pick is None:
            # Every remaining pair waits on a compile. Wait here, under the time guard, rather than
            # blocking in pool.get past --max-seconds (and past the caller's own limit, which
            # would lose what was timed since the last flush).
            db.flush()
            first_key = spec.problem(*remaining[0]).key()
            while not pool.settled(first_key):
                if elapsed() + max(args.min_reserve, 1.5 * max_pair) > args.max_seconds:
                    break
                time.sleep(0.5)
            if not pool.settled(first_key):
                stopped = (f"time guard while compiling {first_key}: {elapsed():.0f} s elapsed, "
                           f"limit {args.max_seconds} s")
                break
            pick = 0
        idx, d = remaining.pop(pick)
        problem = spec.problem(idx, d)
        key = problem.key()
        t_wait = time.time()
        infos = pool.get(key)
        if key not in kernels_logged:
            kernels_logged.add(key)
            spec.write_kernels(db, key, infos)
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
        try:
            bench = spec.bench(problem, idx)
            rows = measure_problem(bench, configs, infos, spec.plan, getattr(spec, "replan", None))
        except FatalCudaError as e:
            log(f"FATAL on shape {idx} {problem.describe()}: {e}; writing what is done and stopping")
            db.meta({"fatal": str(e), "fatal_pair": f"{idx}:{d}"})
            db.flush()
            pool.shutdown()
            return 3
        secs = time.time() - t0
        max_pair = max(max_pair, secs)
        spec.write_problem(db, idx, problem, secs, rows, bench.graph_fallbacks)
        db.problem_done(spec.clear_problems)
        n_done += 1
        ok = [(t, p) for p, st, t, *_ in rows if st == "ok"]
        counts = {s: sum(1 for r in rows if r[1] == s) for s in STATUSES if s != "ok"}
        best = min(ok) if ok else (float("nan"), "-")
        med = statistics.median(t for t, _ in ok) if ok else float("nan")
        log(f"pair {n_done}/{len(work)} shape {idx} {problem.describe()}: {secs:.2f} s; ok {len(ok)}, {counts}; "
            f"best {best[0]:.3f} us [{best[1]}], median/best {med / best[0]:.2f}")
        del bench
    pool.shutdown()
    left = [f"{i}:{d}" for i, d in remaining]
    db.meta({"finished": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "pairs_done": n_done,
             "pairs_left": " ".join(left), "stopped": stopped or "complete",
             "timing_seconds": f"{time.time() - started:.1f}"})
    db.flush()
    log(f"done: {n_done} pairs in {time.time() - started:.0f} s; {len(left)} left"
        + (f" ({stopped})" if stopped else ""))
    return 0
