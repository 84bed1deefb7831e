"""Fixtures for the ISA tests; the helpers live in isa_harness.py (a unique module name, safe under pytest-xdist)."""
import os
import pytest
from isa_harness import Bufs

@pytest.fixture
def bufs(): return Bufs

@pytest.fixture(autouse=True)
def interpreter_unless_asked(monkeypatch):
  """The ISA tests check the interpreter unless a test (or the caller's $MOCKGPU_EMU_XLAT) asks for the translator: with the
  default (auto), a translation another test left in the library cache would run a kernel's later dispatches instead."""
  if "MOCKGPU_EMU_XLAT" not in os.environ: monkeypatch.setenv("MOCKGPU_EMU_XLAT", "off")
