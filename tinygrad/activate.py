"""Activation: called from the .pth at interpreter start when DEV names a MOCK interface (see docs/activation.md)."""

def install() -> None:
  """Install the import hook that serves tinygrad's `test.mockgpu.*` imports from mockgpu."""
