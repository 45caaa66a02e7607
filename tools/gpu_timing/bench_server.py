#!/usr/bin/env python3
"""Line-protocol benchmark server for `tunecast tune --bench-cmd CMD` (TritonGemm1x1).

tunecast starts this (through the shell) and writes one candidate per line on its stdin: the
tuning parameters as comma-separated integers in the order
    block_m,block_n,block_k,group_m,num_warps,num_stages        e.g. 128,64,32,8,4,3
For each line it answers exactly one line on stdout, flushed at once: the kernel's time in
microseconds as a decimal number (e.g. 12.3456), or `fail` (compile failure, out of shared
memory or other resources, wrong result, launch failure, or an unparsable line). It exits 0 at
end of input. Everything else (progress, reasons for `fail`) goes to stderr.

Protocol 2 (docs/search.md): when tunecast offers it (TUNECAST_PROTOCOL=2 in the environment;
--protocol 1 declines), the server first writes `tunecast-protocol 2`, and then also reads
  prepare C1 C2 ...   configs the search will ask for next (no answer): compiled at once in a pool
                      of --compile-workers processes (filling Triton's on-disk cache), while the
                      candidates are checked and timed one by one in this process;
  problem TEXT        the problem of the candidates that follow (no answer): one server tunes a
                      whole problem list (`tune --problems`), keeping its compile pool.

The problem: --problem "dir=F,dtype=FP16,n=..,c=..,k=..,h=..,w=..,y=1,x=1" (tunecast's problem
syntax, comma-separated key=value), or else the environment variable TUNECAST_PROBLEM. Only
forward 1x1 convolutions with stride 1, pad 0, dilation 1, group 1, FP16 or FP32 (TF32 dot).

Each candidate is measured as the exhaustive run (triton_gemm1x1.py) measures it, with the same
code (the shared harness.py's Bench): compile (the pool's work, or Triton's on-disk cache, makes
it cheap), check against an fp32 reference on a NaN-poisoned output, then the median over 5 timed
replays of a CUDA graph of 10 launches. Every request is measured afresh (no result cache), so
repeated requests give repeated samples.
"""
import argparse
import importlib
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

GREETING = "tunecast-protocol 2"
DEFAULT_KERNEL = "triton_gemm1x1"


def log(msg):
    print(f"bench_server: {msg}", file=sys.stderr, flush=True)


