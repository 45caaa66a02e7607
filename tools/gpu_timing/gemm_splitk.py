#!/usr/bin/env python3
"""Exhaustive timing of the Triton split-K GEMM TritonGemmSplitK (gemm_splitk_kernel.py) on a CUDA GPU.

For every shape (m, n, k) of a shapes CSV (gemm_shapes.py: linear layers of public LLMs times
token counts), both precisions (FP16, BF16; fp32 accumulation) and every config of the 768-config
space (block_m, block_n, block_k, split_k, num_warps, num_stages), the shared harness
(harness.py: compile pool, checking launch, CUDA-graph measurement, failure kinds, time guard,
flushing) compiles, checks and times the whole operation a user runs: the GEMM, and for
split_k > 1 the fp32 reduction of the partial sums and the cast (gemm_splitk_kernel.launcher).

Measurement policy (plan/replan below): the checking launch is timed alone (t_check). Configs
with t_check <= 2x the problem's fastest t_check, or <= 50 us, get the full measurement: a CUDA
graph of B launches, 1 warm-up replay, 5 timed replays, time_us = median of replay / B, with
B = 10 for t_check <= 30 us and B = clamp(round(300 us / t_check), 2, 10) above (a 100 us call
needs no 10-launch graph to hide the ~2.7 us fixed cost of a replay: B = 3 leaves < 1 %, and it
keeps large decode problems timeable). Slower configs get a short one: a graph of 2 launches,
3 timed replays. Then a second pass measures again, with the graph the measured time calls for,
every config whose measured time makes it "full" (<= 2x the problem's best measured time, or
<= 50 us) or asks for a larger graph than t_check gave it (a lone checking launch of a small
kernel is mostly launch overhead): so every row's graph follows from its own measured time, and
the configs near each problem's optimum are all measured the same way. The graph size is kept
per row (timing_detail.launches).

Check: inputs N(0,1) (seed = shape index), output (and the split-K workspace) poisoned with NaN,
one launch, max|Y - ref| / max|ref| <= 1e-2 against an fp32 torch matmul of the same inputs
(no TF32).

Output: the generic timing DB (timing_db.py, docs/kernels.md: meta, problems, timings, perf_db),
fields m, n, k, dtype (FP16/BF16), arch (h100), plus timing_detail, pairs and kernels; copied
atomically (gzip when the name ends .gz) every --flush-seconds; merge with timing_db.py.
"""
import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import harness  # noqa: E402
import timing_db  # noqa: E402
from harness import log, params_text, spec_class  # noqa: E402

SOLVER = "TritonGemmSplitK"
PARAMS = ("block_m", "block_n", "block_k", "split_k", "num_warps", "num_stages")
DOMAINS = {
    "block_m": (16, 32, 64, 128),
    "block_n": (32, 64, 128, 256),
    "block_k": (32, 64, 128),
    "split_k": (1, 2, 4, 8),
    "num_warps": (4, 8),
    "num_stages": (3, 4),
}
DTYPES = ("FP16", "BF16")
FIELDS = [("m", "INTEGER"), ("n", "INTEGER"), ("k", "INTEGER"), ("dtype", "TEXT"), ("arch", "TEXT")]
ARCH = "h100"
TOLERANCE = 1e-2
BATCH = 10            # launches per full graph for calls of <= FULL_BATCH_BELOW_US
FULL_BATCH_BELOW_US = 30.0
FULL_GRAPH_US = 300.0  # above: B = clamp(round(FULL_GRAPH_US / t), 2, BATCH)
REPEATS = 5
NEAR_FACTOR = 2.0
FULL_BELOW_US = 50.0
SHORT_BATCH = 2
SHORT_REPEATS = 3
DEFINITION_PATH = os.path.normpath(os.path.join(HERE, "..", "..", "weights", "rules", "TritonGemmSplitK.tcr"))

