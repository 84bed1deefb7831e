"""Backend 1 (pyeval) vs backend 2 (C) on random machine states, for every SALU/VALU entry of all three archs that runs
standalone. Deterministic in CI (hypothesis derandomized, seeds derived from the op name); longer campaign marked slow."""
import random, zlib
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck
from mockgpu.pcode.tables import ARCHS, entries
from mockgpu.pcode.prose import is_prose
from mockgpu.pcode.difftest import ALU_CLASSES, alu_ops, random_state, diff_once

def check_ops(lib, arch, ops, seed, n):
  bad = {}
  for op in ops:
    rng = random.Random(seed ^ zlib.crc32(op.encode()))
    for _ in range(n):
      s = random_state(rng)
      d = diff_once(lib, arch, op, s)
      if d:
        bad[op] = {k: (hex(a), hex(b)) for k, (a, b) in d.items()}
        break
  return bad

def runnable(clib, arch):
  lib = clib(arch)
  return lib, [op for op in alu_ops(arch) if op in lib.index]

@pytest.mark.parametrize("arch", ARCHS)
def test_alu_coverage_of_differential(clib, arch):
  lib, ops = runnable(clib, arch)
  alu = [n for n, e in entries(arch).items() if e.cls in ALU_CLASSES and not is_prose(arch, n)]
  assert len(ops) >= 0.9 * len(alu), f"only {len(ops)} of {len(alu)} ALU entries are diffed"

@pytest.mark.parametrize("arch", ARCHS)
@settings(max_examples=2, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1))
def test_backends_agree(clib, arch, seed):
  lib, ops = runnable(clib, arch)
  assert check_ops(lib, arch, ops, seed, 2) == {}

@pytest.mark.slow
@pytest.mark.parametrize("arch", ARCHS)
@settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1))
def test_backends_agree_campaign(clib, arch, seed):
  lib, ops = runnable(clib, arch)
  assert check_ops(lib, arch, ops, seed, 10) == {}
