#!/bin/bash
# docs/fleet.md's SLURM job-array recipe against a real SLURM: a single-node slurmctld + slurmd
# (Debian's slurm-wlm, AuthType=auth/none, state in a temporary folder) started here; a job array
# of `tunecast tune --problems --shard ${SLURM_ARRAY_TASK_ID}/4` with the
# toy GEMM and its stand-in benchmark (tests/data/kernels/toy_bench.py, protocol 1); the shards
# merged with import-timings (twice: idempotent), finished from the records alone and compared with
# one unsharded run. Exit 77 (ctest: skipped) with a message when SLURM is not installed or cannot
# run here (not root).
#   tests/fleet_slurm.sh TUNECAST SOURCE_DIR WORK_DIR
set -u
TUNECAST=$(readlink -f "$1")
SRC=$(readlink -f "$2")
WORK=$3
SKIP=77
for tool in slurmctld slurmd sbatch sinfo squeue scancel; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "fleet_slurm: skipped: $tool not found (install Debian's slurm-wlm: apt-get install slurm-wlm)"
    exit $SKIP
  fi
done
if [ "$(id -u)" != 0 ]; then
  echo "fleet_slurm: skipped: slurmd must run as root to start jobs (run the suite as root, as CI does)"
  exit $SKIP
fi
rm -rf "$WORK"
mkdir -p "$WORK/state" "$WORK/spool" "$WORK/jobs"
WORK=$(readlink -f "$WORK")
NODE=$(hostname -s)
# Ports of our own, so that a SLURM already running here is not disturbed.
PORT=$(( 20000 + ($$ % 20000) ))
export SLURM_CONF=$WORK/slurm.conf
cat > "$SLURM_CONF" <<CONF
ClusterName=tunecasttest
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$WORK/state
SlurmdSpoolDir=$WORK/spool
SlurmctldPidFile=$WORK/slurmctld.pid
SlurmdPidFile=$WORK/slurmd.pid
SlurmctldLogFile=$WORK/slurmctld.log
SlurmdLogFile=$WORK/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=fleet Nodes=$NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF

CTLD=""
SLURMD=""
cleanup() {
  scancel --quiet --partition=fleet >/dev/null 2>&1
  [ -n "$SLURMD" ] && kill "$SLURMD" 2>/dev/null
  [ -n "$CTLD" ] && kill "$CTLD" 2>/dev/null
  [ -n "$SLURMD" ] && wait "$SLURMD" 2>/dev/null
  [ -n "$CTLD" ] && wait "$CTLD" 2>/dev/null
}
trap cleanup EXIT
die() {
  echo "fleet_slurm: FAILED: $*"
  for log in slurmctld.log slurmd.log; do
    echo "--- last lines of $WORK/$log"
    tail -n 15 "$WORK/$log" 2>/dev/null
  done
  exit 1
}

slurmctld -D -i -f "$SLURM_CONF" >"$WORK/slurmctld.out" 2>&1 &
CTLD=$!
slurmd -D -f "$SLURM_CONF" -N "$NODE" >"$WORK/slurmd.out" 2>&1 &
SLURMD=$!
up=""
for _ in $(seq 1 100); do
  state=$(sinfo -h -n "$NODE" -o %t 2>/dev/null)
  case "$state" in idle*|mix*|alloc*) up=1; break ;; esac
  kill -0 "$CTLD" 2>/dev/null || die "slurmctld exited: $(tail -n 5 "$WORK/slurmctld.out")"
  kill -0 "$SLURMD" 2>/dev/null || die "slurmd exited: $(tail -n 5 "$WORK/slurmd.out")"
  sleep 0.2
done
[ -n "$up" ] || die "the node did not come up (sinfo: '${state:-nothing}')"
echo "fleet_slurm: $(sinfo -V) up: node $NODE $(sinfo -h -n "$NODE" -o '%t, %c CPUs')"

# The recipe (docs/fleet.md, "On a SLURM cluster"), with the toy kernel.
cd "$WORK/jobs" || exit 1
KERNEL=$SRC/tests/data/kernels/toy_gemm.tcr
for i in $(seq 1 10); do echo "m=$((96 * i)),n=$((64 * (i % 3 + 1))),k=1024"; done > problems.txt
cat > tune_array.sh <<JOB
#!/bin/bash
#SBATCH --job-name=tunecast-fleet
#SBATCH --array=0-3
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=1
#SBATCH --output=$WORK/jobs/shard_%a.log
exec "$TUNECAST" tune "$KERNEL" --problems problems.txt --budget 12 --seed 1 \\
    --record "shard_\${SLURM_ARRAY_TASK_ID}.db" --shard "\${SLURM_ARRAY_TASK_ID}/4" \\
    --bench-cmd "python3 $SRC/tests/data/kernels/toy_bench.py" -o "shard_\${SLURM_ARRAY_TASK_ID}.tsv"
JOB
sbatch --wait --chdir="$WORK/jobs" tune_array.sh >sbatch.out 2>&1
rc=$?
cat sbatch.out
for a in 0 1 2 3; do
  [ -f "shard_$a.log" ] || die "no output of array task $a"
done
[ $rc = 0 ] || { cat shard_*.log; die "sbatch --wait exited with status $rc"; }
grep -h "problems:" shard_*.log
for a in 0 1 2 3; do
  [ -f "shard_$a.db" ] || die "array task $a wrote no shard_$a.db"
done

# A rerun of one task (as after a kill): its shard is done, nothing is measured again.
sbatch --wait --array=2 --output="$WORK/jobs/rerun_%a.log" --chdir="$WORK/jobs" tune_array.sh >/dev/null 2>&1 ||
  die "the rerun of array task 2 failed: $(cat rerun_2.log)"
grep -q "0 tuned now, 2 done before, 0 unfinished; 0 benchmarks measured" rerun_2.log ||
  die "the rerun of array task 2 measured again: $(cat rerun_2.log)"
grep -h "problems:" rerun_2.log

"$TUNECAST" import-timings "$KERNEL" shard_0.db shard_1.db shard_2.db shard_3.db -o merged.db 2>import1.err || die "import-timings: $(cat import1.err)"
"$TUNECAST" import-timings "$KERNEL" shard_0.db shard_1.db shard_2.db shard_3.db -o merged.db 2>import2.err || die "import-timings again: $(cat import2.err)"
cat import1.err import2.err
grep -q "120 measurements of 10 problems read, 120 new" import1.err || die "the merge did not read 120 measurements of 10 problems"
grep -q "120 measurements of 10 problems read, 0 new" import2.err || die "merging again added rows (not idempotent)"
"$TUNECAST" tune "$KERNEL" --problems problems.txt --budget 12 --seed 1 --record merged.db -o results.tsv 2>finish.err ||
  die "finishing from the merged records: $(tail -n 3 finish.err)"
grep -q "0 benchmarks measured, 120 answered" finish.err || die "the finishing run measured something: $(tail -n 1 finish.err)"

"$TUNECAST" tune "$KERNEL" --problems problems.txt --budget 12 --seed 1 --record one.db --quiet \
    --bench-cmd "python3 $SRC/tests/data/kernels/toy_bench.py" -o one.tsv || die "the unsharded run failed"
cmp -s results.tsv one.tsv || { diff results.tsv one.tsv; die "the merged shards' results differ from one run's"; }
echo "fleet_slurm: 4 array tasks, 10 problems, merged twice (idempotent), results equal one unsharded run"
cat results.tsv
