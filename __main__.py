"""`mockgpu` command line: one entry point, a subcommand per layer. Each subcommand lives in its layer's own `__main__`/cli."""
import importlib, sys

# subcommand -> (module with a `main(argv) -> int`, one-line help)
COMMANDS = {
  "demo": ("mockgpu.tinygrad.demo", "run tinygrad on the mock AMD GPU and print a short report"),
  "pcode": ("mockgpu.pcode.cli", "pseudocode compiler tools (coverage, show)"),
  "emu": ("mockgpu.emu.cli", "run raw kernels or code objects, benchmarks"),
  "fuzz": ("mockgpu.tinygrad.fuzz.cli", "fuzz tinygrad: symbolic, idiv, oob, render"),
  "bench": ("mockgpu.tinygrad.bench", "full-stack benchmarks of tinygrad on the mock GPUs"),
  "ci": ("mockgpu.tinygrad.ci", "run tinygrad's mock-GPU CI jobs on its test tree, per-test results and baselines"),
}

def usage() -> str:
  return "usage: mockgpu COMMAND [args]\n\ncommands:\n" + "\n".join(f"  {k:8s} {h}" for k, (_, h) in COMMANDS.items())

def main(argv: list[str] | None = None) -> int:
  argv = sys.argv[1:] if argv is None else argv
  if not argv or argv[0] in ("-h", "--help"):
    print(usage())
    return 0
  if argv[0] not in COMMANDS:
    print(f"mockgpu: unknown command {argv[0]!r}\n\n{usage()}", file=sys.stderr)
    return 2
  try: mod = importlib.import_module(COMMANDS[argv[0]][0])
  except ModuleNotFoundError as e:
    if not e.name or not e.name.startswith("mockgpu."): raise
    print(f"mockgpu: command {argv[0]!r} is not available in this build ({e.name} is missing)", file=sys.stderr)
    return 2
  return int(mod.main(argv[1:]) or 0)

if __name__ == "__main__": sys.exit(main())
