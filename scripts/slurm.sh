#!/bin/sh
# A one-node Slurm cluster on this machine, for the tests of internal/slurm
# and for trying frontier's Slurm support without a cluster.
#
#   scripts/slurm.sh start   install slurm-wlm, slurmdbd, munge and MariaDB's
#                            server if missing, write the configuration, start
#                            munged, mariadbd, slurmdbd, slurmctld and slurmd,
#                            wait until the node is idle
#   scripts/slurm.sh env     print the variables that point the Slurm commands
#                            and the tests at it (eval "$(scripts/slurm.sh env)")
#   scripts/slurm.sh stop    stop the daemons and remove the state folder
#   scripts/slurm.sh status  print the node and the partitions
#
# Everything lives in one state folder, $FRONTIER_SLURM_DIR (default
# ${TMPDIR:-/tmp}/frontier-slurm): the configuration, munge's key and socket,
# the accounting database, the controller's state, slurmd's spool, the logs.
# Nothing under /etc is written, so a Slurm, munge or MariaDB of the
# machine's own is left alone. The daemons listen on 127.0.0.1, from
# $FRONTIER_SLURM_PORT on (default 6817): slurmctld, slurmd, slurmdbd and
# mariadbd, on four ports in a row (set another start when those are taken).
#
# The configuration needs no cgroups and no systemd, so it works in a
# container: processes are tracked by proctrack/linuxproc (a job's processes
# are found through their parent), and memory is enforced by sampling
# (jobacct_gather/linux with OverMemoryKill, every second), which a fast
# allocation can outrun between two samples. Two partitions share the node:
# "frontier" (the default) and "urgent", whose jobs preempt frontier's
# (PreemptMode=CANCEL), so that a test can see a job PREEMPTED. Jobs may be
# requeued (JobRequeue=1). Accounting is on (slurmdbd on a MariaDB server
# of its own, which lets in anyone on this machine: a test database), and
# slurmctld forgets a finished job 10 s after its end (MinJobAge), so that
# tests see sacct answer for the jobs squeue no longer knows.
#
# The daemons run as root (SlurmUser=root), as CI does; run this script as
# root or with sudo. A daemon that does not start is an error (exit 1) with
# the end of its log, never a skip.
set -eu

DIR=${FRONTIER_SLURM_DIR:-${TMPDIR:-/tmp}/frontier-slurm}
PORT=${FRONTIER_SLURM_PORT:-6817}
CONF=$DIR/slurm.conf

say() { echo "slurm.sh: $*" >&2; }
die() {
	say "$*"
	exit 1
}

need_root() {
	[ "$(id -u)" -eq 0 ] || die "the daemons run as root: run sudo $0 $1"
}

install() {
	missing=
	for pkg in slurm-wlm slurmdbd munge mariadb-server-core; do
		dpkg -s "$pkg" >/dev/null 2>&1 || missing="$missing $pkg"
	done
	[ -z "$missing" ] && return 0
	command -v apt-get >/dev/null 2>&1 || die "missing:$missing, and there is no apt-get: install Slurm (slurmctld, slurmd, slurmdbd, the client commands), munge and MariaDB's server"
	say "installing:$missing (Debian packages)"
	apt-get update -qq
	# The packages' own services are not started: policy-rc.d or the lack of
	# systemd stops them in a container, and this script starts its own.
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
}

# pidof_file prints the pid in file $1 when that process is alive.
pidof_file() {
	[ -s "$1" ] || return 1
	pid=$(cat "$1")
	kill -0 "$pid" 2>/dev/null || return 1
	echo "$pid"
}

# log_tail prints the end of a daemon's log, for an error.
log_tail() {
	[ -f "$1" ] && tail -n 20 "$1" >&2 || true
}

write_conf() {
	host=$(hostname -s)
	# The node as slurmd sees it: CPUs, sockets, cores, threads, memory.
	# Declaring more than the machine has would leave the node INVALID.
	hw=$(slurmd -C | head -n 1 | sed 's/^NodeName=[^ ]* //')
	case "$hw" in
	*CPUs=*RealMemory=*) ;;
	*) die "slurmd -C did not describe this machine: $hw" ;;
	esac
	gres=
	if command -v nvidia-smi >/dev/null 2>&1; then
		n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
		if [ "$n" -gt 0 ]; then
			gres=" Gres=gpu:$n"
			echo "Name=gpu File=/dev/nvidia[0-$((n - 1))]" >"$DIR/gres.conf"
		fi
	fi
	cat >"$CONF" <<EOF