def _compile_init(module):
    # The protocol's pipes belong to the server: a worker holding its stdout open would hide the
    # server's death from tunecast, and one reading its stdin would steal requests.
    os.dup2(2, 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    if module == DEFAULT_KERNEL:
        import torch  # noqa: F401  (Triton's driver asks torch for the current device and stream)
    importlib.import_module(module)


def _compile_task(module, dtype, n_val, k_val, cfg):
    """module.compile_config(dtype, N, K, cfg) in a pool worker: fills the on-disk cache; returns
    the compile info ({'status', 'msg', ...})."""
    try:
        return importlib.import_module(module).compile_config(dtype, n_val, k_val, cfg)
    except Exception as e:  # noqa: BLE001 - a compiler error is a result
        return {"status": "compile_fail", "msg": f"{type(e).__name__}: {e}"[:300]}


class Server:
    """The protocol loop, apart from the GPU: `kernel` is the kernel module (parse_problem,
    parse_params, params_text, Bench(problem, seed=...).measure(cfg, batch, repeats),
    compile_config(dtype, N, K, cfg)); tests pass a fake one."""

    def __init__(self, kernel, module_name, problem, args, protocol, compile_workers):
        self.kg = kernel
        self.module_name = module_name
        self.args = args
        self.protocol = protocol
        self.compile_workers = compile_workers
        self.problem = problem
        self.bench = None
        self.pool = None
        self.compiles = {}  # (dtype, N, K, cfg) -> future
        self.n = 0

    def _key(self, cfg):
        p = self.problem
        return (p.dtype, p.N, p.K, cfg)

    def _bench(self):
        if self.bench is None:
            t0 = time.time()
            self.bench = self.kg.Bench(self.problem, seed=self.args.seed)
            log(f"inputs of {self.problem} ready in {time.time() - t0:.1f} s")
        return self.bench

    def start_pool(self):
        """The compile workers, started now so that their imports (torch, Triton) overlap ours."""
        if self.compile_workers < 1 or self.pool is not None:
            return
        import concurrent.futures as cf
        import multiprocessing as mp
        self.pool = cf.ProcessPoolExecutor(max_workers=self.compile_workers, mp_context=mp.get_context("spawn"),
                                           initializer=_compile_init, initargs=(self.module_name,))
        for _ in range(self.compile_workers):
            self.pool.submit(os.getpid)  # starts a worker (and its initializer)

    def prepare(self, words):
        """`prepare C1 C2 ...`: compile the configs not compiled yet, in the pool."""
        if self.compile_workers < 1:
            return
        self.start_pool()
        submitted = 0
        for word in words:
            try:
                cfg = self.kg.parse_params(word)
            except ValueError as e:
                log(f"prepare: {word!r}: {e}")
                continue
            key = self._key(cfg)
            if key not in self.compiles:
                self.compiles[key] = self.pool.submit(_compile_task, self.module_name, key[0], key[1], key[2], cfg)
                submitted += 1
        log(f"prepare: {submitted} of {len(words)} configs sent to {self.compile_workers} compile workers")

    def set_problem(self, text):
        """`problem TEXT`: the candidates that follow are of this problem."""
        problem = self.kg.parse_problem(text)
        if str(problem) != str(self.problem):
            self.problem = problem
            self.bench = None  # new buffers at the next candidate
            log(f"problem {problem}")

    def measure(self, line):
        """One candidate line -> its answer ('fail' or a time)."""
        self.n += 1
        try:
            cfg = self.kg.parse_params(line)
        except ValueError as e:
            log(f"#{self.n} {line.strip()!r}: fail: {e}")
            return "fail"
        future = self.compiles.pop(self._key(cfg), None)
        if future is not None:
            try:
                info = future.result()
            except Exception as e:  # noqa: BLE001 - a broken pool: compile here instead
                info = {"status": "ok", "msg": f"compile pool: {e}"}
            if info.get("status") != "ok":
                log(f"#{self.n} {self.kg.params_text(cfg)}: {info['status']} (compiled ahead: {info.get('msg', '')})")
                return "fail"
        t1 = time.time()
        try:
            status, t_us, detail = self._bench().measure(cfg, self.args.batch, self.args.repeats)
        except Exception as e:  # noqa: BLE001 - a candidate that throws is a failed candidate
            if type(e).__name__ == "FatalCudaError":
                raise
            status, t_us, detail = "launch_fail", None, f"{type(e).__name__}: {e}"[:300]
        answer = f"{t_us:.4f}" if status == "ok" else "fail"
        log(f"#{self.n} {self.kg.params_text(cfg)}: {status} {answer if status == 'ok' else ''} "
            f"({time.time() - t1:.2f} s; {detail})")
        return answer

    def serve(self, lines, out, greet=True):
        """Reads requests from `lines`, writes answers to `out` (first the greeting, under protocol
        2, unless greet is False: written already). Returns the exit status."""
        if self.protocol == 2 and greet:
            out.write(GREETING + "\n")
            out.flush()
        try:
            for line in lines:
                text = line.strip()
                if not text:
                    continue  # blank lines carry no candidate and get no answer
                if self.protocol == 2 and text.startswith("prepare"):
                    self.prepare(text.split()[1:])
                    continue
                if self.protocol == 2 and text.startswith("problem "):
                    try:
                        self.set_problem(text[len("problem "):])
                    except ValueError as e:
                        log(f"bad problem line {text!r}: {e}; exiting")
                        return 2
                    continue
                try:
                    answer = self.measure(text)
                except Exception as e:  # noqa: BLE001 - only FatalCudaError comes here
                    log(f"#{self.n}: CUDA context lost ({e}); answering fail and exiting")
                    out.write("fail\n")
                    out.flush()
                    return 3
                out.write(answer + "\n")
                out.flush()
            log(f"end of input after {self.n} candidates")
            return 0
        finally:
            if self.pool is not None:
                self.pool.shutdown(wait=False, cancel_futures=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--problem", help="the problem (tunecast syntax); default: $TUNECAST_PROBLEM")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    ap.add_argument("--batch", type=int, default=None, help="launches per timed graph (default: the kernel's, 10)")
    ap.add_argument("--repeats", type=int, default=None, help="timed replays, median kept (default: the kernel's, 5)")
    ap.add_argument("--compile-workers", type=int, default=min(8, os.cpu_count() or 1),
                    help="processes compiling announced configs ahead (protocol 2; default min(8, CPUs); 0: none)")
    ap.add_argument("--protocol", type=int, choices=(1, 2), default=None,
                    help="1: decline protocol 2 even when offered (default: 2 when TUNECAST_PROTOCOL=2)")
    ap.add_argument("--kernel-module", default=DEFAULT_KERNEL,
                    help=f"the kernel module (default {DEFAULT_KERNEL}; tests pass a CPU stand-in)")
    ap.add_argument("--check-problem", action="store_true",
                    help="parse the problem, print it and exit (no GPU needed)")
    args = ap.parse_args(argv)
    protocol = args.protocol or (2 if os.environ.get("TUNECAST_PROTOCOL", "") == "2" else 1)
    if protocol == 2 and not args.check_problem:
        # At once, before the slow imports: tunecast learns the protocol before the first answer.
        print(GREETING, flush=True)
    kernel = importlib.import_module(args.kernel_module)  # no torch/triton import at module level
    text = args.problem if args.problem is not None else os.environ.get("TUNECAST_PROBLEM")
    if not text:
        ap.error("no problem: pass --problem or set TUNECAST_PROBLEM")
    try:
        problem = kernel.parse_problem(text)
    except ValueError as e:
        ap.error(f"bad problem: {e}")
    args.batch = args.batch if args.batch is not None else getattr(kernel, "BATCH", 10)
    args.repeats = args.repeats if args.repeats is not None else getattr(kernel, "REPEATS", 5)
    if args.batch < 1 or args.repeats < 1:
        ap.error("--batch and --repeats must be positive")
    log(f"problem {problem} (protocol {protocol})")
    if args.check_problem:
        print(problem)
        return 0

    if args.kernel_module == DEFAULT_KERNEL:
        import torch
        if not torch.cuda.is_available():
            log("no CUDA GPU visible to torch")
            return 2
        log(f"on {torch.cuda.get_device_name(0)}; reading candidates")
    server = Server(kernel, args.kernel_module, problem, args, protocol, args.compile_workers)
    if protocol == 2:
        server.start_pool()
    return server.serve(sys.stdin, sys.stdout, greet=False)  # greeted above


if __name__ == "__main__":
    sys.exit(main())
