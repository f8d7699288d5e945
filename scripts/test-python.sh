#!/usr/bin/env bash
# The Python client's suite (npm run test:python) under ENVWORKER_PYTHON (default python3); then,
# when ENVWORKER_PYTHON_EXTRA names more interpreters (space-separated: the verifiers 0.4 venv of
# scripts/trainers-venv.sh clients/python/requirements-verifiers.txt), the trainer tests under each.
# Every run reports; the exit status is non-zero when any failed.
set -uo pipefail
cd "$(dirname "$0")/../clients/python"
status=0
"${ENVWORKER_PYTHON:-python3}" -m unittest discover -s tests || status=1
for python in ${ENVWORKER_PYTHON_EXTRA:-}; do
  echo "--- the trainer tests under $python" >&2
  "$python" -m unittest discover -s tests -p 'test_trainers_*.py' || status=1
done
exit $status
