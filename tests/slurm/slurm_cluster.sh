#!/usr/bin/env bash
# usage: slurm_cluster.sh WORKDIR COMMAND [ARGS...]
# Brings up a one-node Slurm cluster from Debian's slurm-wlm (slurmctld + slurmd in the
# foreground, auth/none, state and logs under WORKDIR, ports of their own), runs COMMAND with
# SLURM_CONF pointing at it (so srun, squeue and scancel reach it), and takes the cluster down
# when COMMAND ends, fails or is interrupted. Exit: COMMAND's status; 77 when Slurm is not
# installed or this is not root (slurmd must be).
# The node offers 8 CPUs whatever the machine has (SlurmdParameters=config_overrides), so a
# 2-core machine runs 1 server + 2 workers as it does under mpirun --oversubscribe.
set -u
work=$1; shift
for tool in slurmctld slurmd srun sinfo; do
  command -v "$tool" >/dev/null 2>&1 || PATH=$PATH:/usr/sbin
  command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: Slurm is not installed ($tool missing; scripts/install-deps.sh --tests installs slurm-wlm)"; exit 77; }
done
[ "$(id -u)" -eq 0 ] || { echo "SKIP: slurmd needs root"; exit 77; }
rm -rf "$work" && mkdir -p "$work/state" "$work/spool"
node=$(hostname -s)
port=$((17000 + $$ % 2000))
cat >"$work/slurm.conf" <<CONF
ClusterName=asyncps-test
SlurmctldHost=$node
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
KillWait=10
InactiveLimit=0
NodeName=$node CPUs=8 State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
export SLURM_CONF=$work/slurm.conf
slurmctld -D -i -f "$SLURM_CONF" >"$work/slurmctld.out" 2>&1 &
ctld=$!
slurmd -D -f "$SLURM_CONF" >"$work/slurmd.out" 2>&1 &
d=$!
down() {
  kill "$d" "$ctld" 2>/dev/null
  wait "$d" "$ctld" 2>/dev/null
}
trap down EXIT
trap 'exit 130' INT TERM
for _ in $(seq 1 100); do
  sinfo -h -o %T 2>/dev/null | grep -qE '^(idle|mixed)' && break
  sleep 0.2
done
if ! sinfo -h -o %T 2>/dev/null | grep -qE '^(idle|mixed)'; then
  # a daemon that could not even start is this machine's limit (like a missing namespace), not
  # the project's: skipped with its log; daemons that run but never serve are a failure
  if ! kill -0 "$ctld" 2>/dev/null || ! kill -0 "$d" 2>/dev/null; then
    echo "SKIP: slurmctld or slurmd could not start here:"; tail -3 "$work"/slurmctld.out "$work"/slurmd.out "$work"/*.log 2>/dev/null
    exit 77
  fi
  echo "FAIL: the test cluster did not come up"; sinfo 2>&1; tail -5 "$work/slurmctld.log" "$work/slurmd.log"; exit 1
fi
"$@"
