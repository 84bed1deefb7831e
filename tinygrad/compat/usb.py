"""`test.mockgpu.usb.MockUSB3`: tinygrad imports it for every AMD target; only MOCKUSB+AMD uses it, which is not emulated
yet, so any use (constructing it, `MockUSB3.list_devices(...)`) raises NotSupportedYet."""
from mockgpu.tinygrad.errors import NotSupportedYet

__all__ = ["MockUSB3"]

class _Unsupported(type):
  def __getattr__(cls, name:str):
    if name.startswith("__"): raise AttributeError(name)
    raise NotSupportedYet("MOCKUSB+AMD", f"USB3.{name} is not emulated; use DEV=MOCKKFD+AMD for an emulated AMD GPU")

class MockUSB3(metaclass=_Unsupported):
  """Stands in for tinygrad's USB3 transport under MOCK interfaces."""
  def __init__(self, *args, **kwargs): raise NotSupportedYet("MOCKUSB+AMD")
