"""`test.mockgpu.usb.MockUSB3`: tinygrad imports it for every AMD target and uses it for DEV=MOCKUSB+AMD in place of its
libusb transport `USB3` (runtime/support/usb.py). Same methods and return types; the transfers go to the mock USB bridge
(`mockgpu.mock.am.usb.ASM24`) in front of the mock PCI GPU. Asynchronous transfers complete when submitted, so `bulk_wait`
returns at once (as tinygrad's does for a tag that completed). Under any other DEV no device is listed."""
from __future__ import annotations
import itertools, os
from mockgpu.usage import timed

__all__ = ["MockUSB3"]

VENDOR, PRODUCT = 0xADD1, 0x0001   # the ids tinygrad's USBIface looks for first (its custom ASM24 firmware)

def _address() -> str: return f"usb:{os.getpid()}-1"   # "usb:<bus>-<address>", the bus being this process's id

def _usb_dev() -> bool:
  from tinygrad.helpers import DEV
  return any(t.interface == "MOCKUSB" for t in DEV.value)

class MockUSB3:
  """Stands in for tinygrad's USB3 under MOCK interfaces: one mock device (the process's `ASM24`) under DEV=MOCKUSB."""
  product = "custom (mockgpu ASM24 model)"   # tinygrad's USB3 accepts products starting with "custom" or "AS2462"

  @classmethod
  def list_devices(cls, vendor:int, dev:int) -> list[tuple[str, str]]:
    """[(handle, "usb:<bus>-<address>")] of the mock device if (vendor, dev) are its ids and DEV is MOCKUSB, else []. The
    "bus" is this process's id, so concurrent processes never share tinygrad's per-device lock file."""
    return [("mockgpu-asm24", _address())] if (vendor, dev) == (VENDOR, PRODUCT) and _usb_dev() else []

  def __init__(self, dev, *args, ctrl=None, **kwargs):
    """`dev`: a handle from list_devices; `ctrl`: the controller (an `ASM24`; default the process's: tests pass their own)."""
    from mockgpu.mock.am.pci import drop_lock_at_exit
    from mockgpu.mock.am.usb import system
    if dev != "mockgpu-asm24": raise ValueError(f"MockUSB3({dev!r}): not a handle from MockUSB3.list_devices")
    self.ctrl, self._tags = ctrl or system(), itertools.count(1)
    if ctrl is None: drop_lock_at_exit(_address())

  # every transfer is a driver call into the mock (mockgpu.usage, the "mock s" of `mockgpu ci`)
  def control_write(self, request:int, value:int=0, index:int=0, data:bytes=b'', timeout:int=1000):
    with timed("driver_s"): self.ctrl.control_out(request, value, index, bytes(data))
  def control_read(self, request:int, length:int, value:int=0, index:int=0, timeout:int=1000) -> memoryview:
    with timed("driver_s"): return memoryview(self.ctrl.control_in(request, length, value, index))
  def bulk_write(self, payload:bytes, timeout:int=1000):
    with timed("driver_s"): self.ctrl.bulk_out(bytes(payload))
  def bulk_read(self, length:int, timeout:int=1000) -> memoryview:
    with timed("driver_s"): return memoryview(self.ctrl.bulk_in(length, timeout))

  def bulk_write_async(self, payload:memoryview, timeout:int=10000) -> int:
    self.bulk_write(payload, timeout)
    return next(self._tags)
  def control_write_async(self, request:int, value:int=0, index:int=0, data:bytes=b"", timeout:int=1000) -> int:
    self.control_write(request, value, index, data, timeout)
    return next(self._tags)
  def control_read_async(self, request:int, length:int, value:int=0, index:int=0, timeout:int=1000) -> tuple[int, memoryview]:
    return next(self._tags), memoryview(bytearray(self.control_read(request, length, value, index, timeout)))
  def bulk_wait(self, tag:int|None): pass
