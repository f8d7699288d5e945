"""The in-tree build backend: it builds valid wheels and sdists, and agrees with pyproject.toml."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import sys
import tarfile
import tempfile
import unittest
import zipfile
from pathlib import Path

from _support import CLIENT_DIR

import envworker


def _load_backend():
    spec = importlib.util.spec_from_file_location("envworker_build", CLIENT_DIR / "_build" / "envworker_build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


backend = _load_backend()


class PackagingTests(unittest.TestCase):
    @unittest.skipIf(sys.version_info < (3, 11), "tomllib is Python 3.11+")
    def test_backend_agrees_with_pyproject(self) -> None:
        import tomllib

        data = tomllib.loads((CLIENT_DIR / "pyproject.toml").read_text(encoding="utf-8"))
        project = data["project"]
        self.assertEqual(data["build-system"]["requires"], [])
        self.assertEqual(project["name"], backend.NAME)
        self.assertEqual(project["version"], backend.version())
        self.assertEqual(project["version"], envworker.__version__)
        self.assertEqual(project["description"], backend.SUMMARY)
        self.assertEqual(project["requires-python"], backend.REQUIRES_PYTHON)
        self.assertEqual(project["license"]["text"], backend.LICENSE)
        self.assertEqual(project["classifiers"], backend.CLASSIFIERS)
        self.assertEqual(project["dependencies"], [])
        self.assertEqual(project["optional-dependencies"], backend.OPTIONAL_DEPENDENCIES)

    def test_wheel(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            name = backend.build_wheel(tmp)
            self.assertEqual(name, f"envworker-{envworker.__version__}-py3-none-any.whl")
            with zipfile.ZipFile(Path(tmp) / name) as zf:
                names = zf.namelist()
                for module in ("__init__", "client", "errors", "group", "types", "_transport"):
                    self.assertIn(f"envworker/{module}.py", names)
                self.assertIn("envworker/py.typed", names)
                self.assertFalse([n for n in names if "__pycache__" in n or n.endswith(".pyc")])
                dist = f"envworker-{envworker.__version__}.dist-info"
                meta = zf.read(f"{dist}/METADATA").decode()
                self.assertIn("Name: envworker\n", meta)
                self.assertIn("Requires-Python: >=3.10\n", meta)
                self.assertIn("Provides-Extra: verifiers\n", meta)
                self.assertIn('Requires-Dist: verifiers>=0.3.1,<0.5; extra == "verifiers"\n', meta)
                self.assertIn("Tag: py3-none-any", zf.read(f"{dist}/WHEEL").decode())
                record = zf.read(f"{dist}/RECORD").decode().splitlines()
                self.assertEqual(len(record), len(names))
                for line in record:
                    path, digest, size = line.rsplit(",", 2)
                    if path == f"{dist}/RECORD":
                        self.assertEqual((digest, size), ("", ""))
                        continue
                    data = zf.read(path)
                    want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                    self.assertEqual((digest, int(size)), (f"sha256={want}", len(data)))

    def test_editable_and_sdist(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            with zipfile.ZipFile(Path(tmp) / backend.build_editable(tmp)) as zf:
                pth = [n for n in zf.namelist() if n.endswith(".pth")]
                self.assertEqual(len(pth), 1)
                self.assertEqual(zf.read(pth[0]).decode().strip(), str(CLIENT_DIR / "src"))
            meta_dir = backend.prepare_metadata_for_build_wheel(tmp)
            self.assertTrue((Path(tmp) / meta_dir / "METADATA").exists())
            with tarfile.open(Path(tmp) / backend.build_sdist(tmp)) as tf:
                names = tf.getnames()
            base = f"envworker-{envworker.__version__}"
            for rel in ("PKG-INFO", "pyproject.toml", "README.md", "_build/envworker_build.py", "src/envworker/client.py", "tests/test_client.py"):
                self.assertIn(f"{base}/{rel}", names)


if __name__ == "__main__":
    unittest.main()
