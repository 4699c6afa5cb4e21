#!/bin/sh
# A throwaway PostgreSQL server for the tests: start makes a cluster in a
# temporary folder, owned by an unprivileged user, listening only on a Unix
# socket in that folder; env prints the variable the tests read; stop shuts
# it down and removes the folder.
#
#   scripts/postgres.sh start   # installs Debian's postgresql if missing
#   eval "$(scripts/postgres.sh env)"
#   go test ./internal/store/...
#   scripts/postgres.sh stop
#
# The folder is $FRONTIER_PG_DIR, else /tmp/frontier-pg-<uid>. Run as root
# (CI), the server runs as the system user frontier-ci (created if missing):
# PostgreSQL refuses to run as root. Nothing listens on TCP, and the socket's
# folder is private (0700), so trust authentication lets in only this user
# (and root).
set -eu

DIR=${FRONTIER_PG_DIR:-${TMPDIR:-/tmp}/frontier-pg-$(id -u)}
PGUSER_NAME=frontier
PGDB=frontier
RUNAS=frontier-ci

if [ "$(id -u)" -eq 0 ]; then SUDO=; else SUDO=sudo; fi

usage() {
	echo "usage: $0 start|stop|env|status" >&2
	exit 2
}

# pgbin prints the folder of the newest installed server's programs.
pgbin() {
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
		if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
			echo "$d"
			return 0
		fi
	done
	if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
		dirname "$(command -v initdb)"
		return 0
	fi
	return 1
}

install_server() {
	pgbin >/dev/null && return 0
	if ! command -v apt-get >/dev/null 2>&1; then
		echo "postgres.sh: no PostgreSQL server (initdb, pg_ctl) and no apt-get to install one: install PostgreSQL 13 or newer" >&2
		exit 1
	fi
	echo "installing: postgresql (Debian's PostgreSQL server, for the tests of the PostgreSQL store)"
	# The package would make and start a cluster of its own on port 5432;
	# the tests need none.
	if [ ! -e /etc/postgresql-common/createcluster.conf ]; then
		$SUDO mkdir -p /etc/postgresql-common
		echo "create_main_cluster = false" | $SUDO tee /etc/postgresql-common/createcluster.conf >/dev/null
	fi
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends postgresql >/dev/null
	pgbin >/dev/null || { echo "postgres.sh: postgresql is installed, but no initdb and pg_ctl were found under /usr/lib/postgresql" >&2; exit 1; }
}

# as runs a command as the user that owns the cluster.
as() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u "$RUNAS" -- "$@"
	else
		"$@"
	fi
}

dsn() {
	echo "postgres:///$PGDB?host=$DIR&user=$PGUSER_NAME&sslmode=disable"
}

running() {
	[ -f "$DIR/data/postmaster.pid" ] && as "$(pgbin)/pg_ctl" -D "$DIR/data" status >/dev/null 2>&1
}

start() {
	install_server
	bin=$(pgbin)
	if running; then
		echo "PostgreSQL is running already in $DIR"
		return 0
	fi
	rm -rf "$DIR"
	mkdir -m 0700 "$DIR"
	if [ "$(id -u)" -eq 0 ]; then
		if ! id "$RUNAS" >/dev/null 2>&1; then
			useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$RUNAS"
		fi
		chown "$RUNAS" "$DIR"
	fi
	as "$bin/initdb" --pgdata="$DIR/data" --username="$PGUSER_NAME" --auth=trust --encoding=UTF8 --locale=C.UTF-8 \
		--no-sync >"$DIR/initdb.log" 2>&1 || { cat "$DIR/initdb.log" >&2; exit 1; }
	# Only the socket in $DIR; durability traded for speed (a test
	# server: the tests kill clients, never this server).
	as "$bin/pg_ctl" --pgdata="$DIR/data" --log="$DIR/server.log" --wait --silent \
		-o "-c listen_addresses= -c unix_socket_directories=$DIR -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
		start || { cat "$DIR/server.log" >&2; exit 1; }
	as "$bin/createdb" --host="$DIR" --username="$PGUSER_NAME" "$PGDB"
	echo "PostgreSQL $("$bin/pg_ctl" --version | sed -n "s/.*(PostgreSQL) \([0-9.]*\).*/\1/p") is running in $DIR: $(dsn)"
}

stop() {
	if [ ! -d "$DIR" ]; then
		return 0
	fi
	if bin=$(pgbin) && [ -f "$DIR/data/postmaster.pid" ]; then
		as "$bin/pg_ctl" --pgdata="$DIR/data" --mode=immediate --wait --silent stop || true
	fi
	rm -rf "$DIR"
}

[ $# -eq 1 ] || usage
case $1 in
start) start ;;
stop) stop ;;
env) echo "export FRONTIER_TEST_POSTGRES='$(dsn)'" ;;
status)
	if running; then echo "running in $DIR: $(dsn)"; else echo "not running ($DIR)"; exit 1; fi
	;;
*) usage ;;
esac
