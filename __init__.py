"""mockgpu: run the unmodified tinygrad GPU runtime (PyPI tinygrad==0.14.0) on emulated GPUs.

Layers, in hardware order: `mockgpu.pcode` (ISA semantics compiled from AMD's pseudocode), `mockgpu.emu` (the compute
units), `mockgpu.mock` (driver interfaces, command processor, DMA), `mockgpu.tinygrad` (activation, pytest plugin, fuzzers).

PYTEST_DONT_REWRITE: pytest marks the packages of a plugin's distribution for assertion rewriting and warns about those already
imported; with DEV naming a MOCK target the activation hook imports this package before pytest starts, and it has no asserts
for pytest to rewrite.
"""
from mockgpu.errors import MockGPUError

__version__ = "0.1.0"
TINYGRAD_VERSION = "0.14.0"
__all__ = ["MockGPUError", "__version__", "TINYGRAD_VERSION"]
