#!/usr/bin/python3
"""Greedy forward selection of ensemble members on the runtime's VALIDATION split.

Every candidate ensemble is merged by tools/ensemble.py (--combine prob), compiled by
`tunecast compile` with the kernel's rules and encoding, and scored by `tunecast eval --split val
--json` (constrained beam search) on the 4 groups gfx900_56/gfx906_60 x FP32/FP16. The criterion is
the one train.py and the earlier selections used: mean over groups of perfect@1 + perfect@10.
Step s adds to the best (s-1)-member ensemble the pool member that maximizes the criterion, while the
merged model.tcir.json stays under --max-mb; ties go to the smaller file, then to pool order. Only the
validation split is read (never test).

  /usr/bin/python3 research/select_ensemble.py --solver ConvAsm1x1U --runs RUN... --work DIR \\
      [--tunecast build/codegen/tunecast] [--perfdb-dir ../shared/data/miopen/perfdb] \\
      [--max-members 8] [--max-mb 6] [--baseline weights/ConvAsm1x1U] [--start RUN_NAME...]
writes DIR/selection.json (every evaluated ensemble and its per-group val perfect@1/@10) and prints
the path. --baseline also scores an existing weights/<K>/ folder the same way (with a warning for a
refit on train + val: its val score is in-sample).
"""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time

GROUPS = [("gfx900_56", "FP32"), ("gfx900_56", "FP16"), ("gfx906_60", "FP32"), ("gfx906_60", "FP16")]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOLS = os.path.join(ROOT, "tools")  # the product's tools: ensemble.py merges the members
sys.path.insert(0, TOOLS)
from ensemble import check_model_folder  # noqa: E402


def sh(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"{os.path.basename(sys.argv[0])}: {' '.join(cmd)} failed:\n{r.stdout}\n{r.stderr}")
    return r.stdout


def file_digest(path):
    h = hashlib.sha1()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class Scorer:
    """Compiles and scores ensembles on val, caching by member set. Every group records perfect@k for
    each k of `beams` (always including 1 and 10); the score is the selection criterion, mean over
    groups of perfect@1 + perfect@10 (research/recipe_study.py reads the other k)."""

    def __init__(self, args, beams=(1, 10)):
        self.a = args
        self.beams = sorted(set(beams) | {1, 10})
        self.cache_path = os.path.join(args.work, "cache.json")
        self.cache = json.load(open(self.cache_path)) if os.path.exists(self.cache_path) else {}
        self.digests = {}

    def key(self, by_name, members):
        """Cache key of a member set: the run names and their model.tcir.json contents, so that a run
        retrained under the same name (a smoke run, a re-run sweep) is scored again."""
        for m in members:
            if m not in self.digests:
                self.digests[m] = file_digest(os.path.join(by_name[m], "model.tcir.json"))
        names = sorted(members)
        content = hashlib.sha1("".join(self.digests[m] for m in names).encode()).hexdigest()[:12]
        return "+".join(names) + "#" + content

    def cached(self, key):
        """The cache entry of `key` if it holds every k of self.beams."""
        c = self.cache.get(key)
        if c and all(str(k) in g["perfect"] for g in c["groups"].values() for k in self.beams):
            return c
        return None

    def evaluate(self, folder, key):
        """folder holds model.tcir.json + model.tce; returns (criterion, per-group, tcir bytes).
        The compiled blob goes to the work folder (run folders are left as they are)."""
        c = self.cached(key)
        if c:
            return c["score"], c["groups"], c["bytes"]
        a = self.a
        tcm = os.path.join(a.work, "m_" + hashlib.sha1(key.encode()).hexdigest()[:12] + ".tcm")
        sh([a.tunecast, "compile", os.path.join(folder, "model.tcir.json"), "--rules",
            os.path.join(ROOT, "weights", "rules", f"{a.solver}.tcr"), "--encoding",
            os.path.join(folder, "model.tce"), "-o", tcm])
        groups = {}
        for db, prec in GROUPS:
            out = sh([a.tunecast, "eval", tcm, "--perfdb", os.path.join(a.perfdb_dir, f"{db}.db"), "--solver",
                      a.solver, "--precision", prec, "--split", "val", "--beam", ",".join(map(str, self.beams)),
                      "--no-baselines", "--json"])
            j = json.loads(out)
            groups[f"{db}_{prec}"] = {"n": j["n"], "p1": j["perfect"]["1"], "p10": j["perfect"]["10"],
                                      "perfect": j["perfect"], "invalid_rate": j["invalid_rate"]}
        score = sum(g["p1"] + g["p10"] for g in groups.values()) / len(groups)
        size = os.path.getsize(os.path.join(folder, "model.tcir.json"))
        self.cache[key] = {"score": score, "groups": groups, "bytes": size}
        with open(self.cache_path, "w") as fh:
            json.dump(self.cache, fh, indent=1)
        os.remove(tcm)
        return score, groups, size


def score_members(sc, by_name, members):
    """Merges the runs named `members` (tools/ensemble.py, --combine prob) and scores them with `sc`;
    returns (criterion, per-group, tcir bytes). A single member is scored as it is."""
    key = sc.key(by_name, members)
    if len(members) == 1:
        folder = by_name[members[0]]
    else:
        folder = os.path.join(sc.a.work, "ens_" + hashlib.sha1(key.encode()).hexdigest()[:12])
        if not sc.cached(key):
            sh([sys.executable, os.path.join(TOOLS, "ensemble.py")] + [by_name[m] for m in members] +
               ["--out", folder])
    s, g, b = sc.evaluate(folder, key)
    if len(members) > 1 and os.path.isdir(folder):  # rebuilt on demand; keep the disk small
        shutil.rmtree(folder)
    return s, g, b