# The autotune configs of the split-K kernel users copy: Triton's former triton/ops/matmul.py
# (triton-lang/triton, python/triton/ops/matmul.py, Triton 2.x; the `_kernel` of `triton.ops.matmul`,
# removed from later Triton releases; copied into kernl, torchao, vLLM-era forks): 18 compute-bound
# configs with SPLIT_K = 1 and get_configs_io_bound(): num_stages in {2..6} x block_m in {16, 32} x
# block_k in {32, 64} x block_n in {32, 64, 128, 256}, num_warps = 2 if block_n <= 64 else 4, SPLIT_K in
# {1, 2, 4, 8, 16} (split_k > 1 with pre_hook init_to_zero('C'), atomic adds into C). As
# (block_m, block_n, block_k, split_k, num_warps, num_stages):
PUBLIC_AUTOTUNE_SOURCE = "triton-lang/triton python/triton/ops/matmul.py (Triton 2.x): _kernel's @autotune configs"
PUBLIC_AUTOTUNE_CONFIGS = [
    (128, 256, 32, 1, 8, 3), (256, 128, 32, 1, 8, 3), (256, 64, 32, 1, 4, 4), (64, 256, 32, 1, 4, 4),
    (128, 128, 32, 1, 4, 4), (128, 64, 32, 1, 4, 4), (64, 128, 32, 1, 4, 4), (128, 32, 32, 1, 4, 4),
    (64, 32, 32, 1, 2, 5),
    (128, 256, 128, 1, 8, 3), (256, 128, 128, 1, 8, 3), (256, 64, 128, 1, 4, 4), (64, 256, 128, 1, 4, 4),
    (128, 128, 128, 1, 4, 4), (128, 64, 64, 1, 4, 4), (64, 128, 64, 1, 4, 4), (128, 32, 64, 1, 4, 4),
    (64, 32, 64, 1, 2, 5),
] + [(bm, bn, bk, sk, 2 if bn <= 64 else 4, ns)
     for ns in (2, 3, 4, 5, 6) for bm in (16, 32) for bk in (32, 64) for bn in (32, 64, 128, 256)
     for sk in (1, 2, 4, 8, 16)]


def config_space():
    """All configs, as tuples in PARAMS order, in a fixed order (itertools.product)."""
    return harness.config_space(PARAMS, DOMAINS)


def public_in_space():
    """(configs of PUBLIC_AUTOTUNE_CONFIGS inside the space (distinct, in list order),
    {reason: count} of those outside)."""
    return harness.public_in_space(PUBLIC_AUTOTUNE_CONFIGS, PARAMS, DOMAINS)


def parse_params(text):
    return harness.parse_params(text, PARAMS)


# ----------------------------------------------------------------------------------------------
# Problems
# ----------------------------------------------------------------------------------------------

class Problem:
    def __init__(self, m, n, k, dtype, arch=ARCH):
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
        for name, v in (("m", m), ("n", n), ("k", k)):
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        self.m, self.n, self.k, self.dtype, self.arch = m, n, k, dtype, arch

    def values(self):
        return {"m": self.m, "n": self.n, "k": self.k, "dtype": self.dtype, "arch": self.arch}

    def key(self):
        return (self.dtype, spec_class(self.n), spec_class(self.k))

    def class_args(self):
        return (self.n, self.k)

    def describe(self):
        return f"m={self.m} n={self.n} k={self.k} {self.dtype}"

    def __str__(self):
        return timing_db.canonical(FIELDS, self.values())


