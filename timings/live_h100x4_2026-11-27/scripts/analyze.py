#!/usr/bin/python3
"""Analysis of the live runs (timings/live_h100x4_2026-11-27/README.md): part A (fleet scaling, speeds vs the exhaustive
timing DB, kill test) and part B (live vs replay twin of the model-free tuning of train problems).
   /usr/bin/python3 out/live/analyze.py  -> out/live/analysis.json and printed tables"""
import json, math, os, sqlite3, subprocess, collections
R = "out/live"
EX = "out/timing/h100_132.db"
T = "build/codegen/tunecast"
ex = sqlite3.connect(EX)

def exid(p):
    r = ex.execute("select id from config where data_type=? and batchsize=? and in_channels=? and out_channels=? "
                   "and in_h=? and in_w=?", (p["dtype"], p["n"], p["c"], p["k"], p["h"], p["w"])).fetchone()
    return r[0] if r else None

def rec_times(cid):
    return {pp: t for pp, t, s in ex.execute("select params,time_us,status from timings where config=?", (cid,)) if s == "ok"}

def fields(text):
    d = dict(kv.split("=") for kv in text.split(","))
    return {"dtype": d["dtype"], **{k: int(d[k]) for k in "nckhw"}}

def gm(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None

def run_stats(db, jsonl, log, workers, wall):
    con = sqlite3.connect(db)
    rows = con.execute("select p.problem, t.best, t.time_us from tuned t join problems p on p.id=t.problem").fetchall()
    speeds, drift, per = [], [], []
    for text, best, live_t in rows:
        cid = exid(fields(text)); rt = rec_times(cid)
        opt = min(rt.values()); sp = opt / rt[best]
        speeds.append(sp); drift.append(live_t / rt[best])
        per.append({"problem": text.split(",d=")[0], "best": best, "live_us": live_t, "recorded_us_of_best": rt[best],
                    "recorded_optimum_us": opt, "speed": round(sp, 4)})
    try:
        s = float(open(log).readline().split()[0])
        ts = [float(l.split("\t")[0]) - s for l in open(jsonl)]
        steady = (ts[-1] - ts[0]) / (len(ts) - 1)
    except ValueError:
        ts, steady = [float("nan")], float("nan")
    n = len(rows)
    good = sum(x >= 0.98 for x in speeds)
    return {"db": db, "workers": workers, "problems": n, "wall_s": wall, "first_problem_s": round(ts[0], 2),
            "steady_s_per_problem": round(steady, 4),
            "problems_per_hour": round(n / wall * 3600, 1), "problems_per_gpu_hour": round(n / wall * 3600 / workers, 1),
            "ge098_per_gpu_hour": round(good / wall * 3600 / workers, 1), "n_ge098": good,
            "speed_geomean": round(gm(speeds), 4), "speed_min": round(min(speeds), 4),
            "live_over_recorded_time_of_found_geomean": round(gm(drift), 4),
            "live_over_recorded_min_max": [round(min(drift), 3), round(max(drift), 3)], "per_problem": per}

def walls(path):
    out = {}
    for l in open(path):
        if " workers=" in l or l.startswith("partb"):
            name = l.split()[0]
            out[name] = float(l.split("wall=")[1].split()[0])
    return out

res = {"part_a": {}, "part_b": {}}
W2 = walls(f"{R}/res2/live/walls.txt"); W3 = walls(f"{R}/res3/live3/walls.txt")
for name, d, w in (("w1_p2", "res2/live", 1), ("w2_p2", "res2/live", 2), ("w4_p2", "res2/live", 4), ("w2_p1", "res2/live", 2),
                   ("w1_p2_96", "res3/live3", 1), ("w2_p2_96", "res3/live3", 2), ("w4_p2_96", "res3/live3", 4)):
    W = W3 if name.endswith("96") else W2
    res["part_a"][name] = run_stats(f"{R}/{d}/{name}.db", f"{R}/{d}/{name}.jsonl", f"{R}/{d}/{name}.log", w, W[name])
for suf in ("", "_96"):
    b = res["part_a"][f"w1_p2{suf}"]
    for n in (2, 4):
        r = res["part_a"][f"w{n}_p2{suf}"]
        r["efficiency_wall"] = round(b["wall_s"] / (n * r["wall_s"]), 3)
        r["efficiency_steady"] = round(b["steady_s_per_problem"] / (n * r["steady_s_per_problem"]), 3)
        r["efficiency_ge098"] = round(r["ge098_per_gpu_hour"] / b["ge098_per_gpu_hour"], 3)

# same configs found across runs?
def bests(name, d):
    con = sqlite3.connect(f"{R}/{d}/{name}.db")
    return dict(con.execute("select p.problem, t.best from tuned t join problems p on p.id=t.problem"))
b1 = bests("w1_p2", "res2/live")
res["part_a"]["same_best_as_w1"] = {n: sum(b1[k] == v for k, v in bests(n, "res2/live").items())
                                    for n in ("w2_p2", "w4_p2", "w2_p1", "kt")}
b96 = bests("w1_p2_96", "res3/live3")
res["part_a"]["same_best_as_w1_96"] = {n: sum(b96[k] == v for k, v in bests(n, "res3/live3").items()) for n in ("w2_p2_96", "w4_p2_96")}

# replay twin of part A (the model, budget 20, each problem alone, --replay the exhaustive DB)
def replay_one(spec, text, extra):
    out = subprocess.run([T, "tune", spec, "--problem", text, "--budget", "20", "--replay", EX, "--json", "--quiet"] + extra,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)
rp = []
for text in [l.strip() for l in open(f"{R}/p96_test.txt") if l.strip() and not l.startswith("#")]:
    j = replay_one("build/weights/TritonGemm1x1.tcm", text, [])
    rp.append((text, ",".join(map(str, j["best"])), j["speed"]))
live96 = {k.split(",d=")[0]: v for k, v in b96.items()}
res["part_a"]["replay_twin_96"] = {"speed_geomean": round(gm([s for _, _, s in rp]), 4),
                                   "speed_geomean_first24": round(gm([s for _, _, s in rp[:24]]), 4),
                                   "n_ge098": sum(s >= 0.98 for _, _, s in rp), "n_ge098_first24": sum(s >= 0.98 for _, _, s in rp[:24]),
                                   "same_best_as_live_w1_96": sum(live96.get(t.replace(",arch=h100", "") , None) == b for t, b, _ in rp)}

# kill test
con = sqlite3.connect(f"{R}/res2/live/kt.db")
rows = con.execute("select count(*) from timings").fetchone()[0]
distinct = con.execute("select count(*) from (select distinct problem, params from timings)").fetchone()[0]
res["part_a"]["kill_test"] = {
    "tuned": con.execute("select count(*) from tuned").fetchone()[0],
    "timings_rows": rows, "distinct_problem_params": distinct,
    "status": dict(con.execute("select status, count(*) from timings group by 1").fetchall()),
    "perf_db_rows": con.execute("select count(*) from perf_db").fetchone()[0],
    "events": open(f"{R}/res2/live/kt.events").read().strip().splitlines(),
    "run2_summary": open(f"{R}/res2/live/kt.run2.log").read().strip().splitlines()[-1],
    "run2_done_before": sum('"done_before":true' in l for l in open(f"{R}/res2/live/kt.run2.jsonl")),
    "run2_lines": sum(1 for _ in open(f"{R}/res2/live/kt.run2.jsonl")),
    "before_rerun": open(f"{R}/res2/live/kt.before_rerun.txt").read().strip().splitlines()}
kt_speeds = [p for p in run_stats(f"{R}/res2/live/kt.db", f"{R}/res2/live/kt.run2.jsonl", f"{R}/res2/live/kt.run2.log", 2, 1)["per_problem"]]
res["part_a"]["kill_test"]["speed_geomean"] = round(gm([p["speed"] for p in kt_speeds]), 4)
json.dump(res, open(f"{R}/analysis_a.json", "w"), indent=1)
for k, v in res["part_a"].items():
    if isinstance(v, dict) and "per_problem" in v:
        print(k, {a: b for a, b in v.items() if a != "per_problem"})
    else:
        print(k, v)
