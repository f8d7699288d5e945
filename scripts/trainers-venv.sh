#!/usr/bin/env bash
# A Python venv with real trainer packages, created once per machine and cached under
# $venv_root/trainers-venv-<hash of the requirements and the base Python> (scripts/venv-home.sh:
# /var/cache/envworker when run as root, where the Python environment workers must read it, else
# ~/.cache/envworker): a warm run installs nothing. Prints the venv's python on stdout (progress goes to stderr).
#
#   scripts/trainers-venv.sh [REQUIREMENTS]    default clients/python/requirements-trainers.txt
#                                              (verifiers 0.3.1, openenv-core, trl, torch, ORS, ...);
#                                              clients/python/requirements-verifiers.txt: verifiers 0.4
#   ENVWORKER_PYTHON=$(scripts/trainers-venv.sh) npm test
#
# A requirements file is a resolved closure (pip freeze --all). Its `# direct:` line names the
# packages the venv is for: they are written to the venv's envworker-trainers.txt, and the Python
# suite run with that venv fails (instead of skipping) a test whose package is one of them and is
# missing (clients/python/tests/_support.py, required_trainers).
set -euo pipefail
cd "$(dirname "$0")/.."
req=${1:-clients/python/requirements-trainers.txt}
[ -f "$req" ] || { echo "trainers venv: no requirements file $req" >&2; exit 2; }
source scripts/venv-home.sh
key=$( (cat "$req"; echo "base: $venv_base") | sha256sum | cut -c1-16)
venv=$venv_root/trainers-venv-$key
# One builder at a time; a venv without its .complete mark (an interrupted build) is rebuilt.
exec 9>"$venv.lock"
flock 9
if [ ! -f "$venv/.complete" ]; then
  echo "trainers venv: creating $venv from $req (a one-time download from PyPI; the torch one is about 3 GB)" >&2
  rm -rf "$venv"
  "$venv_base" -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$req" >&2
  "$venv/bin/pip" check >&2
  sed -n 's/^# direct:[[:space:]]*//p' "$req" | tr ' ' '\n' | sed '/^$/d' > "$venv/envworker-trainers.txt"
  touch "$venv/.complete"
  echo "trainers venv: ready" >&2
fi
echo "$venv/bin/python"
