#!/usr/bin/env bash
# The Python venv with the real trainer packages (clients/python/requirements-trainers.txt:
# verifiers, openenv-core, trl, torch and their pinned closure), created once per machine and
# cached under ${ENVWORKER_CACHE:-~/.cache/envworker}/trainers-venv-<hash of the requirements>:
# a warm run installs nothing. Prints the venv's python on stdout (progress goes to stderr).
#
#   ENVWORKER_PYTHON=$(scripts/trainers-venv.sh) npm test
set -euo pipefail
cd "$(dirname "$0")/.."
req=clients/python/requirements-trainers.txt
key=$(sha256sum "$req" | cut -c1-16)
root=${ENVWORKER_CACHE:-$HOME/.cache/envworker}
venv=$root/trainers-venv-$key
mkdir -p "$root"
# One builder at a time; a venv without its .complete mark (an interrupted build) is rebuilt.
exec 9>"$venv.lock"
flock 9
if [ ! -f "$venv/.complete" ]; then
  echo "trainers venv: creating $venv (downloads about 3 GB from PyPI, once)" >&2
  rm -rf "$venv"
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$req" >&2
  "$venv/bin/pip" check >&2
  touch "$venv/.complete"
  echo "trainers venv: ready" >&2
fi
echo "$venv/bin/python"
