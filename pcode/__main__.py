"""`python -m mockgpu.pcode ...`: see mockgpu.pcode.cli."""
import sys
from mockgpu.pcode.cli import main

if __name__ == "__main__": sys.exit(main())
