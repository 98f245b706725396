# Sourced by t_sweep_slurm.sh: starts a single-node Slurm cluster of its own
# in a temporary directory (auth/none, proctrack/linuxproc, task/none: the
# cgroup defaults make jobs fail silently in containers), with free ports,
# and stops it on exit (jobs cancelled first, daemons killed by pid).
slurm_start() {
  SD=$(mktemp -d /tmp/tpusim-slurm.XXXXXX)
  mkdir -p "$SD/state" "$SD/spool"
  read -r P1 P2 < <(/usr/bin/python3 -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
  local user; user=$(id -un)
  cat > "$SD/slurm.conf" <<CONF
ClusterName=tpusim$$
SlurmctldHost=localhost
SlurmctldPort=$P1
SlurmdPort=$P2
AuthType=auth/none
CredType=cred/none
SlurmUser=$user
SlurmdUser=$user
StateSaveLocation=$SD/state
SlurmdSpoolDir=$SD/spool
SlurmctldPidFile=$SD/slurmctld.pid
SlurmdPidFile=$SD/slurmd.pid
SlurmctldLogFile=$SD/slurmctld.log
SlurmdLogFile=$SD/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
NodeName=tpusimnode NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=tpusim Nodes=tpusimnode Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF="$SD/slurm.conf"
  trap slurm_stop EXIT
  slurmctld -D -i -f "$SLURM_CONF" > "$SD/slurmctld.out" 2>&1 &
  CTLD=$!
  slurmd -D -N tpusimnode -f "$SLURM_CONF" > "$SD/slurmd.out" 2>&1 &
  SLURMD=$!
  local i
  for i in $(seq 1 300); do          # up to 60 s: the node comes up idle
    sinfo -h -o %T 2>/dev/null | grep -q '^idle' && return 0
    sleep 0.2
  done
  echo "slurm did not come up; logs:"; tail -20 "$SD"/*.log "$SD"/*.out
  return 1
}
slurm_stop() {
  [ -n "${SD:-}" ] || return 0
  scancel --user="$(id -un)" >/dev/null 2>&1 || true
  local p
  for p in ${SLURMD:-} ${CTLD:-}; do kill "$p" 2>/dev/null || true; done
  for p in ${SLURMD:-} ${CTLD:-}; do
    for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null || true
  done
  rm -rf "$SD"
  SD=
}
# slurm_wait JOBID...: polls squeue until the jobs have left the queue (up to 120 s).
slurm_wait() {
  local i
  for i in $(seq 1 600); do
    [ -z "$(squeue -h -j "$(echo "$@" | tr ' ' ,)" 2>/dev/null)" ] && return 0
    sleep 0.2
  done
  echo "slurm jobs $* still queued after 120 s:"; squeue; tail -20 "$SD"/*.log
  return 1
}
