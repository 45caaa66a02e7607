#!/usr/bin/env bash
# tools/gpu_timing/merge.py reads merged timings files back (how the shipped parts are put
# together, and how a new device run extends them): a subset of a shipped part (--shapes-range)
# must hold exactly the shipped rows of those problems, and merging that subset again must change
# nothing, and keep the short-measurement offset the shipped file carries (merging it with another
# offset must fail, not mix two scales) (ctest timings_merge_roundtrip; needs no GPU and no data).
#   tests/timings_merge_roundtrip.sh REPO WORKDIR
set -euo pipefail
repo=$1 work=$2
mkdir -p "$work"
rm -f "$work/subset.db" "$work/again.db"
xz -dc "$repo/timings/TritonGemm1x1_h100/shapes_0000-0499.db.xz" > "$work/shipped.db"
merge="$repo/tools/gpu_timing/merge.py"
/usr/bin/python3 "$merge" "$work/shipped.db" --shapes-range 0:40 -o "$work/subset.db"
/usr/bin/python3 "$merge" "$work/subset.db" -o "$work/again.db"
if /usr/bin/python3 "$merge" "$work/subset.db" --short-offset-us 0 -o "$work/mixed.db" 2> "$work/mixed.err"; then
  echo "FAIL: merging a file that carries an offset with --short-offset-us 0 succeeded"; exit 1
fi
grep -q "another short-measurement offset" "$work/mixed.err" || { cat "$work/mixed.err"; exit 1; }
[ ! -e "$work/mixed.db" ] || { echo "FAIL: a refused merge left $work/mixed.db"; exit 1; }
/usr/bin/python3 - "$work/shipped.db" "$work/subset.db" "$work/again.db" <<'PY'
import sqlite3, sys
shipped, subset, again = (sqlite3.connect(p) for p in sys.argv[1:4])
bad = 0
ids = [r[0] for r in subset.execute("SELECT id FROM config ORDER BY id")]
marks = ",".join("?" * len(ids))
for table, key in (("config", "id"), ("perf_db", "config"), ("timings", "config"), ("timing_detail", "config")):
    rows = [sorted(db.execute(f"SELECT * FROM {table} WHERE {key} IN ({marks})", ids), key=repr)
            for db in (shipped, subset, again)]
    if table == "perf_db":  # its own row ids are renumbered
        rows = [[r[1:] for r in rs] for rs in rows]
    same = rows[0] == rows[1] == rows[2] and rows[0]
    bad += not same
    print(f"{'ok' if same else 'FAIL'}: {table}: {len(rows[0])} shipped rows of {len(ids)} problems, "
          f"{len(rows[1])} in the subset, {len(rows[2])} merged again")
offsets = [dict(db.execute("SELECT key, value FROM meta")).get("short_launch_offset_us") for db in (shipped, subset, again)]
bad += not (offsets[0] and offsets[0] == offsets[1] == offsets[2])
print(f"{'ok' if offsets[0] and offsets[0] == offsets[1] == offsets[2] else 'FAIL'}: meta short_launch_offset_us {offsets}")
kernels = [sorted(db.execute("SELECT * FROM kernels"), key=repr) for db in (shipped, subset, again)]
bad += not (kernels[0] == kernels[1] == kernels[2])
print(f"{'ok' if kernels[0] == kernels[1] == kernels[2] else 'FAIL'}: kernels ({len(kernels[0])} rows)")
sys.exit(1 if bad or not ids else 0)
PY
