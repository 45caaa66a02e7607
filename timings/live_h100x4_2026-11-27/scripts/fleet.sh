#!/bin/bash
# Live fleet runs (issue 33) and the live learning-loop run (issue 32 item 6) for timings/live_h100x4_2026-11-27/README.md.
#   out/live/fleet.sh STEP...   with T (tunecast), M (TritonGemm1x1.tcm), D (results folder),
#   BENCH (the benchmark command, default python3 tools/gpu_timing/bench_server.py) in the environment.
# Steps: info | go NAME WORKERS GPU_BASE "SERVER_ARGS" [LIST] | kill NAME GPU_BASE | partb GPU
set -u
BENCH=${BENCH:-python3 tools/gpu_timing/bench_server.py}
A=${A:-out/live/p24_test.txt}
B=${B:-out/live/train8.txt}
now() { date +%s.%N; }
stamp() { python3 -u -c 'import sys,time
for l in sys.stdin: print(f"{time.time():.3f}\t{l}", end="", flush=True)'; }
ntuned() { python3 -c "import sqlite3,sys
try: print(sqlite3.connect('file:$1?mode=ro', uri=True, timeout=5).execute('select count(*) from tuned').fetchone()[0])
except Exception: print(0)"; }
# the bench_server.py processes of tune $1 (descendants), the top one of each worker
servers() { python3 - "$1" <<'PY'
import os, sys
root = int(sys.argv[1]); par = {}; cmd = {}
for p in os.listdir('/proc'):
    if not p.isdigit(): continue
    try:
        st = open(f'/proc/{p}/stat').read(); par[int(p)] = int(st.rsplit(')', 1)[1].split()[1])
        cmd[int(p)] = open(f'/proc/{p}/cmdline', 'rb').read().replace(b'\0', b' ').decode()
    except OSError: pass
def under(p):
    while p in par and p != root: p = par[p]
    return p == root
def is_server(p):
    c = cmd.get(p, '').split(' ')
    return bool(c) and os.path.basename(c[0]).startswith('python') and 'bench_server.py' in cmd[p]
for p in sorted(cmd):
    if is_server(p) and under(p) and not is_server(par.get(p)):
        print(p)
PY
}
tunepid() {  # the tunecast process under shell $1
  python3 - "$1" <<'PY'
import os, sys
root = int(sys.argv[1]); par = {}
for p in os.listdir('/proc'):
    if p.isdigit():
        try: par[int(p)] = int(open(f'/proc/{p}/stat').read().rsplit(')', 1)[1].split()[1])
        except OSError: pass
for p in sorted(par):
    q = p
    while q in par and q != root: q = par[q]
    try:
        if q == root and open(f'/proc/{p}/comm').read().strip() == 'tunecast': print(p)
    except OSError: pass
PY
}
tune() {  # tune NAME WORKERS GPU_BASE SERVER_ARGS LIST
  ${TL:+timeout -s KILL $TL} $T tune $M --problems $5 --budget 20 --record $D/$1.db --workers $2 --json \
    --bench-cmd "TRITON_CACHE_DIR=/tmp/tc_$1 CUDA_VISIBLE_DEVICES=\$(($3+{worker})) $BENCH $4"
}
go() {  # go NAME WORKERS GPU_BASE SERVER_ARGS [LIST]
  local list=${5:-$A}
  rm -rf /tmp/tc_$1 $D/$1.*; local s=$(now)
  echo "$s start $1 list=$list" >> $D/$1.log
  tune $1 $2 $3 "$4" $list 2>> $D/$1.log | stamp > $D/$1.jsonl
  local rc=${PIPESTATUS[0]} e=$(now)
  echo "$1 workers=$2 rc=$rc start=$s end=$e wall=$(python3 -c "print(round($e-$s,2))") s tuned=$(ntuned $D/$1.db)" | tee -a $D/walls.txt
}
killtest() {  # killtest NAME GPU_BASE
  local n=$1; rm -rf /tmp/tc_$n $D/$n.*; local s=$(now)
  tune $n 2 $2 "" $A 2> $D/$n.run1.log | stamp > $D/$n.run1.jsonl &
  local tp=""; for i in $(seq 50); do sleep 0.1; tp=$(tunepid $$); [ -n "$tp" ] && break; done
  echo "$(now) tune pid $tp" >> $D/$n.events
  while [ "$(ntuned $D/$n.db)" -lt 6 ]; do sleep 0.3; kill -0 $tp 2>/dev/null || break; done
  local sp=$(servers $tp 2>/dev/null | head -1)
  echo "$(now) tuned=$(ntuned $D/$n.db) kill -9 bench_server pid $sp ($(tr '\0' ' ' < /proc/$sp/cmdline 2>/dev/null); env CUDA_VISIBLE_DEVICES=$(tr '\0' '\n' < /proc/$sp/environ 2>/dev/null | grep ^CUDA_VISIBLE | cut -d= -f2))" >> $D/$n.events
  [ -n "$sp" ] && kill -9 $sp
  while [ "$(ntuned $D/$n.db)" -lt 12 ]; do sleep 0.3; kill -0 $tp 2>/dev/null || break; done
  echo "$(now) tuned=$(ntuned $D/$n.db) kill -9 tune pid $tp" >> $D/$n.events
  kill -9 $tp; wait
  sleep 2
  python3 - $D/$n.db > $D/$n.before_rerun.txt <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
print("tables", [r[0] for r in c.execute("select name from sqlite_master where type='table'")])
print("tuned", c.execute("select count(*) from tuned").fetchone()[0])
print("timings rows", c.execute("select count(*) from timings").fetchone()[0])
print("status", c.execute("select status, count(*) from timings group by 1").fetchall())
PY
  echo "$(now) rerun" >> $D/$n.events
  tune $n 2 $2 "" $A 2> $D/$n.run2.log | stamp > $D/$n.run2.jsonl
  echo "$(now) rerun rc=${PIPESTATUS[0]}" >> $D/$n.events
  echo "killtest wall $(python3 -c "print(round($(now)-$s,2))") s" >> $D/$n.events
}
info() {
  { date -u; nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv
    python3 -c "import torch, triton, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.version.cuda, 'gpus', torch.cuda.device_count())"
    nproc; uname -r; $T --version 2>&1 | head -2; } > $D/info.txt 2>&1
}
partb() {  # partb GPU: model-free tuning of the train problems, one GPU
  rm -rf /tmp/tc_partb $D/live.db*; local s=$(now)
  ${TL:+timeout -s KILL $TL} $T tune weights/rules/TritonGemm1x1.tcr --problems $B --budget 20 --seed 0 --record $D/live.db --json \
    --bench-cmd "TRITON_CACHE_DIR=/tmp/tc_partb CUDA_VISIBLE_DEVICES=$1 $BENCH" 2> $D/partb.log | stamp > $D/partb.jsonl
  local rc=${PIPESTATUS[0]} e=$(now)
  echo "partb rc=$rc wall=$(python3 -c "print(round($e-$s,2))") s tuned=$(ntuned $D/live.db)" | tee -a $D/walls.txt
}
case "$1" in
  info) info ;; go) shift; go "$@" ;; kill) killtest $2 $3 ;; partb) partb $2 ;;
  *) echo "unknown step $1"; exit 2 ;;
esac
