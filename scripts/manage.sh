#!/usr/bin/env bash
# `scripts/manage.sh ARGS...`: manage.py with the environment `make run` uses, from any directory:
# DEBUG=1 (so the development SECRET_KEY applies when none is set) and the SQLite database under
# var/ unless DATABASE_URL says otherwise. E.g. `scripts/manage.sh users create alice --submitter nlp`.
# In production set SECRET_KEY, DATABASE_URL and DEBUG=0 and call .venv/bin/python manage.py.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/python ]; then
    echo "manage: no .venv yet: run \`make run\` (or \`make venv\`) once first" >&2
    exit 2
fi
export DEBUG="${DEBUG:-1}"
mkdir -p var
exec .venv/bin/python manage.py "$@"
