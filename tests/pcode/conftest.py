import functools, pytest
from mockgpu.pcode.cabi import ArchLib

@functools.cache
def arch_lib(arch:str) -> ArchLib:
  """All compilable entries of `arch`, compiled once per process (and cached on disk by content hash)."""
  return ArchLib(arch)

@pytest.fixture(scope="session")
def clib():
  return arch_lib
