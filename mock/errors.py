"""Errors of the mock devices (KFD driver model, AMD GPU model). All derive from mockgpu.errors.MockGPUError.

Kernel-style failures of an ioctl or mmap are *not* errors of this module: they are `OSError(errno, message)`, exactly what
tinygrad sees from a real driver. The classes here describe what the *GPU model* found wrong (a malformed packet, an
unknown architecture) and are what the device thread prints when it stops a queue."""
from mockgpu.errors import MockGPUError

__all__ = ["MockDeviceError", "UnknownArchError", "PacketError", "QueueFault", "PTXError", "USBError"]

class MockDeviceError(MockGPUError):
  """Base class of errors raised by the mock devices."""

class UnknownArchError(MockDeviceError):
  """DEV names an AMD arch without a profile in mockgpu.mock.profiles. Use one of the listed archs."""
  def __init__(self, arch:str, known:list[str]):
    self.arch = arch
    super().__init__(f"no mock GPU profile for arch={arch!r}; known: {', '.join(known)} (e.g. DEV=MOCKKFD+AMD::{known[0]})")

class PacketError(MockDeviceError):
  """A command packet the GPU model cannot execute (unknown opcode, bad length, unsupported mode). The queue stops and the
  KFD hardware-exception event fires, so tinygrad raises its `HW fault` error; fix the packet or model the opcode."""
  def __init__(self, engine:str, where:str, header:int, msg:str):
    self.engine, self.where, self.header = engine, where, header
    super().__init__(f"{engine} packet at {where} header=0x{header:08X}: {msg}")

class QueueFault(MockDeviceError):
  """A queue touched GPU memory that is not mapped to its GPU (an MMU fault). Reported through the KFD memory event."""
  def __init__(self, engine:str, addr:int, size:int, what:str, why:str="is not mapped to this GPU (MMU fault)"):
    self.engine, self.addr, self.size = engine, addr, size
    super().__init__(f"{engine}: {what} addr=0x{addr:X} size={size} {why}")

class PTXError(MockDeviceError):
  """PTX the mock cannot run: malformed text, or an instruction form outside the modelled subset (docs/ptx.md lists it).
  The message names the kernel, the source line and the statement."""

class USBError(MockDeviceError):
  """A transfer the mock USB-to-PCIe bridge (DEV=MOCKUSB+AMD) cannot take: a request code, length or field its protocol
  (as tinygrad 0.14.0 speaks it) does not allow, a bulk transfer nothing armed, an address outside the modelled XDATA or the
  GPU's BARs, or an armed SRAM read the GPU never completed. Raised to tinygrad from the USB call; the message names the
  request and its fields."""
