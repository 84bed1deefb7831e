"""The root of every error mockgpu raises. Each layer (pcode, emu, mock, tinygrad) has its own errors module whose classes
derive from MockGPUError, so callers can catch everything from mockgpu with one except clause. What the root modules below
every layer raise (`cbuild`: building generated C) is defined here."""
__all__ = ["MockGPUError", "BuildError"]

class MockGPUError(Exception):
  """Base class of all mockgpu errors. Messages name the thing (opcode, PC, address, ioctl, packet) and the next step."""

class BuildError(MockGPUError):
  """A generated C library cannot be built (`mockgpu.cbuild`): no C compiler ($MOCKGPU_CC, else `cc`), one that does not
  run, or a compile error (the message carries the compiler's first output lines and where the sources were kept)."""
