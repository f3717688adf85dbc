#!/usr/bin/env bash
# Create .venv (python3 -m venv) if missing and install requirements.txt, skipping the install
# when requirements.txt is unchanged since the last successful one (stamp: .venv/.requirements.sha256).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    echo "ensure_venv: creating .venv with $PYTHON -m venv"
    "$PYTHON" -m venv .venv
fi
stamp=.venv/.requirements.sha256
want="$(sha256sum requirements.txt | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    exit 0
fi
echo "ensure_venv: installing requirements.txt into .venv"
.venv/bin/python -m pip install --disable-pip-version-check -q --upgrade pip
.venv/bin/python -m pip install --disable-pip-version-check -q -r requirements.txt
echo "$want" > "$stamp"