def check_args(args, run_files=("model.tcir.json", "model.tce")):
    """Every input checked before the work folder is created, so a bad call leaves nothing behind
    (shared with research/recipe_study.py, whose runs must also hold metrics.json)."""
    tool = os.path.splitext(os.path.basename(sys.argv[0]))[0]
    rules = os.path.join(ROOT, "weights", "rules", f"{args.solver}.tcr")
    if not os.path.isfile(rules):
        kernels = sorted(f[:-4] for f in os.listdir(os.path.dirname(rules)) if f.endswith(".tcr"))
        sys.exit(f"{tool}: --solver {args.solver}: no {os.path.relpath(rules, ROOT)} "
                 f"(kernels: {', '.join(kernels)})")
    if not os.access(args.tunecast, os.X_OK) or os.path.isdir(args.tunecast):
        sys.exit(f"{tool}: --tunecast {args.tunecast}: not an executable (build it: cmake --build build)")
    for db in sorted({db for db, _ in GROUPS}):
        if not os.path.isfile(os.path.join(args.perfdb_dir, f"{db}.db")):
            sys.exit(f"{tool}: {os.path.join(args.perfdb_dir, db + '.db')} not found (--perfdb-dir)")
    for run in args.runs:
        check_model_folder(run, files=run_files)
    if getattr(args, "baseline", None):
        check_model_folder(args.baseline, "--baseline folder", "a weights/<kernel> folder?")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--solver", required=True)
    ap.add_argument("--runs", nargs="+", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--tunecast", default=os.path.join(ROOT, "build", "codegen", "tunecast"))
    ap.add_argument("--perfdb-dir", default=os.path.join(ROOT, "..", "shared", "data", "miopen", "perfdb"))
    ap.add_argument("--max-members", type=int, default=8)
    ap.add_argument("--max-mb", type=float, default=6.0, help="limit on the merged model.tcir.json (1e6 bytes)")
    ap.add_argument("--baseline", help="a weights/<K> folder to score the same way")
    ap.add_argument("--start", nargs="*", default=[], help="run names the greedy search starts from")
    args = ap.parse_args()
    check_args(args)
    names = [os.path.basename(os.path.normpath(r)) for r in args.runs]
    if len(set(names)) != len(names):
        sys.exit("select_ensemble: run folder names must be unique")
    unknown = [n for n in args.start if n not in names]
    if unknown:
        sys.exit(f"select_ensemble: --start {' '.join(unknown)}: not among the --runs folder names")
    os.makedirs(args.work, exist_ok=True)
    sc = Scorer(args)
    by_name = dict(zip(names, args.runs))
    member_bytes = {n: os.path.getsize(os.path.join(r, "model.tcir.json")) for n, r in by_name.items()}
    result = {"solver": args.solver, "criterion": "mean over 4 groups of val perfect@1 + perfect@10 (runtime)",
              "pool": names, "evaluated": [], "path": []}
    t0 = time.time()

    def score_set(members):
        s, g, b = score_members(sc, by_name, members)
        result["evaluated"].append({"members": members, "score": s, "bytes": b, "groups": g})
        return s, g, b

    if args.baseline:
        metrics = os.path.join(args.baseline, "metrics.json")
        fit_on = json.load(open(metrics)).get("fit_on", "train") if os.path.exists(metrics) else "train"
        if fit_on != "train":  # train+val or all: the model learned the val problems
            print(f"[select] warning: {args.baseline} was refit on {fit_on}, so its val score below is "
                  "in-sample; compare with its train-only members instead (--start NAME ...)", flush=True)
        s, g, b = sc.evaluate(args.baseline, "baseline:" + os.path.abspath(args.baseline) + "#" +
                              file_digest(os.path.join(args.baseline, "model.tcir.json"))[:12])
        result["baseline"] = {"folder": args.baseline, "score": s, "groups": g, "bytes": b}
        print(f"[select] baseline {args.baseline}: {s:.2f}", flush=True)
    current = list(args.start)
    if current:
        s, g, b = score_set(current)
        result["path"].append({"members": list(current), "score": s, "bytes": b, "groups": g})
        print(f"[select] start {','.join(current)}: {s:.2f} ({b / 1e6:.2f} MB)", flush=True)
    while len(current) < args.max_members:
        best = None
        for n in names:
            if n in current:
                continue
            est = sum(member_bytes[m] for m in current + [n])
            if est > args.max_mb * 1e6:
                continue
            s, g, b = score_set(current + [n])
            if b > args.max_mb * 1e6:
                continue
            if best is None or (s, -b) > (best[0], -best[2]):
                best = (s, n, b, g)
        if best is None:
            break
        current = current + [best[1]]
        result["path"].append({"members": list(current), "score": best[0], "bytes": best[2], "groups": best[3]})
        print(f"[select] {len(current)} members {','.join(current)}: {best[0]:.2f} ({best[2] / 1e6:.2f} MB, "
              f"{time.time() - t0:.0f}s)", flush=True)
    out = os.path.join(args.work, "selection.json")
    with open(out, "w") as fh:
        json.dump(result, fh, indent=1)
    print(out)


if __name__ == "__main__":
    main()
