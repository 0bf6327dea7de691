"""The package docstring's map of kafkalab.records cannot drift from the modules it describes."""
from __future__ import annotations

import importlib
import pkgutil
import re

import kafkalab.records as records


def _map() -> dict:
    rooms = {}
    for line in re.split(r"\n(?=\* )", records.__doc__):
        m = re.match(r"\* :mod:`\.(\w+)` -- (.*)", line, re.S)
        if m:
            rooms[m.group(1)] = re.findall(r"``(\w+)``", m.group(2).split("\n\n")[0])
    return rooms


def test_every_module_is_on_the_map_and_every_name_on_it_lives_there():
    rooms = _map()
    modules = {m.name for m in pkgutil.iter_modules(records.__path__)}
    assert set(rooms) == modules
    for module, names in rooms.items():
        mod = importlib.import_module(f"kafkalab.records.{module}")
        for name in names:
            assert hasattr(mod, name), f"{module} has no {name}"
            assert name in records.__all__, f"{name} is not re-exported"


def test_everything_exported_exists():
    assert all(hasattr(records, name) for name in records.__all__)
    assert len(records.__all__) == len(set(records.__all__))
