"""`test.mockgpu.cuda.cuda`: the CUDA driver API tinygrad uses under DEV=MOCK+CUDA, which is not emulated yet.
Importing succeeds (tinygrad imports it at module load); using any driver function raises NotSupportedYet."""
from mockgpu.tinygrad.errors import NotSupportedYet

__all__: list[str] = []

def __getattr__(name:str):
  if name.startswith("__"): raise AttributeError(name)
  raise NotSupportedYet("MOCK+CUDA", f"cuda.{name} is not emulated; NV/CUDA mocks come later (use DEV=MOCKKFD+AMD)")
