"""The house's layering rules, checked on every import statement in kafkalab/.

Lower rooms never import higher ones, so a learner can read ``kafkalab.protocol`` without knowing anything
about sockets, and ``kafkalab.storage`` without knowing the network.
"""
import ast
import functools
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "kafkalab"

# room -> rooms it must never import (besides itself, every room may import these lower ones only)
FORBIDDEN = {
    "common": {"protocol", "records", "storage", "network", "server", "purgatory", "controller", "coordinator",
               "security", "clients", "trace", "viz", "spark", "testing", "cli", "tools", "labs"},
    "protocol": {"records", "storage", "network", "server", "purgatory", "controller", "coordinator", "security",
                 "clients", "trace", "viz", "spark", "testing", "cli", "tools"},
    "records": {"storage", "network", "server", "purgatory", "controller", "coordinator", "security", "clients",
                "trace", "viz", "spark", "testing", "cli", "tools"},
    "storage": {"network", "server", "purgatory", "controller", "coordinator", "security", "clients", "trace",
                "viz", "spark", "testing", "cli"},
    "network": {"server", "clients", "viz", "spark", "testing", "cli"},
    "server": {"clients", "viz", "spark", "testing", "cli"},
    # the purgatory is a library the broker uses: clocks from common, error codes from protocol, nothing else
    "purgatory": {"records", "storage", "network", "server", "controller", "coordinator", "security", "clients",
                  "trace", "viz", "spark", "testing", "cli", "tools", "labs", "zk"},
    "controller": {"server", "storage", "network", "clients", "viz", "spark", "testing", "cli"},
    "coordinator": {"network", "server", "controller", "purgatory", "clients", "viz", "spark", "testing", "cli",
                    "tools", "trace", "zk", "labs"},
    "security": {"server", "clients", "viz", "spark", "testing", "cli"},
    # the clients speak only the wire: protocol, records and common below them (never the broker's rooms)
    "clients": {"server", "storage", "controller", "coordinator", "purgatory", "network", "viz", "spark",
                "testing", "cli", "trace", "tools", "zk", "labs"},
    "trace": {"spark", "testing", "cli"},
    # tools read files (storage, records) or speak the wire through the clients, as Kafka's tools module does
    "tools": {"server", "network", "spark", "testing", "cli"},
    "viz": {"spark", "testing", "cli"},
    # the Spark connector is a client application: kafkalab's clients (and what they stand on), never the broker
    "spark": {"server", "storage", "network", "controller", "coordinator", "purgatory", "zk", "viz", "trace",
              "testing", "cli", "tools", "labs"},
    # the embedded ZooKeeper stands alone: only kafkalab.common below it
    "zk": {"protocol", "records", "storage", "network", "server", "purgatory", "controller", "coordinator",
           "security", "clients", "trace", "viz", "spark", "testing", "cli", "tools", "labs"},
}


@functools.lru_cache(maxsize=None)
def parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def imported_rooms(path: Path):
    tree = parsed(path)
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "kafkalab" and len(parts) > 1:
                yield parts[1], node.lineno


def modules():
    paths = sorted(p for p in PKG.rglob("*.py") if p.relative_to(PKG).parts[0] in FORBIDDEN)
    # Parse every module now, at collection, before any test has run: CPython 3.11.0-3.11.7 can fail
    # ast.parse with "SystemError: AST constructor recursion depth mismatch" later in a long session
    # (gh-106905, fixed in 3.11.8), which would be a false failure of this test.
    for p in PKG.rglob("*.py"):
        parsed(p)
    return paths


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PKG)))
def test_room_imports_only_lower_rooms(path):
    room = path.relative_to(PKG).parts[0]
    bad = [(r, line) for r, line in imported_rooms(path) if r in FORBIDDEN[room]]
    assert not bad, f"{path.relative_to(PKG)} (room {room!r}) imports higher rooms: {bad}"


def test_nothing_imports_the_lab_kit():
    """kafkalab.labs (one module per notebook) stands on the library; no room of the library stands on it."""
    bad = [(str(path.relative_to(PKG)), line) for path in sorted(PKG.rglob("*.py"))
           if path.relative_to(PKG).parts[0] != "labs"
           for room, line in imported_rooms(path) if room == "labs"]
    assert not bad, f"modules outside the lab kit import kafkalab.labs: {bad}"


def test_lab_modules_do_not_import_each_other():
    """What two labs share lives in the library (viz, trace, cluster, ...), not in another lab's module."""
    bad = []
    for path in sorted((PKG / "labs").glob("lab*.py")):
        for node in ast.walk(parsed(path)):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            if any(n.startswith("kafkalab.labs.lab") for n in names):
                bad.append((path.name, node.lineno))
    assert not bad, f"lab modules import other labs' modules: {bad}"


def test_no_relative_imports_escape_a_room():
    for path in PKG.rglob("*.py"):
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.ImportFrom) and node.level > 1:
                pytest.fail(f"{path.relative_to(PKG)}:{node.lineno} uses a relative import across rooms")
