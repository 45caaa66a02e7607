#!/usr/bin/python3
"""Run a plan of tools/train.py runs in parallel (one GPU holds many small models).

A plan is a text file; each non-empty, non-# line is `NAME: train.py arguments`. Every run writes
to OUT/NAME/ (its log in OUT/NAME/train.log); `{data}` in a line is replaced by --data.
Example (device machine):
  python3 research/sweep.py research/sweeps/which_architecture_learns_each_kernel.txt --data .device/data --out $OUT --jobs 16 --device cuda
"""
import argparse
import os
import shlex
import subprocess
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("plan")
    ap.add_argument("--data", default=".device/data")
    ap.add_argument("--out", required=True)
    ap.add_argument("--jobs", type=int, default=8)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--seed", type=int, default=0, help="passed to every run whose line sets no --seed")
    ap.add_argument("--only", nargs="*", help="run only these names")
    args = ap.parse_args()
    if args.jobs < 1:
        ap.error("--jobs must be at least 1")
    try:
        with open(args.plan) as f:
            lines = f.read().splitlines()
    except OSError as e:
        sys.exit(f"sweep.py: cannot read {args.plan}: {e.strerror}")
    runs, names = [], set()
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, colon, rest = line.partition(":")
        name = name.strip()
        if not colon or not name or any(c.isspace() or c == "/" for c in name):
            sys.exit(f"sweep.py: {args.plan}:{number}: expected `NAME: train.py arguments` (NAME without spaces or /)")
        if name in names:
            sys.exit(f"sweep.py: {args.plan}:{number}: run {name} is named twice")
        names.add(name)
        if not args.only or name in args.only:
            runs.append((name, rest.replace("{data}", args.data)))
    unknown = sorted(set(args.only or ()) - names)
    if unknown:
        sys.exit(f"sweep.py: --only names no run of {args.plan}: {', '.join(unknown)}")
    train_py = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools", "train.py")
    pending, live, failed, t0 = list(runs), [], [], time.time()
    while pending or live:
        while pending and len(live) < args.jobs:
            name, rest = pending.pop(0)
            out = os.path.join(args.out, name)
            os.makedirs(out, exist_ok=True)
            cmd = [sys.executable, train_py] + shlex.split(rest) + [
                "--out", out, "--device", args.device, "--threads", "1", "--name", name]
            if "--seed" not in rest.split():
                cmd += ["--seed", str(args.seed)]
            log = open(os.path.join(out, "train.log"), "w")
            live.append((name, subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT), log))
            print(f"[sweep] started {name}: {' '.join(cmd[2:])}", flush=True)
        time.sleep(2)
        for item in list(live):
            name, p, log = item
            if p.poll() is not None:
                log.close()
                live.remove(item)
                print(f"[sweep] {name} exited {p.returncode} at {time.time() - t0:.0f}s", flush=True)
                if p.returncode != 0:
                    failed.append(name)
    print(f"[sweep] all done in {time.time() - t0:.0f}s")
    if failed:  # the sweep is only as good as its runs: a script waiting on it must see this
        sys.exit(f"[sweep] {len(failed)} of {len(runs)} runs failed (see OUT/NAME/train.log): {', '.join(failed)}")


if __name__ == "__main__":
    main()
