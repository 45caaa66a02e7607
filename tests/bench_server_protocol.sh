#!/bin/bash
# tools/gpu_timing/bench_server.py's protocol handling without a GPU: the server runs with a CPU
# stand-in kernel module (same parse functions as triton_gemm1x1; compile = 0.3 s of sleep, logged;
# measure = a made-up time), driven by `tunecast tune --problems` over TritonGemm1x1's definition.
# Protocol 2: the server greets, compiles each announced batch in its process pool (compiles of one
# batch overlap in time, in several processes, and end before the config is measured) and serves
# both problems from one process. Protocol 1 (--protocol 1): no greeting, nothing compiled ahead,
# same answers; both write the bests as a MIOpen perf DB (--perf-db).
#   tests/bench_server_protocol.sh TUNECAST SOURCE_DIR WORK_DIR
set -eu
TUNECAST=$(readlink -f "$1")
SRC=$(readlink -f "$2")
WORK=$3
rm -rf "$WORK"
mkdir -p "$WORK"
WORK=$(readlink -f "$WORK")
cat > "$WORK/fake_gemm.py" <<'PY'
"""A CPU stand-in for triton_gemm1x1 in bench_server.py (tests/bench_server_protocol.sh)."""
import os
import time

import triton_gemm1x1 as tg  # its problem and parameter parsing (no torch at import)

parse_problem, parse_params, params_text = tg.parse_problem, tg.parse_params, tg.params_text
BATCH, REPEATS = 10, 5
LOG = os.environ["FAKE_LOG"]


def _log(text):
    with open(LOG, "a") as f:
        f.write(text + "\n")


def compile_config(dtype, n_val, k_val, cfg, args=None):
    t0 = time.time()
    time.sleep(0.3)
    _log(f"compile {os.getpid()} {t0:.4f} {time.time():.4f} {params_text(cfg)}")
    return {"status": "out_of_resources" if cfg[0] * cfg[1] >= 256 * 256 else "ok", "msg": ""}


class Bench:
    def __init__(self, problem, seed=0):
        self.problem = problem
        _log(f"bench {os.getpid()} {problem}")

    def measure(self, cfg, batch, repeats):
        _log(f"measure {os.getpid()} {time.time():.4f} {params_text(cfg)}")
        bm, bn, bk, gm, nw, ns = cfg
        return "ok", 5.0 + abs(bm - 128) / 64 + abs(bn - 64) / 32 + bk / 64 + nw / 8 + ns / 10, "fake"
PY
printf 'dir=F,dtype=FP16,layout=NHWC,n=16,c=256,k=512,h=14,w=14,y=1,x=1\ndir=F,dtype=FP16,layout=NHWC,n=8,c=512,k=256,h=28,w=28,y=1,x=1\n' > "$WORK/problems.txt"
export PYTHONPATH="$WORK:$SRC/tools/gpu_timing"
run() {  # run NAME EXTRA_SERVER_ARGS
  FAKE_LOG="$WORK/$1.log" "$TUNECAST" tune "$SRC/weights/rules/TritonGemm1x1.tcr" --problems "$WORK/problems.txt" \
      --budget 10 --seed 2 --record "$WORK/$1.db" -o "$WORK/$1.tsv" --perf-db "$WORK/$1.perf.db" --quiet \
      --bench-cmd "python3 $SRC/tools/gpu_timing/bench_server.py --kernel-module fake_gemm --compile-workers 3 $2" \
      2> "$WORK/$1.err" || { cat "$WORK/$1.err"; echo "bench_server_protocol: FAILED: tune ($1)"; exit 1; }
}
run v2 ""
run v1 "--protocol 1"
python3 - "$WORK" <<'PY'
import sys
work = sys.argv[1]
def fail(msg):
    print(f"bench_server_protocol: FAILED: {msg}")
    sys.exit(1)
def entries(name, kind):
    return [l.split() for l in open(f"{work}/{name}.log") if l.startswith(kind + " ")]
v2c, v2m, v1c = entries("v2", "compile"), entries("v2", "measure"), entries("v1", "compile")
if v1c:
    fail(f"protocol 1 compiled ahead: {v1c[:2]}")
if len({m[1] for m in v2m}) != 1:
    fail("protocol 2: the two problems were not served by one process")
if len(entries("v2", "bench")) != 2:
    fail("protocol 2: expected one Bench per problem")
if len(v2c) < 4:
    fail(f"protocol 2: {len(v2c)} configs compiled ahead, expected the explore batches (3 a problem; the first process learns protocol 2 at its first answer, so 2 of its first batch)")
if len({c[1] for c in v2c}) < 2:
    fail("protocol 2: every compile ran in one process")
first = sorted(v2c, key=lambda c: float(c[2]))
if not any(float(b[2]) < float(a[3]) for a, b in zip(first, first[1:])):
    fail("protocol 2: no two compiles overlapped in time")
compiled_at = {}
for c in v2c:
    compiled_at.setdefault(c[4], float(c[3]))
ahead = [m for m in v2m if m[3] in compiled_at and compiled_at[m[3]] <= float(m[2])]
if len(ahead) < 3:
    fail(f"protocol 2: only {len(ahead)} measurements found their config compiled ahead")
v1 = open(f"{work}/v1.tsv").read().replace("\t", " ")
v2 = open(f"{work}/v2.tsv").read().replace("\t", " ")
if v1.split("\n")[1:] != v2.split("\n")[1:] and sorted(v1.split("\n")) != sorted(v2.split("\n")):
    fail(f"the two protocols found different results:\n{v1}\n{v2}")
import sqlite3
rows = sqlite3.connect(f"{work}/v2.perf.db").execute("SELECT solver, params FROM perf_db").fetchall()
if len(rows) != 2 or rows[0][0] != "TritonGemm1x1":
    fail(f"--perf-db: expected 2 TritonGemm1x1 rows, got {rows}")
print(f"bench_server_protocol: protocol 2: {len(v2c)} configs compiled ahead in {len({c[1] for c in v2c})} processes, "
      f"{len(ahead)} measured after their compile, one server for both problems; protocol 1: same results")
PY
cat "$WORK/v2.tsv"
