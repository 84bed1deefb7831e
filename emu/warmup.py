"""`mockgpu warm-up [--arch gfx1100 ...]`: build (or verify) the emulator's C library of each arch now, e.g. in a CI step
before the cache directory is saved, so test runs never wait for the one-time build (docs/emu.md, "CI cache")."""
from __future__ import annotations
import argparse, sys

__all__ = ["main"]

def main(argv:list[str]|None=None) -> int:
  """Entry point. Returns 0, 1 if a library cannot be built (one line naming the arch and the cause), 2 for usage errors."""
  from mockgpu.emu.arch import ARCHS
  archs = [a for a, spec in ARCHS.items() if spec.c_backend]
  p = argparse.ArgumentParser(prog="mockgpu warm-up", description="prebuild the emulator's per-arch C library into the cache "
                              "($MOCKGPU_CACHE, $XDG_CACHE_HOME/mockgpu or ~/.cache/mockgpu), e.g. for a CI cache")
  p.add_argument("--arch", nargs="+", action="extend", choices=[*archs, "all"], metavar="ARCH",
                 help=f"GPU archs to build: {', '.join(archs)} or all (default: gfx1100, the arch of DEV=MOCKKFD+AMD)")
  p.add_argument("--force", action="store_true", help="rebuild even if a verified library is cached")
  a = p.parse_args(argv)
  want = archs if "all" in (a.arch or []) else list(dict.fromkeys(a.arch or ["gfx1100"]))
  from mockgpu.emu.arch import library_arch
  from mockgpu.emu.build import build, cache_dir
  from mockgpu.errors import MockGPUError
  for name in want:
    if (lib_name:=library_arch(ARCHS[name]).name) != name and lib_name in want:   # built (or to be built) under its own name
      print(f"{name}: runs on {lib_name}'s library (the same generated C)")
      continue
    try: lib = build(ARCHS[name], force=a.force)
    except MockGPUError as e:
      print(f"mockgpu warm-up: {name}: {type(e).__name__}: {str(e).splitlines()[0]}", file=sys.stderr)
      return 1
    print(f"{name}: {lib.path} ({f'built in {lib.build_seconds:.1f} s' if lib.built else 'cached, verified'})")
  print(f"cache: {cache_dir()}")
  return 0

if __name__ == "__main__": sys.exit(main())
