# Sourced by trainers-venv.sh and trainers-latest.sh: where the trainer venvs live ($venv_root) and
# the Python they are made from ($venv_base).
#
# Run as root, the server's Python environment workers run as users of their own
# (src/node/python-envs/settings.ts), and the Python half of the tests hands them the trainer venv as
# ENVWORKER_PYTHON (the reasoning-gym catalog is in it): every file of that interpreter must be
# readable by others. /root is not (mode 700), nor is pyenv's Python under it, so as root the venvs
# are kept under /var/cache/envworker and made from Debian's /usr/bin/python3. Otherwise, as before:
# ~/.cache/envworker and the python3 on PATH. ENVWORKER_CACHE and ENVWORKER_VENV_BASE choose.
if [ "$(id -u)" = 0 ]; then
  venv_root=${ENVWORKER_CACHE:-/var/cache/envworker}
  if [ -x /usr/bin/python3 ]; then venv_base=${ENVWORKER_VENV_BASE:-/usr/bin/python3}; else venv_base=${ENVWORKER_VENV_BASE:-python3}; fi
else
  venv_root=${ENVWORKER_CACHE:-$HOME/.cache/envworker}
  venv_base=${ENVWORKER_VENV_BASE:-python3}
fi
mkdir -p "$venv_root"