# Written by scripts/slurm.sh: a one-node test cluster. Do not edit; the
# script rewrites it on every start.
ClusterName=frontier
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.socket
StateSaveLocation=$DIR/ctld
SlurmdSpoolDir=$DIR/slurmd
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=task=1
JobAcctGatherParams=OverMemoryKill
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$((PORT + 2))
AccountingStoragePass=$DIR/munge/munge.socket
AccountingStoreFlags=job_comment
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=512
PreemptType=preempt/partition_prio
PreemptMode=CANCEL
JobRequeue=1
ReturnToService=1
MinJobAge=10
KillWait=5
InactiveLimit=0
SlurmctldTimeout=30
SlurmdTimeout=60
${gres:+GresTypes=gpu}
NodeName=$host NodeAddr=127.0.0.1 $hw$gres State=UNKNOWN
PartitionName=frontier Nodes=$host Default=YES MaxTime=INFINITE State=UP PriorityTier=1
PartitionName=urgent Nodes=$host MaxTime=INFINITE State=UP PriorityTier=2
EOF
	echo "$host" >"$DIR/node"
	# slurmdbd reads slurmdbd.conf beside slurm.conf, and only when none
	# but its user may read it.
	cat >"$DIR/slurmdbd.conf" <<EOF
AuthType=auth/munge
AuthInfo=socket=$DIR/munge/munge.socket
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$((PORT + 2))
SlurmUser=root
LogFile=$DIR/slurmdbd.log
PidFile=$DIR/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$((PORT + 3))
StorageUser=root
StorageLoc=slurm_acct_db
EOF
	chmod 0600 "$DIR/slurmdbd.conf"
}

start_munge() {
	mkdir -p "$DIR/munge"
	# Others may reach the socket (every user authenticates through it);
	# the key stays its owner's alone.
	chmod 0755 "$DIR/munge"
	if [ ! -s "$DIR/munge/munge.key" ]; then
		dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 2>/dev/null
		chmod 0400 "$DIR/munge/munge.key"
	fi
	# --force: munged refuses to run as root without it.
	munged --force --key-file="$DIR/munge/munge.key" --socket="$DIR/munge/munge.socket" \
		--pid-file="$DIR/munge/munged.pid" --log-file="$DIR/munge/munged.log" \
		--seed-file="$DIR/munge/munged.seed" 2>>"$DIR/munge/munged.log" ||
		{
			log_tail "$DIR/munge/munged.log"
			die "munged did not start (log above)"
		}
}

# wait_log waits (30 s at most) until the log $1 has a line matching $2, and
# fails with the log's end when the daemon of pid file $3 stops first.
wait_log() {
	i=0
	until grep -q "$2" "$1" 2>/dev/null; do
		i=$((i + 1))
		if [ $i -gt 300 ] || { [ $i -gt 50 ] && ! pidof_file "$3" >/dev/null; }; then
			log_tail "$1"
			die "$(basename "$3" .pid) did not start (log above)"
		fi
		sleep 0.1
	done
}

# start_accounting starts the database (an empty one: with its grant
# tables skipped, it needs none of mariadb-install-db's) and slurmdbd on it,
# and registers the cluster.
start_accounting() {
	mkdir -p "$DIR/db"
	setsid mariadbd --no-defaults --datadir="$DIR/db" --socket="$DIR/db/mariadbd.sock" \
		--port=$((PORT + 3)) --bind-address=127.0.0.1 --skip-grant-tables --skip-name-resolve \
		--user=root --pid-file="$DIR/mariadbd.pid" --log-error="$DIR/mariadbd.log" \
		--innodb-buffer-pool-size=64M --innodb-log-file-size=16M </dev/null >/dev/null 2>&1 &
	wait_log "$DIR/mariadbd.log" "ready for connections" "$DIR/mariadbd.pid"
	SLURM_CONF=$CONF slurmdbd || {
		log_tail "$DIR/slurmdbd.log"
		die "slurmdbd did not start (log above)"
	}
	wait_log "$DIR/slurmdbd.log" "slurmdbd version .* started" "$DIR/slurmdbd.pid"
	SLURM_CONF=$CONF sacctmgr --immediate --quiet add cluster frontier >/dev/null ||
		die "sacctmgr could not register the cluster with slurmdbd"
}

# wait_idle waits until sinfo shows the node idle.
wait_idle() {
	i=0
	while [ $i -lt 600 ]; do
		state=$(SLURM_CONF=$CONF sinfo -h -N -o %T 2>/dev/null | head -n 1 || true)
		case "$state" in
		idle) return 0 ;;
		esac
		# A daemon writes its pid file a moment after it forks: a missing
		# one is a daemon still starting, for the first seconds.
		for d in slurmctld slurmd; do
			if [ -s "$DIR/$d.pid" ] || [ $i -ge 100 ]; then
				pidof_file "$DIR/$d.pid" >/dev/null || {
					log_tail "$DIR/$d.log"
					die "$d stopped (log above)"
				}
			fi
		done
		sleep 0.1
		i=$((i + 1))
	done
	log_tail "$DIR/slurmctld.log"
	log_tail "$DIR/slurmd.log"
	die "the node is not idle after 60 s (state: ${state:-unknown}; logs above)"
}

