"""The root of every error mockgpu raises. Each layer (pcode, emu, mock, tinygrad) has its own errors module whose classes
derive from MockGPUError, so callers can catch everything from mockgpu with one except clause."""
__all__ = ["MockGPUError"]

class MockGPUError(Exception):
  """Base class of all mockgpu errors. Messages name the thing (opcode, PC, address, ioctl, packet) and the next step."""