def parse_problem(text):
    """tunecast's problem syntax for a definition: name=value items (',', ';' or spaces)."""
    vals = {"dtype": "FP16", "arch": ARCH}
    for item in text.replace(";", ",").replace(" ", ",").split(","):
        item = item.strip()
        if not item:
            continue
        if "=" not in item:
            raise ValueError(f"problem item {item!r} is not name=value")
        key, value = (s.strip() for s in item.split("=", 1))
        if key not in ("m", "n", "k", "dtype", "arch"):
            raise ValueError(f"unknown problem field {key!r} (m, n, k, dtype, arch)")
        vals[key] = value
    missing = [f for f in ("m", "n", "k") if f not in vals]
    if missing:
        raise ValueError(f"problem lacks {', '.join(missing)}")
    try:
        m, n, k = (int(vals[f], 0) for f in ("m", "n", "k"))
    except ValueError:
        raise ValueError(f"m, n, k must be integers: {text!r}")
    return Problem(m, n, k, vals["dtype"].upper(), vals["arch"])


# ----------------------------------------------------------------------------------------------
# Compile (worker processes) and the bench
# ----------------------------------------------------------------------------------------------

def _torch_dtype(dtype):
    import torch
    return torch.float16 if dtype == "FP16" else torch.bfloat16


def compile_config(dtype, n_val, k_val, cfg, args=None):
    """Compiles (or loads from Triton's cache) the GEMM kernel of one config and loads it.
    args: real (x, w, y, ws, M); None: dtype placeholders."""
    import gemm_splitk_kernel as gk
    if args is None:
        import torch
        tdt = _torch_dtype(dtype)
        args = (tdt, tdt, tdt, torch.float32, 4096)
    x, w, y, ws, M = args
    return harness.compile_kernel(lambda: gk.warmup(x, w, y, ws, M, n_val, k_val, *cfg))


class SplitKBench(harness.Bench):
    def __init__(self, problem, seed=0, use_graphs=True):
        super().__init__(use_graphs)
        import torch
        import gemm_splitk_kernel as gk
        self.gk = gk
        self.problem = problem
        self.dtype = problem.dtype
        self.M, self.N, self.K = problem.m, problem.n, problem.k
        self.tolerance = TOLERANCE
        tdt = _torch_dtype(self.dtype)
        gen = torch.Generator(device="cuda")
        gen.manual_seed(seed)
        torch.backends.cuda.matmul.allow_tf32 = False
        max_split = max(DOMAINS["split_k"])
        with torch.cuda.stream(self.stream):
            self.X = torch.randn(self.M, self.K, device="cuda", dtype=torch.float32, generator=gen).to(tdt)
            self.W = torch.randn(self.N, self.K, device="cuda", dtype=torch.float32, generator=gen).to(tdt)
            self.Y = torch.empty(self.M, self.N, device="cuda", dtype=tdt)
            self.ws = torch.empty(max_split * self.M * self.N, device="cuda", dtype=torch.float32)
            self.ref = torch.matmul(self.X.float(), self.W.float().t())
            # compile the (fixed) reduction kernels before any timed launch
            for s in DOMAINS["split_k"]:
                if s > 1:
                    gk.splitk_reduce_kernel[(1,)](self.ws, self.Y, self.M * self.N, SPLIT_K=s,
                                                  BLOCK=gk.REDUCE_BLOCK, num_warps=gk.REDUCE_WARPS)
        self.poison = [self.ws]
        self.finish_setup()

    def launcher(self, cfg):
        return self.gk.launcher(self.X, self.W, self.Y, self.ws, self.M, self.N, self.K, *cfg)

    def compile(self, cfg):
        return compile_config(self.dtype, self.N, self.K, cfg, args=(self.X, self.W, self.Y, self.ws, self.M))


def full_batch(t):
    if t <= FULL_BATCH_BELOW_US:
        return BATCH
    return max(SHORT_BATCH, min(BATCH, int(round(FULL_GRAPH_US / t))))


def plan(t, fastest):
    if t <= NEAR_FACTOR * fastest or t <= FULL_BELOW_US:
        return full_batch(t), REPEATS
    return SHORT_BATCH, SHORT_REPEATS


def replan(t, best, batch, repeats):
    want = plan(t, best)
    if want[0] > batch or want[1] > repeats:
        return max(want[0], batch), max(want[1], repeats)
    return None


