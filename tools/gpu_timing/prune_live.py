#!/usr/bin/env python3
"""@triton.autotune live, with and without the tunecast prune hook (docs/triton.md; issue 32 item 7).

For a few held-out problems per kernel (the test split of the trainer, seed 0, spread from the
smallest to the largest M*N*K; TritonGemmSplitK's among its 331 timed shapes), the real kernel
(gemm1x1_kernel.py, gemm_splitk_kernel.py) runs under @triton.autotune twice, each in its own
process with a fresh TRITON_CACHE_DIR (nothing compiled before: a user's first call):
  full  the whole list benchmarked (--list public: the list users copy, weights/<kernel>/
        public_configs.txt; --list space: every config of the space);
  hook  the same list with tunecast_triton.prune_configs_by(..., keep=--keep).
Recorded per run: the wall time of the first (autotuning) call, the time spent in the prune hook,
the configs Triton benchmarked, the config it chose and that config's kernel time re-timed the
harness's way (the kernel's Bench.measure: a CUDA graph of 10 launches, median of 5 replays, as the
recorded timings), so both variants' choices compare with each other and with timings/.
Split-K's reduction kernel (split_k > 1) runs in the autotuner's post_hook, inside its timed call,
so Triton times the whole operation as the harness does; its three reduction kernels are compiled
before the timed call in both variants (the harness's bench does it), the GEMM configs are not.

Writes --out/prune_live.json (atomically, after each problem); stops before a problem that would
end past --max-seconds (the longest problem so far x 1.5), and a run past it is killed and
recorded as a timeout. --dry-run prints the plan without torch, Triton or a GPU. On the device:
  cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release -DTUNECAST_BUILD_BENCH=OFF
  cmake --build build-dev -j16 --target tunecast tunecast_weights
  python3 tools/gpu_timing/prune_live.py --tunecast build-dev/codegen/tunecast --weights build-dev/weights --out /tmp/prune_live
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
for p in (HERE, os.path.join(REPO, "tools")):
    if p not in sys.path:
        sys.path.insert(0, p)

import tunecast_triton  # noqa: E402

SPLITK_TIMED_SHAPES = 331  # gemm_shapes.csv's shapes 0-330 are in timings/TritonGemmSplitK_h100/ (its card)
# Each kernel: its harness module, the Triton names of the model's parameters, the autotune key.
KERNELS = {
    "TritonGemm1x1": {"module": "triton_gemm1x1", "shapes": "shapes.csv",
                      "params": {"block_m": "BLOCK_M", "block_n": "BLOCK_N", "block_k": "BLOCK_K", "group_m": "GROUP_M",
                                 "num_warps": "num_warps", "num_stages": "num_stages"}},
    "TritonGemmSplitK": {"module": "gemm_splitk", "shapes": "gemm_shapes.csv",
                         "params": {"block_m": "BLOCK_M", "block_n": "BLOCK_N", "block_k": "BLOCK_K",
                                    "split_k": "SPLIT_K", "num_warps": "num_warps", "num_stages": "num_stages"}},
}
RESERVE_S = 20.0   # kept free at the end for writing the output


def heldout(kernel, split="test"):
    """[(problem text, M*N*K)] of the split, both precisions, as the trainer splits them."""
    from tunecast_train.data import descriptor_text, split_of
    out = []
    if kernel == "TritonGemm1x1":
        import shapes
        import triton_gemm1x1 as mod
        for shape in shapes.read_shapes(os.path.join(HERE, "shapes.csv")):
            for dtype in mod.DTYPES:
                if split_of(descriptor_text(shapes.problem_row(shape, dtype))) == split:
                    p = mod.Problem(*shape, dtype)
                    out.append((str(p), p.M * p.N * p.K))
    else:
        import gemm_shapes
        import gemm_splitk as mod
        for m, n, k in gemm_shapes.read_shapes(os.path.join(HERE, "gemm_shapes.csv"))[:SPLITK_TIMED_SHAPES]:
            for dtype in mod.DTYPES:
                text = str(mod.Problem(m, n, k, dtype))
                if split_of(",".join(i for i in text.split(",") if not i.startswith("arch="))) == split:
                    out.append((text, m * n * k))
    return out


def pick(problems, count):
    """count problems spread over the range of sizes (the middle of each of count equal slices)."""
    ordered = sorted(problems, key=lambda p: (p[1], p[0]))
    return [ordered[int((i + 0.5) * len(ordered) / count)][0] for i in range(min(count, len(ordered)))]


def config_list(kernel, which):
    if which == "space":
        return [list(c) for c in __import__(KERNELS[kernel]["module"]).config_space()]
    with open(os.path.join(REPO, "weights", kernel, "public_configs.txt")) as f:
        return [[int(x) for x in line.split(",")] for line in f if line.strip() and not line.startswith("#")]


# ----------------------------------------------------------------------------------------------
# One run (a child process: its own TRITON_CACHE_DIR, nothing compiled in it before)
# ----------------------------------------------------------------------------------------------

def run_one(job):
    import torch
    import triton
    mod = __import__(KERNELS[job["kernel"]]["module"])
    params = KERNELS[job["kernel"]]["params"]
    names = list(params)
    problem = mod.parse_problem(job["problem"])
    bench = mod.Bench(problem, seed=0) if job["kernel"] == "TritonGemm1x1" else mod.SplitKBench(problem, seed=0)

    def config(values):
        kw = {params[n]: v for n, v in zip(names, values) if params[n] not in ("num_warps", "num_stages")}
        v = dict(zip(names, values))
        return triton.Config(kw, num_warps=v["num_warps"], num_stages=v["num_stages"])
    configs = [config(v) for v in job["configs"]]
    if job["variant"] == "hook":
        if job["kernel"] == "TritonGemmSplitK":   # the problem from the call's own arguments
            dtypes = {torch.float16: "FP16", torch.bfloat16: "BF16"}
            text = lambda a: f"m={a['M']},n={a['N']},k={a['K']},dtype={dtypes[a['x_ptr'].dtype]},arch=h100"  # noqa: E731
        else:                                     # a convolution's n, h, w are not in the GEMM's arguments
            text = lambda a: job["problem"]  # noqa: E731
        prune = tunecast_triton.Pruner(job["model"], text, params, keep=job["keep"], tunecast=job["tunecast"])
    else:
        prune = lambda configs, named_args, **kw: list(configs)  # noqa: E731
    seen = {"configs": None, "prune_s": 0.0}

    def early_config_prune(configs, named_args, **kwargs):
        t0 = time.perf_counter()
        kept = prune(configs, named_args, **kwargs)
        seen["prune_s"] += time.perf_counter() - t0
        seen["configs"] = len(kept)
        return kept

    def values_of(cfg):
        return [cfg.kwargs[params[n]] if params[n] in cfg.kwargs else getattr(cfg, params[n]) for n in names]

    X, W, Y, M, N, K = bench.X, bench.W, bench.Y, bench.M, bench.N, bench.K
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    if job["kernel"] == "TritonGemm1x1":
        from gemm1x1_kernel import gemm1x1_kernel
        tuned = triton.autotune(configs, key=["M", "N", "K"],
                                prune_configs_by={"early_config_prune": early_config_prune})(gemm1x1_kernel)
        tuned[lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)](
            X, W, Y, M, N, K, IS_FP32=(problem.dtype == "FP32"))
    else:
        import gemm_splitk_kernel as gk

        def reduce(nargs, exception=None):  # split_k > 1: the reduction, inside the autotuner's timed call
            if exception is None and nargs["SPLIT_K"] > 1:
                gk.splitk_reduce_kernel[(triton.cdiv(M * N, gk.REDUCE_BLOCK),)](
                    bench.ws, Y, M * N, SPLIT_K=nargs["SPLIT_K"], BLOCK=gk.REDUCE_BLOCK, num_warps=gk.REDUCE_WARPS)
        tuned = triton.autotune(configs, key=["M", "N", "K"], post_hook=reduce,
                                prune_configs_by={"early_config_prune": early_config_prune})(gk.gemm_splitk_kernel)
        tuned[lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]), meta["SPLIT_K"])](
            X, W, Y, bench.ws, M, N, K, GROUP_M=gk.GROUP_M)
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    chosen = values_of(tuned.best_config)
    timings = getattr(tuned, "configs_timings", None) or {}
    triton_ms = timings.get(tuned.best_config)
    status, time_us, detail = bench.measure(tuple(chosen), mod.BATCH, mod.REPEATS)
    return {"autotune_wall_s": round(wall, 3), "prune_s": round(seen["prune_s"], 4),
            "benchmarked": len(timings) or seen["configs"], "chosen": ",".join(map(str, chosen)),
            "chosen_time_us": time_us, "chosen_status": status, "detail": detail,
            "triton_bench_ms": triton_ms[0] if isinstance(triton_ms, (list, tuple)) else triton_ms,
            "triton": triton.__version__, "torch": torch.__version__, "gpu": torch.cuda.get_device_name(0)}


# ----------------------------------------------------------------------------------------------
# The plan and its runs
# ----------------------------------------------------------------------------------------------

def write_json(path, obj):
    tmp = path + ".part"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
    os.replace(tmp, path)


def main(argv=None):
    t_start = time.time()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="output folder (prune_live.json, logs/)")
    ap.add_argument("--tunecast", help="the tunecast binary (default: $TUNECAST, PATH, build trees)")
    ap.add_argument("--weights", default=os.path.join(REPO, "build-dev", "weights"),
                    help="folder of the compiled models <kernel>.tcm (default build-dev/weights)")
    ap.add_argument("--kernels", default=",".join(KERNELS), help=f"comma-separated (default {','.join(KERNELS)})")
    ap.add_argument("--problems", type=int, default=3, help="held-out problems per kernel (default 3)")
    ap.add_argument("--list", choices=("public", "space"), default="public",
                    help="the autotune list: the public one users copy (default) or the whole space")
    ap.add_argument("--keep", type=int, default=4, help="the hook's keep (default 4)")
    ap.add_argument("--max-seconds", type=float, default=540.0, help="stop cleanly by then (default 540)")
    ap.add_argument("--dry-run", action="store_true", help="print the plan and exit (no torch, Triton or GPU)")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # a child's job (JSON)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(json.loads(args.one))))
        return 0
    kernels = [k.strip() for k in args.kernels.split(",") if k.strip()]
    for k in kernels:
        if k not in KERNELS:
            ap.error(f"--kernels: unknown {k!r} ({', '.join(KERNELS)})")
    if args.keep < 1 or args.problems < 1:
        ap.error("--keep and --problems must be positive")
    if not args.out and not args.dry_run:
        ap.error("--out is required")
    try:
        tunecast = tunecast_triton.find_tunecast(args.tunecast)
    except FileNotFoundError as e:
        if not args.dry_run:
            raise SystemExit(f"prune_live.py: {e}")
        tunecast = f"(not found: {e})"
    jobs = []
    for kernel in kernels:
        model = os.path.join(args.weights, f"{kernel}.tcm")
        if not os.path.isfile(model) and not args.dry_run:
            raise SystemExit(f"prune_live.py: {model}: no such file (cmake --build build-dev --target tunecast_weights)")
        configs = config_list(kernel, args.list)
        for i, text in enumerate(pick(heldout(kernel), args.problems)):
            variants = ("hook", "full") if i % 2 == 0 else ("full", "hook")  # neither always first
            jobs.append([{"kernel": kernel, "problem": text, "variant": v, "configs": configs, "keep": args.keep,
                          "model": os.path.abspath(model), "tunecast": os.path.abspath(tunecast)
                          if os.path.isfile(tunecast) else tunecast} for v in variants])
    if args.dry_run:
        print(f"tunecast: {tunecast}\nlist: {args.list}; hook keep={args.keep}; max {args.max_seconds:g} s")
        for pair in jobs:
            j = pair[0]
            print(f"{j['kernel']} {j['problem']}: {' then '.join(x['variant'] for x in pair)} "
                  f"({len(j['configs'])} configs; hook {min(args.keep, len(j['configs']))}); model {j['model']}")
        print(f"{len(jobs)} problems, {2 * len(jobs)} cold autotuning runs, each: {sys.executable} "
              f"{os.path.relpath(__file__, REPO)} --one JOB with TRITON_CACHE_DIR=<fresh>")
        return 0

    os.makedirs(os.path.join(args.out, "logs"), exist_ok=True)
    out_path = os.path.join(args.out, "prune_live.json")
    report = {"command": " ".join(sys.argv), "list": args.list, "keep": args.keep, "runs": [],
              "started": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    longest = 0.0
    for n, pair in enumerate(jobs):
        left = args.max_seconds - (time.time() - t_start) - RESERVE_S
        if left < 1.5 * longest or left <= 0:
            report["stopped"] = f"time guard before problem {n + 1} of {len(jobs)}: {left:.0f} s left"
            break
        t_problem = time.time()
        for job in pair:
            cache = tempfile.mkdtemp(prefix="prune_live_triton_")
            env = dict(os.environ, TRITON_CACHE_DIR=cache)
            env.pop("TRITON_CACHE_AUTOTUNING", None)   # no autotune results from an earlier run
            log = os.path.join(args.out, "logs", f"{n:02d}_{job['variant']}.log")
            record = {k: job[k] for k in ("kernel", "problem", "variant", "keep")}
            record["list_len"] = len(job["configs"])
            try:
                with open(log, "w") as err:
                    r = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", json.dumps(job)],
                                       stdout=subprocess.PIPE, stderr=err, text=True, env=env,
                                       timeout=max(1.0, args.max_seconds - (time.time() - t_start) - RESERVE_S))
                if r.returncode == 0:
                    record.update(json.loads(r.stdout.strip().splitlines()[-1]))
                else:
                    record["error"] = f"exit {r.returncode}; see {log}"
            except subprocess.TimeoutExpired:
                record["error"] = "timeout (--max-seconds)"
            finally:
                shutil.rmtree(cache, ignore_errors=True)
            report["runs"].append(record)
            write_json(out_path, report)
            print(json.dumps(record), flush=True)
            if record.get("error", "").startswith("timeout"):
                report["stopped"] = "time guard: a run was killed"
                break
        longest = max(longest, time.time() - t_problem)
        if "stopped" in report:
            break
    report["seconds"] = round(time.time() - t_start, 1)
    write_json(out_path, report)
    print(f"{out_path}: {len(report['runs'])} runs in {report['seconds']} s"
          + (f"; {report['stopped']}" if "stopped" in report else ""), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
