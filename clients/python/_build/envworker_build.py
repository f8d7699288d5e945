"""A PEP 517 / PEP 660 build backend for this one pure-Python package, using only the standard
library, so that ``pip install ./clients/python`` works offline: with ``requires = []`` pip's
isolated build environment needs nothing from a package index (setuptools would have to be
downloaded there, and building with it without isolation also needs the ``wheel`` package on
setuptools < 70.1).

It builds:
* a wheel (``py3-none-any``) with ``src/envworker`` and its ``.dist-info``;
* an editable wheel (``pip install -e``): a ``.pth`` file that puts ``src`` on ``sys.path``;
* an sdist with the sources, this backend, the tests and the metadata.

The metadata below is the ``[project]`` table of ``pyproject.toml``; a test checks they agree.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
PACKAGE = "envworker"

NAME = "envworker"
SUMMARY = "Python client for envworker: RL environments for language models over HTTP (no dependencies)"
REQUIRES_PYTHON = ">=3.10"
LICENSE = "MIT"
CLASSIFIERS = [
    "Programming Language :: Python :: 3",
    "License :: OSI Approved :: MIT License",
    "Operating System :: OS Independent",
    "Typing :: Typed",
]
# The trainer integrations' packages, with the versions they are tested with (pip install
# 'envworker[verifiers]'): the client itself needs none of them.
OPTIONAL_DEPENDENCIES = {
    "trl": ["trl>=1.13,<2"],
    "verifiers": ["verifiers>=0.3.1,<0.5"],
    "verifiers-legacy": ["verifiers>=0.3.1,<0.4", "datasets"],
    "skyrl": ["skyrl-gym>=0.4,<0.5"],
    "art": ["openpipe-art>=0.5.18,<0.6"],
}
TAG = "py3-none-any"
# Fixed timestamps make the archives reproducible (zip cannot store dates before 1980).
_EPOCH = max(int(os.environ.get("SOURCE_DATE_EPOCH", "315532800")), 315532800)


def version() -> str:
    text = (SRC / PACKAGE / "__init__.py").read_text(encoding="utf-8")
    m = re.search(r'^__version__ = "([^"]+)"$', text, re.M)
    if not m:
        raise RuntimeError("__version__ not found in src/envworker/__init__.py")
    return m.group(1)


def _dist_info() -> str:
    return f"{NAME}-{version()}.dist-info"


def metadata_text() -> str:
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {NAME}",
        f"Version: {version()}",
        f"Summary: {SUMMARY}",
        f"License: {LICENSE}",
        f"Requires-Python: {REQUIRES_PYTHON}",
        *(f"Classifier: {c}" for c in CLASSIFIERS),
    ]
    for extra, requirements in OPTIONAL_DEPENDENCIES.items():
        lines.append(f"Provides-Extra: {extra}")
        lines.extend(f'Requires-Dist: {r}; extra == "{extra}"' for r in requirements)
    readme = ROOT / "README.md"
    if readme.exists():
        lines.append("Description-Content-Type: text/markdown")
        return "\n".join(lines) + "\n\n" + readme.read_text(encoding="utf-8")
    return "\n".join(lines) + "\n"


def _wheel_text() -> str:
    return f"Wheel-Version: 1.0\nGenerator: envworker_build {version()}\nRoot-Is-Purelib: true\nTag: {TAG}\n"


def _package_files() -> list[tuple[str, bytes]]:
    out = []
    for path in sorted((SRC / PACKAGE).rglob("*")):
        if path.is_dir() or "__pycache__" in path.parts or path.suffix in (".pyc", ".pyo"):
            continue
        out.append((path.relative_to(SRC).as_posix(), path.read_bytes()))
    return out


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
    return f"sha256={digest}"


def _write_wheel(wheel_directory: str, files: list[tuple[str, bytes]]) -> str:
    dist_info = _dist_info()
    files = files + [
        (f"{dist_info}/METADATA", metadata_text().encode("utf-8")),
        (f"{dist_info}/WHEEL", _wheel_text().encode("utf-8")),
    ]
    record = "".join(f"{name},{_record_hash(data)},{len(data)}\n" for name, data in files)
    record += f"{dist_info}/RECORD,,\n"
    files.append((f"{dist_info}/RECORD", record.encode("utf-8")))
    filename = f"{NAME}-{version()}-{TAG}.whl"
    date = time.gmtime(_EPOCH)[:6]
    os.makedirs(wheel_directory, exist_ok=True)
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files:
            info = zipfile.ZipInfo(name, date_time=date)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return filename


def _write_metadata_dir(metadata_directory: str) -> str:
    dist_info = _dist_info()
    target = Path(metadata_directory) / dist_info
    target.mkdir(parents=True, exist_ok=True)
    (target / "METADATA").write_text(metadata_text(), encoding="utf-8")
    (target / "WHEEL").write_text(_wheel_text(), encoding="utf-8")
    return dist_info


# -- PEP 517 ---------------------------------------------------------------------------------


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    return _write_metadata_dir(metadata_directory)


def prepare_metadata_for_build_editable(metadata_directory, config_settings=None):
    return _write_metadata_dir(metadata_directory)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, _package_files())


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # PEP 660: a .pth line is a directory appended to sys.path at startup.
    pth = (str(SRC) + "\n").encode("utf-8")
    return _write_wheel(wheel_directory, [(f"__editable__.{NAME}.pth", pth)])


def build_sdist(sdist_directory, config_settings=None):
    base = f"{NAME}-{version()}"
    filename = f"{base}.tar.gz"
    members: list[tuple[str, bytes]] = [("PKG-INFO", metadata_text().encode("utf-8"))]
    for rel in ["pyproject.toml", "README.md"]:
        if (ROOT / rel).exists():
            members.append((rel, (ROOT / rel).read_bytes()))
    for folder in ["_build", "src", "tests"]:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_dir() or "__pycache__" in path.parts or path.suffix in (".pyc", ".pyo"):
                continue
            members.append((path.relative_to(ROOT).as_posix(), path.read_bytes()))
    os.makedirs(sdist_directory, exist_ok=True)
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz", format=tarfile.PAX_FORMAT) as tf:
        for rel, data in members:
            info = tarfile.TarInfo(f"{base}/{rel}")
            info.size = len(data)
            info.mtime = _EPOCH
            info.mode = 0o644
            tf.addfile(info, io.BytesIO(data))
    return filename
