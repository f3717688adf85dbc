#!/usr/bin/env bash
# `make run`: migrate the SQLite default, load the demo into an empty database, ensure the
# admin account, start the scheduler loop (when available) and serve on 127.0.0.1:8000.
set -euo pipefail
cd "$(dirname "$0")/.."

export DEBUG="${DEBUG:-1}"
export SIMULATED_AGENT="${SIMULATED_AGENT:-1}"
PY=.venv/bin/python
mkdir -p var

$PY manage.py migrate --noinput -v0
$PY manage.py load_demo --if-empty

# Scheduler hook: SCHEDULER_CMD (set by the Makefile) runs in the background when the
# run_scheduler management command exists; it stops with the server.
scheduler_pid=""
if [ -n "${SCHEDULER_CMD:-}" ] && $PY manage.py help run_scheduler >/dev/null 2>&1; then
    echo "run: starting scheduler: $SCHEDULER_CMD (log: var/scheduler.log)"
    $SCHEDULER_CMD >>var/scheduler.log 2>&1 &
    scheduler_pid=$!
    trap 'kill "$scheduler_pid" 2>/dev/null || true' EXIT INT TERM
else
    echo "run: no run_scheduler command yet: serving without the scheduler loop"
fi

echo "run: serving on http://127.0.0.1:8000/ (admin: http://127.0.0.1:8000/admin/)"
$PY manage.py ensure_admin
$PY manage.py runserver --noreload 127.0.0.1:8000
