"""pytest plugin (entry point `mockgpu`): reports in the session header whether activation is on and what it emulates.
Imports neither tinygrad nor the mocks (the header must not change what the tests see)."""
import os
import mockgpu
from mockgpu.tinygrad.activate import enabled

__all__ = ["pytest_report_header", "describe"]

def describe(env=os.environ) -> str:
  """One line: mockgpu and tinygrad versions, DEV, and the mock targets DEV selects (`MOCKKFD+AMD -> gfx1100 x6`)."""
  dev, targets = env.get("DEV", ""), []
  for t in filter(None, dev.split(";")):
    iface, _, rest = t.rpartition("+")
    if iface.split(":")[0].startswith("MOCK"):
      parts = rest.split(":")
      emulated = (parts[2] if len(parts) > 2 and parts[2] else "gfx1100") if parts[0].upper() == "AMD" else \
        "PTX engine" if parts[0].upper() in ("CUDA", "NV") and iface == "MOCK" else "not supported yet"
      targets.append(f"{t} -> {emulated}" + (f" x{env.get('MOCKGPU_GPUS', '6')}" if parts[0].upper() == "AMD" else ""))
  state = ("on: " + ", ".join(targets)) if enabled(env) else "off"
  return f"mockgpu {mockgpu.__version__} (tinygrad {mockgpu.TINYGRAD_VERSION}); DEV={dev or '<unset>'}; activation {state}"

def pytest_report_header(config): return describe()
