"""CPU stand-in for triton_gemm1x1 in bench_server.py (local dry runs of out/live/*.sh): answers
each config with its recorded time in the exhaustive timing DB ($REPLAY_DB), after short sleeps
that stand for compiling ($FAKE_COMPILE_S) and timing ($FAKE_MEASURE_S)."""
import os
import sqlite3
import time

import triton_gemm1x1 as tg

parse_problem, parse_params, params_text = tg.parse_problem, tg.parse_params, tg.params_text
BATCH, REPEATS = 10, 5
DB = os.environ.get("REPLAY_DB", "out/timing/h100_132.db")


def compile_config(dtype, n_val, k_val, cfg, args=None):
    time.sleep(float(os.environ.get("FAKE_COMPILE_S", "0.05")))
    return {"status": "ok", "msg": ""}


class Bench:
    def __init__(self, problem, seed=0):
        p = problem
        con = sqlite3.connect(DB)
        cid = con.execute("select id from config where data_type=? and batchsize=? and in_channels=? and "
                          "out_channels=? and in_h=? and in_w=?", (p.dtype, p.n, p.c, p.k, p.h, p.w)).fetchone()
        if cid is None:
            raise ValueError(f"{p} not in {DB}")
        self.t = {r[0]: (r[1], r[2]) for r in con.execute(
            "select params, time_us, status from timings where config=?", (cid[0],))}

    def measure(self, cfg, batch, repeats):
        time.sleep(float(os.environ.get("FAKE_MEASURE_S", "0.02")))
        t, status = self.t.get(params_text(cfg), (None, "missing"))
        return ("ok", t, "replay") if status == "ok" else (status, None, "replay")
