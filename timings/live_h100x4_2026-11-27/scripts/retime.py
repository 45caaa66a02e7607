#!/usr/bin/env python3
"""Re-times configs side by side, live: for each problem of PLAN (JSON [{"problem", "configs": [...]}]),
one bench_server.py (protocol 2, one per GPU, the plan split round-robin over --gpus) measures the
configs interleaved, --rounds times each; writes OUT (JSON, the same entries with "times": {config: [us, ...]})."""
import argparse, json, os, subprocess, sys, threading, time

ap = argparse.ArgumentParser()
ap.add_argument("plan"); ap.add_argument("out")
ap.add_argument("--gpus", type=int, default=1); ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--bench", default="python3 tools/gpu_timing/bench_server.py")
a = ap.parse_args()
plan = json.load(open(a.plan))
shards = [plan[g::a.gpus] for g in range(a.gpus)]

def run(g, items):
    if not items:
        return
    env = dict(os.environ, TUNECAST_PROTOCOL="2", CUDA_VISIBLE_DEVICES=str(g), TRITON_CACHE_DIR=f"/tmp/tc_rt{g}",
               TUNECAST_PROBLEM=items[0]["problem"], PYTHONUNBUFFERED="1")
    p = subprocess.Popen(a.bench, shell=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
                         stderr=open(a.out + f".gpu{g}.log", "w"))
    assert p.stdout.readline().strip() == "tunecast-protocol 2"
    for it in items:
        p.stdin.write(f"problem {it['problem']}\nprepare {' '.join(it['configs'])}\n")
        it["times"] = {c: [] for c in it["configs"]}
        for _ in range(a.rounds):
            for c in it["configs"]:
                p.stdin.write(c + "\n"); p.stdin.flush()
                ans = p.stdout.readline().strip()
                it["times"][c].append(None if ans == "fail" else float(ans))
        it["gpu"] = g
    p.stdin.close(); p.wait()

t0 = time.time()
th = [threading.Thread(target=run, args=(g, s)) for g, s in enumerate(shards)]
[t.start() for t in th]; [t.join() for t in th]
json.dump({"seconds": round(time.time() - t0, 1), "rounds": a.rounds, "items": plan}, open(a.out, "w"), indent=1)
print(f"retime: {len(plan)} problems in {time.time() - t0:.1f} s")
