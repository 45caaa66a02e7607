#!/usr/bin/env python3
"""Line-protocol benchmark server for `tunecast tune --bench-cmd CMD` (TritonGemm1x1).

tunecast starts this once (through the shell) and writes one candidate per line on its stdin:
the tuning parameters as comma-separated integers in the order
    block_m,block_n,block_k,group_m,num_warps,num_stages        e.g. 128,64,32,8,4,3
For each line it answers exactly one line on stdout, flushed at once: the kernel's time in
microseconds as a decimal number (e.g. 12.3456), or `fail` (compile failure, out of shared
memory or other resources, wrong result, launch failure, or an unparsable line). It exits 0 at
end of input. Everything else (progress, reasons for `fail`) goes to stderr.

The problem: --problem "dir=F,dtype=FP16,n=..,c=..,k=..,h=..,w=..,y=1,x=1" (tunecast's problem
syntax, comma-separated key=value), or else the environment variable TUNECAST_PROBLEM. Only
forward 1x1 convolutions with stride 1, pad 0, dilation 1, group 1, FP16 or FP32 (TF32 dot).

Each candidate is measured as the exhaustive run (triton_gemm1x1.py) measures it, with the same
code (the shared harness.py's Bench): compile (Triton's on-disk cache makes repeats cheap), check against an fp32 reference on a
NaN-poisoned output, then the median over 5 timed replays of a CUDA graph of 10 launches.
Every request is measured afresh (no result cache), so repeated requests give repeated samples.
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import triton_gemm1x1 as tg  # noqa: E402  (no torch/triton import at module level)


def log(msg):
    print(f"bench_server: {msg}", file=sys.stderr, flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--problem", help="the problem (tunecast syntax); default: $TUNECAST_PROBLEM")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    ap.add_argument("--batch", type=int, default=tg.BATCH, help=f"launches per timed graph (default {tg.BATCH})")
    ap.add_argument("--repeats", type=int, default=tg.REPEATS, help=f"timed replays, median kept (default {tg.REPEATS})")
    ap.add_argument("--check-problem", action="store_true",
                    help="parse the problem, print it and exit (no GPU needed)")
    args = ap.parse_args(argv)
    text = args.problem if args.problem is not None else os.environ.get("TUNECAST_PROBLEM")
    if not text:
        ap.error("no problem: pass --problem or set TUNECAST_PROBLEM")
    try:
        problem = tg.parse_problem(text)
    except ValueError as e:
        ap.error(f"bad problem: {e}")
    if args.batch < 1 or args.repeats < 1:
        ap.error("--batch and --repeats must be positive")
    log(f"problem {problem} (GEMM M={problem.M} N={problem.N} K={problem.K})")
    if args.check_problem:
        print(problem)
        return 0

    import torch
    if not torch.cuda.is_available():
        log("no CUDA GPU visible to torch")
        return 2
    t0 = time.time()
    bench = tg.Bench(problem, seed=args.seed)
    log(f"inputs ready in {time.time() - t0:.1f} s on {torch.cuda.get_device_name(0)}; reading candidates")
    n = 0
    for line in sys.stdin:
        if not line.strip():
            continue  # blank lines carry no candidate and get no answer
        n += 1
        answer = "fail"
        try:
            cfg = tg.parse_params(line)
        except ValueError as e:
            log(f"#{n} {line.strip()!r}: fail: {e}")
        else:
            t1 = time.time()
            try:
                status, t_us, detail = bench.measure(cfg, args.batch, args.repeats)
            except tg.FatalCudaError as e:
                log(f"#{n} {tg.params_text(cfg)}: CUDA context lost ({e}); answering fail and exiting")
                print("fail", flush=True)
                return 3
            except Exception as e:  # noqa: BLE001 - a candidate that throws is a failed candidate
                status, t_us, detail = "launch_fail", None, tg._short(e)
            if status == "ok":
                answer = f"{t_us:.4f}"
            log(f"#{n} {tg.params_text(cfg)}: {status} {answer if status == 'ok' else ''} "
                f"({time.time() - t1:.2f} s; {detail})")
        sys.stdout.write(answer + "\n")
        sys.stdout.flush()
    log(f"end of input after {n} candidates")
    return 0


if __name__ == "__main__":
    sys.exit(main())
