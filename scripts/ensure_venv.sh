#!/usr/bin/env bash
# Create .venv (python3 -m venv) if missing and install requirements.txt, skipping the install
# when requirements.txt is unchanged since the last successful one (stamp: .venv/.requirements.sha256).
# Then install this project editable without dependencies (console script .venv/bin/schedctl),
# again only when pyproject.toml changed or the script is missing (stamp: .venv/.project.sha256).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    echo "ensure_venv: creating .venv with $PYTHON -m venv"
    "$PYTHON" -m venv .venv
fi
stamp=.venv/.requirements.sha256
want="$(sha256sum requirements.txt | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "ensure_venv: installing requirements.txt into .venv"
    .venv/bin/python -m pip install --disable-pip-version-check -q --upgrade pip
    .venv/bin/python -m pip install --disable-pip-version-check -q -r requirements.txt
    echo "$want" > "$stamp"
fi

# The project itself (editable: the working tree is what runs). --no-deps: requirements.txt above
# pins every dependency; pip must not resolve or upgrade any of them here.
project_stamp=.venv/.project.sha256
project_want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ -x .venv/bin/schedctl ] && [ -f "$project_stamp" ] && [ "$(cat "$project_stamp")" = "$project_want" ]; then
    exit 0
fi
echo "ensure_venv: installing the project (editable, --no-deps) into .venv"
# setuptools warns that an editable install is one (its build runs in pip's subprocess): silenced.
PYTHONWARNINGS="ignore:Editable installation" \
    .venv/bin/python -m pip install --disable-pip-version-check -q --no-deps -e .
echo "$project_want" > "$project_stamp"
