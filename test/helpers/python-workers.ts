/**
 * The interpreter the tests' Python environment workers run on: `python3`, the first one on PATH
 * the workers' own user can read (src/python/settings.ts). Not the ENVWORKER_PYTHON of the
 * environment: CI exports the trainer venv's there for the Python client's suite, and that venv
 * lives under $HOME, which a worker (a user of its own when the tests run as root) cannot read.
 */
export const WORKER_PYTHON = { ENVWORKER_PYTHON: "python3" } as const;
