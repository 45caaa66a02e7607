#!/usr/bin/python3
"""Side-by-side live re-timing (out/live/res4/retime.json, 5 interleaved rounds, median): live speed of
the configs found live and in replay, against the recorded optimum's config timed in the same server."""
import json, math, sqlite3, statistics as st
R = "out/live"
rt = json.load(open(f"{R}/res4/retime.json"))
gm = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
ex = sqlite3.connect("out/timing/h100_132.db")
res = {}
for part in ("A", "B"):
    items = [i for i in rt["items"] if i["part"] == part]
    sp_live, sp_rep, sp_live_best3, sp_rep_best3, spread = [], [], [], [], []
    rows = []
    for i in items:
        med = {c: st.median(v) for c, v in i["times"].items() if None not in v}
        for c, v in i["times"].items():
            if None not in v: spread.append((max(v) - min(v)) / st.median(v))
        o, f, r = med[i["recorded_optimum"]], med[i["live_found"]], med[i["replay_found"]]
        b = min(med.values())
        sp_live.append(o / f); sp_rep.append(o / r); sp_live_best3.append(b / f); sp_rep_best3.append(b / r)
        rows.append({"problem": i["problem"], "live_found": i["live_found"], "replay_found": i["replay_found"],
                     "recorded_optimum": i["recorded_optimum"], "median_us": {c: round(v, 4) for c, v in med.items()},
                     "live_speed_of_live_found": round(o / f, 4), "live_speed_of_replay_found": round(o / r, 4)})
    res[part] = {"problems": len(items),
                 "live_found_vs_recorded_opt_config_geomean": round(gm(sp_live), 4),
                 "live_found_ge098": sum(x >= 0.98 for x in sp_live), "live_found_min": round(min(sp_live), 4),
                 "replay_found_vs_recorded_opt_config_geomean": round(gm(sp_rep), 4),
                 "replay_found_ge098": sum(x >= 0.98 for x in sp_rep), "replay_found_min": round(min(sp_rep), 4),
                 "live_found_vs_best_of_the_timed_configs_geomean": round(gm(sp_live_best3), 4),
                 "replay_found_vs_best_of_the_timed_configs_geomean": round(gm(sp_rep_best3), 4),
                 "same_config_live_and_replay": sum(i["live_found"] == i["replay_found"] for i in items),
                 "live_found_is_recorded_opt": sum(i["live_found"] == i["recorded_optimum"] for i in items),
                 "round_spread_median": round(st.median(spread), 4), "round_spread_p90": round(sorted(spread)[int(0.9 * len(spread))], 4),
                 "per_problem": rows}
res["seconds"] = rt["seconds"]; res["rounds"] = rt["rounds"]
json.dump(res, open(f"{R}/analysis_rt.json", "w"), indent=1)
for p in ("A", "B"):
    print(p, {k: v for k, v in res[p].items() if k != "per_problem"})
w = sorted(res["A"]["per_problem"], key=lambda r: r["live_speed_of_live_found"])[:5]
for r in w: print(r)
