#!/usr/bin/env bash
# Drift, found the day a release lands: builds venvs with the NEWEST releases on PyPI of every
# trainer package the tests use (no pins), prints the versions it got, and runs the same Python
# suite as `npm run test:trainers` under them (scripts/test-python.sh). CI tests the pinned versions
# (requirements-trainers.txt, requirements-verifiers.txt); this is the command to run by hand, or on
# a schedule, to see whether today's releases still work.
#
#   npm run test:trainers-latest          (or: bash scripts/trainers-latest.sh)
#
# Two venvs, as the pinned ones: verifiers' newest (mcp 2) cannot share one with openenv's newest
# (fastmcp 3, mcp 1). Each is rebuilt once a day, under $venv_root/trainers-latest-<group>-<date>
# (scripts/venv-home.sh) (the torch one downloads about 3 GB). Each venv's
# envworker-trainers.txt names its packages, so a test whose package is missing fails, not skips.
# The versions it ran with are printed at the end: docs/trainers.md records them per row.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/venv-home.sh
root=$venv_root
day=$(date -u +%Y%m%d)

# group name, then its packages (PyPI names, unpinned)
groups=(
  "main|trl torch openenv ors-sdk openreward skyrl-gym openpipe-art uv reasoning-gym"
  "verifiers|verifiers uv"
)

build() {
  local name=$1 packages=$2 venv=$root/trainers-latest-$1-$day
  exec 9>"$venv.lock"
  flock 9
  if [ ! -f "$venv/.complete" ]; then
    echo "trainers-latest: creating $venv with the newest $packages" >&2
    rm -rf "$venv"
    "$venv_base" -m venv "$venv" >&2
    "$venv/bin/pip" install --quiet --disable-pip-version-check --upgrade pip >&2
    # shellcheck disable=SC2086
    "$venv/bin/pip" install --quiet --disable-pip-version-check $packages >&2 || { echo "trainers-latest: pip could not install the newest $packages" >&2; exit 1; }
    "$venv/bin/pip" check >&2 || echo "trainers-latest: pip check found conflicts in $venv (above)" >&2
    echo "$packages" | tr ' ' '\n' > "$venv/envworker-trainers.txt"
    touch "$venv/.complete"
  fi
  exec 9>&-
  echo "$venv/bin/python"
}

pythons=()
for g in "${groups[@]}"; do
  pythons+=("$(build "${g%%|*}" "${g#*|}")") || exit 1
done

status=0
ENVWORKER_PYTHON=${pythons[0]} ENVWORKER_PYTHON_EXTRA="${pythons[*]:1}" OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 bash scripts/test-python.sh || status=1

echo
echo "trainers-latest ($day): the versions these tests ran with"
for i in "${!groups[@]}"; do
  g=${groups[$i]}
  # shellcheck disable=SC2086
  "${pythons[$i]}" -m pip list --disable-pip-version-check --format=freeze 2>/dev/null | grep -iE "^($(echo ${g#*|} transformers mcp fastmcp | tr ' ' '|'))==" | sed "s/^/  ${g%%|*}: /"
done
echo "trainers-latest: $([ $status -eq 0 ] && echo passed || echo FAILED)"
exit $status
