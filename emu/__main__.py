"""`python -m mockgpu.emu ...`: see mockgpu.emu.cli."""
import sys
from mockgpu.emu.cli import main

if __name__ == "__main__": sys.exit(main())