# ----------------------------------------------------------------------------------------------
# The spec the harness runs
# ----------------------------------------------------------------------------------------------

def _round_sig(v, digits=2):
    if v is None or v != v:
        return None
    return float(f"{v:.{digits - 1}e}")


class Spec:
    module = "gemm_splitk"
    plan = staticmethod(plan)
    replan = staticmethod(replan)

    def __init__(self, shapes):
        self.shapes = shapes
        self.done = []

    def problem(self, idx, dtype):
        m, n, k = self.shapes[idx]
        return Problem(m, n, k, dtype)

    def bench(self, problem, idx):
        return SplitKBench(problem, seed=idx)

    @staticmethod
    def pid(idx, dtype):
        return idx * len(DTYPES) + DTYPES.index(dtype) + 1

    def write_kernels(self, db, key, infos):
        dtype, nc, kc = key
        db.con.executemany("INSERT OR REPLACE INTO kernels VALUES (?,?,?,?,?,?,?,?,?,?)", [
            (dtype, nc, kc, params_text(cfg), i["status"], i["shared"], i["n_regs"], i["n_spills"],
             round(i["compile_s"], 3), i["msg"]) for cfg, i in infos.items()])
        db.con.commit()

    def write_problem(self, db, idx, problem, seconds, rows, fallbacks):
        con = db.con
        pid = timing_db.add_problem(con, FIELDS, problem.values(), pid=self.pid(idx, problem.dtype))
        con.executemany("INSERT INTO timings VALUES (?, ?, ?, ?)", [
            (pid, p, None if t is None else round(t, 4), st) for p, st, t, *_ in rows])
        detail = []
        for p, st, t, rel, t1, tmin, tmax, b, r, _msg in rows:
            spread = None if t is None or not t > 0 else int(round(1000.0 * (tmax - tmin) / t))
            detail.append((pid, p, _round_sig(rel), spread, b, r, None if t1 is None else round(t1, 1)))
        con.executemany("INSERT OR REPLACE INTO timing_detail VALUES (?, ?, ?, ?, ?, ?, ?)", detail)
        ok = [(t, p) for p, st, t, *_ in rows if st == "ok"]
        best_t, best_p = min(ok) if ok else (None, None)
        con.execute("INSERT OR REPLACE INTO pairs VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (pid, idx, round(seconds, 2), len(ok), best_t, best_p, fallbacks))
        con.commit()
        self.done.append(f"{idx}:{problem.dtype}")

    @staticmethod
    def clear_problems(con):
        for t in ("problems", "timings", "timing_detail", "pairs", "perf_db"):
            con.execute(f"DELETE FROM {t}")


def read_definition():
    try:
        with open(DEFINITION_PATH) as f:
            return f.read()
    except OSError:
        return None


def run(args):
    from gemm_shapes import read_shapes
    prepared = harness.prepare_run(args, "gemm_splitk.py", read_shapes, DTYPES, config_space())
    if prepared is None:
        return 0
    shapes, lo, hi, work, configs, env = prepared
    db = harness.PartWriter(args.out, args.flush_seconds, args.pairs_per_file, timing_db.schema(FIELDS))
    meta = {**timing_db.base_meta(SOLVER, PARAMS, FIELDS, read_definition()), **env,
            "space": harness.space_text(PARAMS, DOMAINS),
            "n_configs": len(configs),
            "kernel": "tools/gpu_timing/gemm_splitk_kernel.py: Y[m,n] = X[m,k] @ W[n,k]^T, fp32 accumulation; "
                      "split_k > 1: fp32 partials in a workspace [split_k, m, n] and a reduction kernel (cast "
                      "included); GROUP_M 8",
            "timing": f"one checking launch (timed alone: t_check); configs with t_check <= {NEAR_FACTOR} x the "
                      f"problem's fastest or <= {FULL_BELOW_US:g} us: CUDA graph of B launches (B = {BATCH} for "
                      f"t <= {FULL_BATCH_BELOW_US:g} us, else clamp(round({FULL_GRAPH_US:g} / t), {SHORT_BATCH}, "
                      f"{BATCH})), 1 warm-up replay, {REPEATS} timed replays; others {SHORT_BATCH} launches, "
                      f"{SHORT_REPEATS} timed replays; time_us = median per-launch time; a second pass measures "
                      "again each config whose measured time calls for a larger graph (same rule, measured time "
                      "and the problem's best measured time); timing_detail.launches/repeats per row",
            "check": f"max|Y-ref|/max|ref| <= {TOLERANCE}, ref = fp32 torch.matmul (no TF32) of the same inputs; "
                     "output and workspace poisoned with NaN before the checking launch",
            "shapes_file": os.path.basename(args.shapes), "shapes_range": f"{lo}:{hi}",
            "shape_selection": "tools/gpu_timing/gemm_shapes.py (docstring): (n, k) of public LLM linear layers x "
                               "token counts m, n*k <= 2^26, m*n*k <= 2^31, ordered by sha256('m,n,k')",
            "started": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    spec = Spec(shapes)
    try:
        return harness.run_exhaustive(args, spec, work, db, configs, meta)
    finally:
        if args.done_file:  # the pairs this call timed, for the next call's --skip-done
            with open(args.done_file, "a") as f:
                f.write("".join(line + "\n" for line in spec.done))


def stats(path):
    """Summary statistics of a merged timing DB (timings/README.md), markdown on stdout."""
    con, tmpdir = timing_db.open_db(path)
    try:
        per = {}
        for pid, dtype, m in con.execute("SELECT id, dtype, m FROM problems"):
            per[pid] = {"dtype": dtype, "m": m, "ok": {}, "fail": {}}
        for pid, params, t, st in con.execute("SELECT problem, params, time_us, status FROM timings"):
            if st == "ok":
                per[pid]["ok"][params] = t
            else:
                per[pid]["fail"][st] = per[pid]["fail"].get(st, 0) + 1
        inside = [params_text(c) for c in public_in_space()[0]]
        print("| precision | problems | configs failing | median config / best | worst / best | within 2 % | "
              "within 5 % | public list's best / best |")
        print("|---|---|---|---|---|---|---|---|")
        fastest = {}
        for dtype in DTYPES:
            ps = [p for p in per.values() if p["dtype"] == dtype]
            if not ps:
                continue
            rows = {"med": [], "worst": [], "w2": [], "w5": [], "pub": []}
            n_fail, n_all, kinds = 0, 0, {}
            for p in ps:
                ts = sorted(p["ok"].values())
                best = ts[0]
                rows["med"].append(statistics.median(ts) / best)
                rows["worst"].append(ts[-1] / best)
                rows["w2"].append(sum(1 for t in ts if t <= 1.02 * best))
                rows["w5"].append(sum(1 for t in ts if t <= 1.05 * best))
                rows["pub"].append(min(p["ok"][c] for c in inside if c in p["ok"]) / best)
                n_fail += sum(p["fail"].values())
                n_all += len(p["ok"]) + sum(p["fail"].values())
                for k, v in p["fail"].items():
                    kinds[k] = kinds.get(k, 0) + v
                bp = min(p["ok"], key=p["ok"].get)
                fastest[bp] = fastest.get(bp, 0) + 1

            def q(v):
                v = sorted(v)
                return f"{statistics.median(v):.2f} [{v[0]:.2f}, {v[-1]:.2f}]"

            def qi(v):
                v = sorted(v)
                return f"{statistics.median(v):g} [{v[0]}, {v[-1]}]"
            print(f"| {dtype} | {len(ps)} | {100.0 * n_fail / n_all:.1f} % ({', '.join(f'{k} {v}' for k, v in kinds.items())})"
                  f" | {q(rows['med'])} | {q(rows['worst'])} | {qi(rows['w2'])} | {qi(rows['w5'])} | {q(rows['pub'])} |")
        top = sorted(fastest.items(), key=lambda kv: -kv[1])[:5]
        print(f"\n{len(fastest)} distinct fastest configs over {len(per)} problems; most frequent: "
              + ", ".join(f"{p} ({n})" for p, n in top))
        by_split = {}
        for p in per.values():
            bp = min(p["ok"], key=p["ok"].get)
            sk = int(bp.split(",")[3])
            band = "m <= 16" if p["m"] <= 16 else ("m <= 256" if p["m"] <= 256 else "m > 256")
            by_split.setdefault(band, {}).setdefault(sk, 0)
            by_split[band][sk] += 1
        for band in ("m <= 16", "m <= 256", "m > 256"):
            if band in by_split:
                d = by_split[band]
                print(f"fastest config's split_k, {band}: " + ", ".join(f"{k}: {d[k]}" for k in sorted(d)))
        sp = sorted(r[0] for r in con.execute("SELECT spread_permille FROM timing_detail WHERE launches >= 3 "
                                             "AND spread_permille IS NOT NULL"))
        if sp:
            print(f"spread (max - min) / median of full measurements: median {sp[len(sp) // 2] / 10:.1f} %, "
                  f"90th percentile {sp[int(len(sp) * 0.9)] / 10:.1f} % ({len(sp)} rows)")
        for launches, n in con.execute("SELECT launches, COUNT(*) FROM timing_detail GROUP BY launches"):
            print(f"launches {launches}: {n} rows")
    finally:
        timing_db.close_db(con, tmpdir)
    return 0


SMOKE_CONFIGS = [(64, 64, 64, 1, 4, 3), (16, 64, 128, 4, 4, 3), (128, 256, 64, 8, 8, 4), (32, 128, 32, 2, 8, 4),
                 (128, 256, 128, 1, 8, 4)]
SMOKE_PROBLEMS = [(1, 4096, 4096), (333, 896, 4864)]


def smoke():
    """A few configs on a few problems, synchronously, in this process: exit 1 unless each config
    the data would call valid compiles, checks and times."""
    import torch
    if not torch.cuda.is_available():
        raise SystemExit("gemm_splitk.py: no CUDA GPU visible to torch")
    bad = 0
    for m, n, k in SMOKE_PROBLEMS:
        for d in DTYPES:
            bench = SplitKBench(Problem(m, n, k, d), seed=1)
            for cfg in SMOKE_CONFIGS:
                t0 = time.time()
                st, t, detail = bench.measure(cfg, BATCH, REPEATS)
                log(f"smoke m={m} n={n} k={k} {d} {params_text(cfg)}: {st} {t if t is None else round(t, 3)} us "
                    f"({time.time() - t0:.1f} s; {detail[:160]})")
                if st not in ("ok", "out_of_resources"):
                    bad += 1
    log(f"smoke: {bad} unexpected failures")
    return 1 if bad else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    harness.add_run_arguments(ap, os.path.join(HERE, "gemm_shapes.csv"), DTYPES)
    ap.add_argument("--done-file", help="append the 'index:DTYPE' pairs this call timed to FILE (for --skip-done)")
    ap.add_argument("--smoke", action="store_true", help="measure a few configs on a few problems and exit")
    ap.add_argument("--stats", metavar="DB", help="print the summary statistics of a merged timing DB and exit")
    harness.add_space_arguments(ap)
    args = ap.parse_args(argv)
    if harness.run_space_arguments(args, PARAMS, DOMAINS, PUBLIC_AUTOTUNE_SOURCE, PUBLIC_AUTOTUNE_CONFIGS):
        return 0
    if args.smoke:
        return smoke()
    if args.stats:
        return stats(args.stats)
    harness.check_run_arguments(ap, args)
    return run(args)


if __name__ == "__main__":
    harness.exit_script(main())
