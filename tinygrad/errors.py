"""Errors of the tinygrad integration layer (activation and the modules tinygrad imports)."""
from mockgpu.errors import MockGPUError

__all__ = ["IntegrationError", "ActivationError", "NotSupportedYet", "RunAsmError", "FirmwareError"]

class IntegrationError(MockGPUError):
  """Base class of errors raised by mockgpu's tinygrad integration."""

class ActivationError(IntegrationError):
  """What tinygrad asked for cannot run on this machine or this install, found when tinygrad first imports a mockgpu shim
  (`mockgpu.tinygrad.checks`): a tinygrad other than the one mockgpu serves, a DEV mockgpu does not emulate or spelled in a
  way tinygrad reads differently, a missing libLLVM or C compiler. The message is one line naming the fix."""

class NotSupportedYet(IntegrationError):
  """DEV names a mock target or mode that mockgpu does not emulate yet (e.g. MOCKPCI+AMD with VFIO=1). Pick a supported one
  (MOCKKFD+AMD)."""
  def __init__(self, target:str, hint:str="use DEV=MOCKKFD+AMD (or MOCK+AMD) for an emulated AMD GPU"):
    self.target = target
    super().__init__(f"{target} is not supported yet by mockgpu: {hint}")

class RunAsmError(IntegrationError):
  """`test.mockgpu.amd.emu.run_asm` was called with arguments it cannot serve (unknown arch, empty code, a grid or block the
  emulator rejects). What the kernel itself does wrong is not raised: run_asm reports it and returns a non-zero code."""

class FirmwareError(IntegrationError):
  """`mockgpu firmware` cannot read a firmware source: a folder that does not exist, a .deb that dpkg-deb cannot unpack or
  that holds no lib/firmware/amdgpu, a compressed blob whose decompressor is missing, or a tinygrad whose fetch_fw no longer
  downloads the way this module mirrors. The message names the file and the fix."""
