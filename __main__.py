"""`mockgpu` command line: one entry point, a subcommand per layer. Each subcommand lives in its layer's own `__main__`/cli."""
import importlib, os, platform, sys

# subcommand -> (module with a `main(argv) -> int`, one-line help)
COMMANDS = {
  "demo": ("mockgpu.tinygrad.demo", "run tinygrad on the mock AMD GPU and print a short report"),
  "pcode": ("mockgpu.pcode.cli", "pseudocode compiler tools (coverage, show)"),
  "emu": ("mockgpu.emu.cli", "run raw kernels or code objects, benchmarks, the ISA fidelity report"),
  "fuzz": ("mockgpu.tinygrad.fuzz.cli", "fuzz tinygrad: symbolic, idiv, oob, render (needs the fuzz extra: pip install 'mockgpu[fuzz]')"),
  "bench": ("mockgpu.tinygrad.bench", "full-stack benchmarks of tinygrad on the mock GPUs"),
  "ci": ("mockgpu.tinygrad.ci", "run tinygrad's mock-GPU CI jobs on its test tree, per-test results and baselines"),
  "replay": ("mockgpu.tinygrad.replay", "capture tinygrad's kernel launches on the mock AMD GPUs, replay them on the emulator, diff captures"),
  "firmware": ("mockgpu.tinygrad.firmware", "fill tinygrad's AM firmware cache offline (/lib/firmware or a .deb)"),
  "gemm": ("mockgpu.emu.gemm_cli", "validate an assembly GEMM kernel on the emulator: shape sweep, error bound, first wrong element"),
  "warm-up": ("mockgpu.emu.warmup", "prebuild the emulator's per-arch C library into the cache (for CI caches)"),
}

def usage() -> str:
  return ("usage: mockgpu COMMAND [args]   (mockgpu COMMAND --help: its options; mockgpu --version)\n\ncommands:\n" +
          "\n".join(f"  {k:8s} {h}" for k, (_, h) in COMMANDS.items()))

def version() -> str:
  """One line: mockgpu's version, the installed tinygrad's (and the one mockgpu serves if they differ), Python's."""
  import mockgpu
  from mockgpu.tinygrad.checks import tinygrad_version
  tg, pkg = tinygrad_version()
  tgs = "not installed" if pkg is None else (tg or f"of unknown version at {pkg}")
  if tg is not None and tg != mockgpu.TINYGRAD_VERSION: tgs += f" (mockgpu serves {mockgpu.TINYGRAD_VERSION}: pip install tinygrad=={mockgpu.TINYGRAD_VERSION})"
  return f"mockgpu {mockgpu.__version__}, tinygrad {tgs}, Python {platform.python_version()}"

def main(argv: list[str] | None = None) -> int:
  """Entry point of the `mockgpu` console script. Returns the exit code: 2 for usage errors, else the subcommand's."""
  argv = sys.argv[1:] if argv is None else argv
  if argv and argv[0] in ("-h", "--help"):
    print(usage())
    return 0
  if argv and argv[0] in ("-V", "--version"):
    print(version())
    return 0
  if not argv:
    print(f"{usage()}\n\nmockgpu: give a COMMAND", file=sys.stderr)
    return 2
  if argv[0] not in COMMANDS:
    print(f"mockgpu: unknown command {argv[0]!r}\n\n{usage()}", file=sys.stderr)
    return 2
  try: mod = importlib.import_module(COMMANDS[argv[0]][0])
  except ModuleNotFoundError as e:
    if not e.name or not e.name.startswith("mockgpu."): raise
    print(f"mockgpu: command {argv[0]!r} is not available in this build ({e.name} is missing)", file=sys.stderr)
    return 2
  try: return int(mod.main(argv[1:]) or 0)
  except BrokenPipeError:   # the reader of stdout went away (`mockgpu pcode show ... | head`): stop quietly like other tools
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 1
  except KeyboardInterrupt:
    print(f"mockgpu {argv[0]}: interrupted", file=sys.stderr)
    return 130

if __name__ == "__main__": sys.exit(main())
