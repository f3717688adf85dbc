#!/bin/sh
# docker-compose entry point for the web/worker/beat services (image python:3.11-slim, the
# repository mounted read-only at /app): install requirements.txt into the shared /venv volume
# when it changed, then run the given command.
set -eu
stamp=/venv/.requirements.sha256
want="$(sha256sum /app/requirements.txt | cut -d' ' -f1)"
if [ ! -x /venv/bin/python ] || [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "compose_entry: installing requirements into /venv"
    python -m venv /venv
    /venv/bin/pip install --disable-pip-version-check -q -r /app/requirements.txt
    echo "$want" > "$stamp"
fi
exec "$@"
