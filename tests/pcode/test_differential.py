"""Backend 1 (pyeval) vs backend 2 (C) on random machine states, for every entry of all three archs that runs standalone
(every SALU/VALU entry, plus memory/LDS/lane entries through the harness's memory and register files). Deterministic in
CI (hypothesis derandomized, per-op seeds from the op name); the longer campaign is marked slow."""
import random, zlib
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck
from mockgpu.pcode.tables import ARCHS, entries
from mockgpu.pcode.prose import is_prose
from mockgpu.pcode.difftest import ALU_CLASSES, alu_ops, random_state, diff_once, uses_vgpr

pytestmark = pytest.mark.differential   # mockgpu emu fidelity: backend-vs-backend, not known answers

def check_ops(lib, arch, ops, seed, n):
  bad, ran = {}, set()
  for op in ops:
    rng = random.Random(seed ^ zlib.crc32(op.encode()))
    for _ in range(n):
      d = diff_once(lib, arch, op, random_state(rng, uses_vgpr(arch, op)))
      if d is None: continue
      ran.add(op)
      if d:
        bad[op] = {k: (hex(a), hex(b)) for k, (a, b) in d.items()}
        break
  return bad, ran

def runnable(clib, arch):
  lib = clib(arch)
  return lib, [op for op in alu_ops(arch, None) if op in lib.index]

@pytest.mark.parametrize("arch", ARCHS)
def test_every_alu_entry_is_diffed(clib, arch):
  lib, ops = runnable(clib, arch)
  alu = {n for n, e in entries(arch).items() if e.cls in ALU_CLASSES and not is_prose(arch, n)}
  assert len(alu - set(ops)) <= 20, sorted(alu - set(ops))

@pytest.mark.parametrize("arch", ARCHS)
@settings(max_examples=1, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1))
def test_backends_agree(clib, arch, seed):
  lib, ops = runnable(clib, arch)
  bad, ran = check_ops(lib, arch, ops, seed, 3)
  assert bad == {}
  assert len(ran) >= len(ops) - 10          # a few ops address memory through register contents and leave the harness

@pytest.mark.slow
@pytest.mark.parametrize("arch", ARCHS)
@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1))
def test_backends_agree_campaign(clib, arch, seed):
  lib, ops = runnable(clib, arch)
  assert check_ops(lib, arch, ops, seed, 5)[0] == {}
