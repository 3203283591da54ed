"""The benchmark module (bench/diagnose.py) as a fixture: its corpus readers, its split of the
pooled corpus and the template catalog it renders are what the corpus tests check."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "diagnose.py"


@pytest.fixture(scope="session")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_diagnose", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