start() {
	need_root start
	install
	if pidof_file "$DIR/slurmctld.pid" >/dev/null || pidof_file "$DIR/slurmd.pid" >/dev/null; then
		die "a cluster from $DIR is running: $0 stop first"
	fi
	if [ -e "$DIR" ] && [ ! -f "$DIR/.frontier-slurm" ] && [ -n "$(ls -A "$DIR")" ]; then
		die "$DIR holds files this script did not write: set FRONTIER_SLURM_DIR to another folder"
	fi
	rm -rf "$DIR"
	mkdir -p "$DIR/ctld" "$DIR/slurmd"
	touch "$DIR/.frontier-slurm"
	chmod 0755 "$DIR"
	write_conf
	start_munge
	start_accounting
	# -i: ignore state a previous run may have left (there is none: the
	# folder is new), and start from the configuration.
	slurmctld -f "$CONF" -i || {
		log_tail "$DIR/slurmctld.log"
		die "slurmctld did not start (log above)"
	}
	slurmd -f "$CONF" -N "$(cat "$DIR/node")" || {
		log_tail "$DIR/slurmd.log"
		die "slurmd did not start (log above)"
	}
	wait_idle
	say "node $(cat "$DIR/node") idle; partitions frontier (default) and urgent; accounting on; state in $DIR"
}

# stop_pids sends TERM to the daemons of the pid files given, all at once
# (each takes about 2 s to go), waits for them, and sends KILL to those
# still there after 10 s.
stop_pids() {
	pids=
	for f in "$@"; do
		pid=$(pidof_file "$f") || continue
		kill "$pid" 2>/dev/null || true
		pids="$pids $pid"
	done
	i=0
	for pid in $pids; do
		while kill -0 "$pid" 2>/dev/null; do
			i=$((i + 1))
			if [ $i -eq 100 ]; then
				say "daemons still run after 10 s: killing them"
				for p in $pids; do kill -9 "$p" 2>/dev/null || true; done
			fi
			[ $i -gt 150 ] && die "pid $pid does not stop"
			sleep 0.1
		done
	done
}

# leftovers prints the pids of what the cluster started and left running:
# the step daemons of its jobs (slurmstepd, run in the state folder) and
# the processes of its jobs (SLURM_CONF of this cluster and a SLURM_JOB_ID
# in their environment). Nothing else on the machine matches.
leftovers() {
	for p in /proc/[0-9]*; do
		comm=
		{ read -r comm <"$p/comm"; } 2>/dev/null || continue
		if [ "$comm" = slurmstepd ] && [ "$(readlink "$p/cwd" 2>/dev/null)" = "$DIR" ]; then
			echo "${p#/proc/}"
		fi
	done
	for f in $(grep -lzx "SLURM_CONF=$CONF" /proc/[0-9]*/environ 2>/dev/null || true); do
		pid=${f#/proc/}
		pid=${pid%/environ}
		if [ "$pid" != $$ ] && grep -qz '^SLURM_JOB_ID=' "$f" 2>/dev/null; then
			echo "$pid"
		fi
	done
	return 0
}

stop() {
	need_root stop
	[ -d "$DIR" ] || return 0
	# Jobs first, so that their step daemons end them before slurmd goes:
	# cancel each, and wait (30 s at most) until the queue is empty.
	if pidof_file "$DIR/slurmctld.pid" >/dev/null; then
		ids=$(SLURM_CONF=$CONF squeue -h -o %i 2>/dev/null || true)
		if [ -n "$ids" ]; then
			SLURM_CONF=$CONF scancel $ids 2>/dev/null || true
			end=$(($(date +%s) + 30))
			while [ "$(date +%s)" -lt $end ] && [ -n "$(SLURM_CONF=$CONF squeue -h -o %i 2>/dev/null || true)" ]; do
				sleep 0.2
			done
		fi
	fi
	stop_pids "$DIR/slurmd.pid" "$DIR/slurmctld.pid" "$DIR/slurmdbd.pid"
	stop_pids "$DIR/mariadbd.pid" "$DIR/munge/munged.pid"
	left=$(leftovers)
	if [ -n "$left" ]; then
		say "killing what the cluster's jobs left running: pids" $left
		kill -9 $left 2>/dev/null || true
	fi
	[ -f "$DIR/.frontier-slurm" ] && rm -rf "$DIR"
	return 0
}

case "${1:-}" in
start) start ;;
stop) stop ;;
env)
	echo "export SLURM_CONF=$CONF"
	echo "export FRONTIER_TEST_SLURM=$DIR"
	;;
status) SLURM_CONF=$CONF sinfo -N -l && SLURM_CONF=$CONF squeue ;;
*)
	echo "usage: $0 start|stop|env|status" >&2
	exit 2
	;;
esac
