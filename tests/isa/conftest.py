"""Fixtures for the ISA tests; the helpers live in isa_harness.py (a unique module name, safe under pytest-xdist)."""
import pytest
from isa_harness import Bufs

@pytest.fixture
def bufs(): return Bufs
