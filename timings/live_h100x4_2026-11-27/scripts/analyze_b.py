#!/usr/bin/python3
"""Part B: the live model-free tuning of 8 train problems (out/live/res2/live/live.db) against its replay
twin (same definition, problems, budget 20, seed 0; --replay the exhaustive DB, recorded into
out/live/replay.db). Writes out/live/analysis_b.json."""
import json, math, os, sqlite3, subprocess
R = "out/live"; EX = "out/timing/h100_132.db"; T = "build/codegen/tunecast"
ex = sqlite3.connect(EX)
live = sqlite3.connect(f"{R}/res2/live/live.db")
if os.path.exists(f"{R}/replay.db"):
    os.remove(f"{R}/replay.db")
probs = [l.strip() for l in open(f"{R}/train8.txt") if l.strip() and not l.startswith("#")]
out = []
for text in probs:
    j = json.loads(subprocess.run([T, "tune", "weights/rules/TritonGemm1x1.tcr", "--problem", text, "--budget", "20", "--seed", "0",
                                   "--replay", EX, "--record", f"{R}/replay.db", "--json", "--quiet"],
                                  capture_output=True, text=True, check=True).stdout)
    rseq = [",".join(map(str, h["values"])) for h in j["history"]]
    d = dict(kv.split("=") for kv in text.split(","))
    pid = live.execute("select id from problems where n=? and c=? and k=? and h=? and w=? and dtype=?",
                       (d["n"], d["c"], d["k"], d["h"], d["w"], d["dtype"])).fetchone()[0]
    lrows = live.execute("select params, time_us, status from timings where problem=? order by rowid", (pid,)).fetchall()
    lseq = [p for p, _, _ in lrows]
    lbest = live.execute("select best, time_us from tuned where problem=?", (pid,)).fetchone()
    cid = ex.execute("select id from config where data_type=? and batchsize=? and in_channels=? and out_channels=? and in_h=? and in_w=?",
                     (d["dtype"], d["n"], d["c"], d["k"], d["h"], d["w"])).fetchone()[0]
    rec = {p: t for p, t, s in ex.execute("select params,time_us,status from timings where config=?", (cid,)) if s == "ok"}
    opt_p = min(rec, key=rec.get); opt = rec[opt_p]
    prefix = 0
    while prefix < min(len(lseq), len(rseq)) and lseq[prefix] == rseq[prefix]:
        prefix += 1
    rbest = ",".join(map(str, j["best"]))
    livet = dict((p, t) for p, t, s in lrows if s == "ok")
    out.append({"problem": text, "exhaustive_config_id": cid, "live_n": len(lseq), "replay_n": len(rseq),
                "common_prefix": prefix, "same_configs_as_set": len(set(lseq) & set(rseq)),
                "first_divergence": None if prefix == len(lseq) else {"index": prefix, "live": lseq[prefix], "replay": rseq[prefix],
                    "live_times_before": [round(livet.get(p, float('nan')), 3) for p in lseq[:prefix]][-3:]},
                "live_best": lbest[0], "live_best_live_us": lbest[1], "live_best_recorded_us": rec.get(lbest[0]),
                "replay_best": rbest, "replay_best_recorded_us": rec.get(rbest), "replay_best_live_us": livet.get(rbest),
                "recorded_optimum": opt_p, "recorded_optimum_us": opt, "recorded_optimum_live_us": livet.get(opt_p),
                "speed_live_best": round(opt / rec[lbest[0]], 4), "speed_replay_best": round(opt / rec[rbest], 4),
                "replay_json_speed": round(j["speed"], 4)})
gm = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
summ = {"problems": len(out), "identical_sequences": sum(o["common_prefix"] == o["live_n"] == o["replay_n"] for o in out),
        "mean_common_prefix": sum(o["common_prefix"] for o in out) / len(out),
        "mean_same_configs_as_set": sum(o["same_configs_as_set"] for o in out) / len(out),
        "same_best": sum(o["live_best"] == o["replay_best"] for o in out),
        "speed_live_geomean": round(gm([o["speed_live_best"] for o in out]), 4),
        "speed_replay_geomean": round(gm([o["speed_replay_best"] for o in out]), 4),
        "live_rows": live.execute("select count(*) from timings").fetchone()[0],
        "replay_rows": sqlite3.connect(f"{R}/replay.db").execute("select count(*) from timings").fetchone()[0]}
json.dump({"summary": summ, "per_problem": out}, open(f"{R}/analysis_b.json", "w"), indent=1)
print(json.dumps(summ))
for o in out:
    print(o["problem"][16:60], "prefix", o["common_prefix"], "set", o["same_configs_as_set"], "live", o["live_best"], o["speed_live_best"],
          "replay", o["replay_best"], o["speed_replay_best"], "div", o["first_divergence"])
