"""`mockgpu bench --boot`'s probe: a fresh interpreter opens the mock device and reports the arch; a failure is one line."""
import pytest
from mockgpu.tinygrad.bench import boot

def test_boot_probe_opens_the_device():
  t, arch = boot("MOCKKFD+AMD::gfx1201", {}, 1)
  assert arch == "gfx1201" and 0 < t < 600

def test_boot_probe_failure_names_the_cause():
  with pytest.raises(RuntimeError, match="gfx9999"): boot("MOCKKFD+AMD::gfx9999", {}, 1)
