"""`python -m mockgpu.pcode` / `mockgpu pcode`: coverage report, and `show` for one entry."""
import argparse, json, sys
from mockgpu.pcode.tables import ARCHS, entries
from mockgpu.pcode.compile import try_program
from mockgpu.pcode.prose import prose
from mockgpu.pcode.errors import PcodeSyntaxError, PcodeError
__all__ = ["coverage", "main", "family"]

def family(name:str) -> str:
  """An ISA family (rdna3, rdna4, cdna) from itself or from a GPU arch the emulator models (gfx1100, gfx1201, gfx950, gfx942)."""
  if name in ARCHS: return name
  from mockgpu.emu.arch import ARCHS as GPUS   # the arch table: each GPU's ISA family
  if name in GPUS and GPUS[name].family in ARCHS: return GPUS[name].family
  raise argparse.ArgumentTypeError(f"unknown arch {name!r}: use an ISA family ({', '.join(ARCHS)}) or a GPU arch ({', '.join(GPUS)})")

def coverage(arch:str) -> dict:
  """Coverage of `arch`: counts and the list of entries each stage misses.

  Returns:
    {'arch', 'total', 'parsed', 'typed', 'compiled_c', 'compiled_py', 'prose', 'covered', 'missing': {stage: {name: reason}}}.
    'covered' counts entries that are compiled by both backends or listed in PROSE.
  """
  from mockgpu.pcode.cemit import _emit_all
  from mockgpu.pcode.pyeval import unsupported
  ents, pr = entries(arch), prose(arch)
  cfuncs, _, cerrs = _emit_all(arch)
  parsed = typed = cpy = 0
  missing = {"parse": {}, "type": {}, "c": {}, "python": {}}
  for name in ents:
    prog, err = try_program(arch, name)
    if err is None or not isinstance(err, PcodeSyntaxError): parsed += 1
    elif name not in pr: missing["parse"][name] = err.msg
    if err is None: typed += 1
    elif not isinstance(err, PcodeSyntaxError) and name not in pr: missing["type"][name] = err.msg
    if err is not None: continue
    if name in cfuncs: pass
    elif name in cerrs: missing["c"][name] = cerrs[name].msg
    if (why := unsupported(prog)) is None: cpy += 1
    else: missing["python"][name] = why
  covered = sum(1 for n in ents if n in pr or (n in cfuncs and n not in missing["python"]))
  return {"arch": arch, "total": len(ents), "parsed": parsed, "typed": typed, "compiled_c": len(cfuncs), "compiled_py": cpy,
          "prose": len(pr), "covered": covered, "missing": missing}

def _show(arch:str, name:str) -> int:
  from mockgpu.pcode.cemit import emit_op, metadata
  if name not in entries(arch):
    import difflib
    near = difflib.get_close_matches(name, entries(arch), 3) or difflib.get_close_matches(name.upper(), entries(arch), 3, 0.5)
    print(f"pcode show: {arch} has no entry {name!r}; " + (f"did you mean {', '.join(near)}?" if near else "names look like VOP2Op_V_ADD_F32_E32"),
          file=sys.stderr)
    return 2
  e = entries(arch)[name]
  print(f"// {arch} {name}{' (corrected, see corrections.FIXES)' if e.fixed else ''}")
  for i, f in enumerate(e.fixes): print(f"// fix {i} [{f.source}]: {f.reason}")
  print(f"{e.text}\n")
  print(json.dumps(metadata(arch, name), indent=1, default=sorted))
  try: print(emit_op(arch, name)[0])
  except PcodeError as ex: print(f"// not compiled: {ex}")
  return 0

def main(argv:list[str]|None=None) -> int:
  """Entry point. `coverage [--arch A] [--json]` prints per-arch coverage and what is missing; `show ARCH NAME`."""
  ap = argparse.ArgumentParser(prog="mockgpu pcode", description="AMD ISA pseudocode compiler tools")
  sub = ap.add_subparsers(dest="cmd", required=True, metavar="{coverage,show}")
  archs = f"{', '.join(ARCHS)} or gfx1100, gfx1201, gfx950, gfx942"
  c = sub.add_parser("coverage", help="entries total / parsed / typed / compiled per backend / prose, and what is missing")
  c.add_argument("--arch", type=family, action="append", help=f"only this ISA ({archs}); repeatable (default: all)")
  c.add_argument("--json", action="store_true", help="print the reports as JSON")
  s = sub.add_parser("show", help="pseudocode, metadata and generated C of one entry")
  s.add_argument("arch", type=family, help=f"the ISA: {archs}")
  s.add_argument("name", help="the entry, e.g. VOP2Op_V_ADD_F32_E32")
  args = ap.parse_args(argv)
  if args.cmd == "show": return _show(args.arch, args.name)
  reports = [coverage(a) for a in (args.arch or ARCHS)]
  if args.json:
    print(json.dumps(reports, indent=1))
  else:
    for r in reports:
      print(f"{r['arch']}: total {r['total']}  parsed {r['parsed']}  typed {r['typed']}  compiled C {r['compiled_c']}  "
            f"compiled Python {r['compiled_py']}  prose {r['prose']}  covered {r['covered']}/{r['total']}")
      for stage, miss in r["missing"].items():
        for n, why in miss.items(): print(f"  missing [{stage}] {n}: {why}")
  return 0 if all(r["covered"] == r["total"] for r in reports) else 1
