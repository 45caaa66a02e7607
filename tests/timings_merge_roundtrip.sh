#!/usr/bin/env bash
# tools/gpu_timing/merge.py reads a merged timings file back (how a new device run extends the
# shipped one): merging the shipped file alone must give the very same problems, times, statuses,
# details and kernels (ctest timings_merge_roundtrip; needs no GPU and no data).
#   tests/timings_merge_roundtrip.sh REPO WORKDIR
set -euo pipefail
repo=$1 work=$2
mkdir -p "$work"
xz -dc "$repo/timings/TritonGemm1x1_h100.db.xz" > "$work/shipped.db"
rm -f "$work/again.db"
/usr/bin/python3 "$repo/tools/gpu_timing/merge.py" "$repo/timings/TritonGemm1x1_h100.db.xz" -o "$work/again.db"
/usr/bin/python3 - "$work/shipped.db" "$work/again.db" <<'PY'
import sqlite3, sys
a, b = (sqlite3.connect(p) for p in sys.argv[1:3])
bad = 0
for table in ("config", "perf_db", "timings", "timing_detail", "kernels"):
    rows_a = sorted(a.execute(f"SELECT * FROM {table}"), key=repr)
    rows_b = sorted(b.execute(f"SELECT * FROM {table}"), key=repr)
    same = rows_a == rows_b
    bad += not same
    print(f"{'ok' if same else 'FAIL'}: {table} ({len(rows_a)} rows shipped, {len(rows_b)} merged again)")
sys.exit(1 if bad else 0)
PY
