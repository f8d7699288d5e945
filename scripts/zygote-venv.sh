#!/usr/bin/env bash
# The Python venv of the QuickJS zygote (src/sandbox/quickjs-zygote: wasmtime and QuickJS-NG's WASI
# reactor, pinned with their hashes in src/sandbox/quickjs-zygote/requirements.txt), created once per
# machine under ${ENVWORKER_CACHE:-~/.cache/envworker}/zygote-venv-<hash of the requirements>.
# Prints the venv's python on stdout (progress goes to stderr).
#
#   ENVWORKER_ZYGOTE_PYTHON=$(scripts/zygote-venv.sh) npx vitest run test/sandbox-quickjs-zygote.test.ts
set -euo pipefail
cd "$(dirname "$0")/.."
req=src/sandbox/quickjs-zygote/requirements.txt
key=$(sha256sum "$req" | cut -c1-16)
root=${ENVWORKER_CACHE:-$HOME/.cache/envworker}
venv=$root/zygote-venv-$key
mkdir -p "$root"
exec 9>"$venv.lock"
flock 9
if [ ! -f "$venv/.complete" ]; then
  echo "zygote venv: creating $venv" >&2
  rm -rf "$venv"
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps --require-hashes -r "$req" >&2
  touch "$venv/.complete"
  echo "zygote venv: ready" >&2
fi
echo "$venv/bin/python"
