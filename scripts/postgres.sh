#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the store/postgres tests and benchmarks.
#
#   eval "$(scripts/postgres.sh)"            # start one; exports AGENT_LSP_TEST_POSTGRES
#   go test ./store/postgres/ ./agent/graph/
#   scripts/postgres.sh stop "$AGENT_LSP_TEST_POSTGRES_DIR"
#
# Start installs Debian's postgresql when initdb is missing, creates a
# cluster in a new temporary directory (owned by the postgres user when run
# as root: PostgreSQL refuses to run as root), starts it on 127.0.0.1 at a
# free port and on a unix socket in that directory, creates a role with a
# random password and a database it owns, and prints the export lines on
# standard output (everything else goes to standard error). The server keeps
# PostgreSQL's default durability: fsync and synchronous_commit on.
#
# stop DIR stops the cluster of DIR and removes DIR. restart DIR restarts it
# (fast: open connections are ended), as a database restart in production
# would; the tests that ride one out start a cluster of their own.
set -euo pipefail

log() { echo "postgres.sh: $*" >&2; }

bindir() {
	local d
	d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
	if [ -n "$d" ] && [ -x "$d/initdb" ]; then
		echo "$d"
	elif command -v initdb >/dev/null 2>&1; then
		dirname "$(readlink -f "$(command -v initdb)")"
	fi
}

# as runs a command as the cluster's owner: postgres when we are root.
as() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

stop() {
	local dir=${1:?usage: postgres.sh stop DIR}
	[ -d "$dir/data" ] || { log "$dir holds no cluster"; exit 1; }
	local bin
	bin=$(bindir)
	as "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >&2 || log "pg_ctl stop failed (already stopped?)"
	rm -rf "$dir"
	log "stopped and removed $dir"
}

restart() {
	local dir=${1:?usage: postgres.sh restart DIR}
	[ -d "$dir/data" ] || { log "$dir holds no cluster"; exit 1; }
	local bin
	bin=$(bindir)
	as "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -m fast -w -t 60 restart >&2
	log "restarted $dir"
}

start() {
	local bin
	bin=$(bindir)
	if [ -z "$bin" ]; then
		log "initdb is missing: installing Debian's postgresql"
		if [ "$(id -u)" != 0 ]; then
			log "installing needs root: run 'apt-get install -y postgresql' as root"
			exit 1
		fi
		export DEBIAN_FRONTEND=noninteractive
		apt-get update >&2
		apt-get install -y postgresql >&2
		bin=$(bindir)
		[ -n "$bin" ] || { log "postgresql installed, but no initdb found"; exit 1; }
	fi
	local dir
	dir=$(mktemp -d "${TMPDIR:-/tmp}/agent-lsp-pg.XXXXXX")
	chmod 700 "$dir"
	if [ "$(id -u)" = 0 ]; then
		id postgres >/dev/null 2>&1 || { log "there is no postgres user to run the server as"; exit 1; }
		chown postgres: "$dir"
	fi
	log "cluster in $dir ($bin)"
	as "$bin/initdb" -D "$dir/data" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
		--encoding=UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
		{ cat "$dir/initdb.log" >&2; exit 1; }

	local port="" try
	for try in $(seq 1 20); do
		port=$((20000 + RANDOM % 40000))
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			continue # taken
		fi
		if as "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
			-o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories=$dir" start >&2; then
			break
		fi
		port=""
	done
	[ -n "$port" ] || { log "the server did not start:"; tail -n 20 "$dir/server.log" >&2; exit 1; }

	local user=agent_lsp db=agent_lsp_test pass
	pass=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
	psql() { as "$bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$dir" -p "$port" -U postgres "$@" >&2; }
	psql -d postgres -c "CREATE ROLE $user LOGIN PASSWORD '$pass'"
	psql -d postgres -c "CREATE DATABASE $db OWNER $user"
	log "listening on 127.0.0.1:$port and $dir/.s.PGSQL.$port; stop with: $0 stop $dir"
	echo "export AGENT_LSP_TEST_POSTGRES=postgres://$user:$pass@127.0.0.1:$port/$db?sslmode=disable"
	echo "export AGENT_LSP_TEST_POSTGRES_DIR=$dir"
}

case "${1:-start}" in
start) start ;;
stop) stop "${2:-}" ;;
restart) restart "${2:-}" ;;
*)
	echo "usage: $0 [start] | $0 stop DIR | $0 restart DIR" >&2
	exit 2
	;;
esac
