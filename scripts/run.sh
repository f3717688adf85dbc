#!/usr/bin/env bash
# `make run`: migrate the SQLite default, load the demo into an empty database, ensure the
# admin account, start the scheduler loop (when available) and serve on HOST:PORT (default
# 127.0.0.1:8000). The demo moves: the simulated agent runs tasks for their duration and reports
# node usage, and a demo job arrives every few cycles (DEMO_ARRIVALS).
set -euo pipefail
cd "$(dirname "$0")/.."

HOST="${HOST:-127.0.0.1}"
PORT="${PORT:-8000}"
if ! [[ "$PORT" =~ ^[0-9]+$ ]] || (( 10#$PORT < 1 || 10#$PORT > 65535 )); then
    echo "run: PORT must be a number from 1 to 65535, not '$PORT'" >&2
    exit 2
fi
PORT=$((10#$PORT))
if ! [[ "$HOST" =~ ^([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])$ ]]; then
    echo "run: HOST must be a host name, an IPv4 address or a bracketed IPv6 address ([::1]), not '$HOST'" >&2
    exit 2
fi
# Django answers only the host names in ALLOWED_HOSTS: add HOST to the defaults unless it is a
# wildcard address (then set ALLOWED_HOSTS to the names clients use).
if [ -z "${ALLOWED_HOSTS:-}" ] && [ "$HOST" != "0.0.0.0" ] && [ "$HOST" != "[::]" ]; then
    export ALLOWED_HOSTS="127.0.0.1,localhost,[::1],$HOST"
fi

export DEBUG="${DEBUG:-1}"
export SIMULATED_AGENT="${SIMULATED_AGENT:-1}"
export DEMO_ARRIVALS="${DEMO_ARRIVALS:-1}"
PY=.venv/bin/python
mkdir -p var

$PY manage.py migrate --noinput -v0
$PY manage.py load_demo --if-empty

# Scheduler hook: SCHEDULER_CMD (set by the Makefile) runs in the background when the
# run_scheduler management command exists, restarted whenever it exits (it should not: it
# retries through database outages itself); it stops with the server.
supervise_scheduler() {
    local child="" status
    trap '[ -n "$child" ] && kill "$child" 2>/dev/null; exit 0' TERM INT
    while true; do
        $SCHEDULER_CMD >>var/scheduler.log 2>&1 &
        child=$!
        status=0
        wait "$child" || status=$?
        echo "run: $(date -u +%FT%TZ) scheduler exited (status $status); restarting in ${SCHEDULER_RESTART_DELAY:-2} s" \
            | tee -a var/scheduler.log >&2
        sleep "${SCHEDULER_RESTART_DELAY:-2}" &
        wait $! || true
    done
}
scheduler_pid=""
if [ -n "${SCHEDULER_CMD:-}" ] && $PY manage.py help run_scheduler >/dev/null 2>&1; then
    echo "run: starting scheduler: $SCHEDULER_CMD (log: var/scheduler.log; restarted if it exits)"
    supervise_scheduler &
    scheduler_pid=$!
    trap 'kill "$scheduler_pid" 2>/dev/null || true' EXIT INT TERM
else
    echo "run: no run_scheduler command yet: serving without the scheduler loop"
fi

url_host="$HOST"
case "$HOST" in 0.0.0.0 | "[::]") url_host=127.0.0.1 ;; esac
echo "run: serving on http://$url_host:$PORT/ (admin: http://$url_host:$PORT/admin/)"
echo "run: users and queue roles: scripts/manage.sh users --help"
$PY manage.py ensure_admin
$PY manage.py runserver --noreload "$HOST:$PORT"
