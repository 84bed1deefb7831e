"""pytest plugin (entry point `mockgpu`): reports in the session header the installed tinygrad, DEV, and whether activation is
on in this interpreter and what it emulates. Imports neither tinygrad nor the mocks (the header must not change what the tests
see). The off switch for activation is `MOCKGPU=0`: `-p no:mockgpu` only drops this header, because the `.pth` hook has already
run when pytest starts (docs/guide.md "pytest")."""
import os, sys
import mockgpu
from mockgpu.tinygrad.activate import enabled, MockGPUFinder
from mockgpu.tinygrad.checks import tinygrad_version

__all__ = ["pytest_report_header", "describe"]

def describe(env=os.environ, installed:bool=True) -> str:
  """One line: mockgpu and the installed tinygrad's version, DEV, and the mock targets DEV selects (`MOCKKFD+AMD -> gfx1100 x6`).

  Args:
    env: the environment to describe. installed: whether the activation hook is installed in this interpreter.
  """
  dev, targets = env.get("DEV", ""), []
  for t in filter(None, dev.split(";")):
    iface, _, rest = t.rpartition("+")
    if iface.split(":")[0].startswith("MOCK"):
      parts = rest.split(":")
      emulated = (parts[2] if len(parts) > 2 and parts[2] else "gfx1100") if parts[0].upper() == "AMD" else \
        "PTX engine" if parts[0].upper() in ("CUDA", "NV") and iface == "MOCK" else "not supported yet"
      targets.append(f"{t} -> {emulated}" + (f" x{env.get('MOCKGPU_GPUS', '6')}" if parts[0].upper() == "AMD" else ""))
  ver, pkg = tinygrad_version()
  tg = "tinygrad not installed" if pkg is None else f"tinygrad of unknown version at {pkg}" if ver is None else f"tinygrad {ver}" + ("" if ver == mockgpu.TINYGRAD_VERSION else
                                                                        f" (mockgpu serves {mockgpu.TINYGRAD_VERSION}: tests will fail)")
  state = "off" if not enabled(env) else ("on: " + ", ".join(targets)) if installed else \
          "NOT installed in this interpreter (set DEV before Python starts; is mockgpu-activate.pth in site-packages?)"
  return f"mockgpu {mockgpu.__version__} ({tg}); DEV={dev or '<unset>'}; activation {state}"

def pytest_report_header(config): return describe(installed=any(isinstance(f, MockGPUFinder) for f in sys.meta_path))
