#!/usr/bin/python3
"""Part B, optional: a predictor trained on what the live tuning measured (live.db) and one on what its
replay twin measured (replay.db), each with the recipe of research/how_much_must_we_measure_before_the_predictor_pays.py
(tools/train.py, mlp 128/64/16, --near-optimal 0.03, --fit-on train+val, 40 epochs, seed 0, FP16), scored
on the test split by replay (tunecast eval-search --split test --precision FP16). Writes out/live/tiny_models.json."""
import json, os, sys, time, types
sys.path.insert(0, "research")
import how_much_must_we_measure_before_the_predictor_pays as S
args = types.SimpleNamespace(tunecast="build/codegen/tunecast", timings="out/timing/h100_132.db", kernel="weights/rules/TritonGemm1x1.tcr",
                             epochs=40, seed=0, device="cpu", threads=1, miopen=True, miopen_db_name="h100_132.db", precisions=["FP16"])
out = {}
for name, rec in (("live", "out/live/res2/live/live.db"), ("replay", "out/live/replay.db")):
    d = f"out/live/models/{name}"
    os.makedirs("out/live/models", exist_ok=True)
    t0 = time.time()
    S.train(args, rec, d)
    tcm = S.compile_model(args, d)
    ev = S.eval_search(args, tcm, "predictor_search", f"out/live/models/eval_{name}.json")
    out[name] = {"record": rec, "rows": S.measurement_rows(rec), "seconds": round(time.time() - t0, 1), "test": S.summary(ev, "predictor_search")}
    print(name, json.dumps(out[name]), flush=True)
json.dump(out, open("out/live/tiny_models.json", "w"), indent=1)
