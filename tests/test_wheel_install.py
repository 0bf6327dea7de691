"""A non-editable install works without the source tree.

The wheel is built from a copy of the package (so the checkout gets no ``build/`` or ``*.egg-info``), installed
with ``pip install --target`` into a folder outside the checkout, and a subprocess that sees only that folder
(plus the dependencies already installed in this interpreter) runs the lab helpers that need data: lab 01's
recorded frames are package data; lab 15 is given its dataset's path.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = r"""
import json
import sys
from pathlib import Path

import kafkalab
from kafkalab.labs import lab01, lab15
from kafkalab.protocol import decode_request

target = Path(sys.argv[1]).resolve()
assert Path(kafkalab.__file__).resolve().is_relative_to(target), kafkalab.__file__
manifest = json.loads((lab01.FRAMES / "manifest.json").read_text(encoding="utf-8"))
apis = [decode_request(lab01.recorded(f["file"])).api_name for f in manifest["frames"]]   # sha256 checked too
events = lab15.load_events(Path(sys.argv[2]), limit=3)
print(json.dumps({"file": kafkalab.__file__, "apis": apis, "events": [e["event_id"] for e in events]}))
"""


def _run(*args, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(args, capture_output=True, text=True, timeout=300, **kwargs)
    assert result.returncode == 0, f"{args[:4]} failed:\n{result.stdout}\n{result.stderr}"
    return result


@pytest.mark.slow
def test_wheel_installed_outside_the_checkout_has_the_lab_data(tmp_path):
    source = tmp_path / "src"
    shutil.copytree(ROOT / "kafkalab", source / "kafkalab", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    wheels = tmp_path / "wheels"
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "--quiet",
         "-w", str(wheels), str(source))
    (wheel,) = wheels.glob("kafkalab-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "kafkalab/labs/frames/manifest.json" in names
    assert "kafkalab/spark/log4j2.properties" in names

    target = tmp_path / "site"
    _run(sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--quiet", "--target", str(target),
         str(wheel))
    events = tmp_path / "events.jsonl"
    with open(ROOT / "data" / "clickstream" / "events.jsonl", encoding="utf-8") as f:
        events.write_text("".join(next(f) for _ in range(3)), encoding="utf-8")
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PYTHONPATH"] = str(target)
    out = _run(sys.executable, "-c", SCRIPT, str(target), str(events), cwd=work, env=env)
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert Path(report["file"]).resolve().is_relative_to(target.resolve())
    assert not Path(report["file"]).resolve().is_relative_to(ROOT)
    manifest = json.loads((ROOT / "kafkalab" / "labs" / "frames" / "manifest.json").read_text(encoding="utf-8"))
    assert report["apis"] == [f["api"] for f in manifest["frames"]]
    assert len(report["events"]) == 3
