"""`mockgpu gemm KERNEL`: validate an assembly GEMM on the emulator over a sweep of shapes and dtypes (docs/gemm.md)."""
from __future__ import annotations
import argparse, json, pathlib, sys, time

__all__ = ["main", "parser", "format_result"]

def _shape(s: str) -> tuple[int, int, int]:
  try: m, n, k = (int(x) for x in s.lower().split("x"))
  except ValueError: raise argparse.ArgumentTypeError(f"{s!r}: expected MxNxK, e.g. 64x64x128") from None
  return m, n, k

def _dtypes(s: str) -> tuple[str, str, str]:
  p = tuple(s.split("/"))
  if len(p) != 3: raise argparse.ArgumentTypeError(f"{s!r}: expected INPUT/ACCUMULATE/OUTPUT, e.g. f16/f32/f32")
  return p

def _g(x: float) -> str: return f"{x:.3g}"

def format_result(r) -> str:
  """The report of one run: a line with the verdict, errors, instruction mix, LDS traffic and time; on failure a second line
  with the first wrong element and the store that wrote it, or the fault."""
  head = f"{'PASS' if r.ok else 'FAIL'}  {'/'.join(r.dtypes):13s} M={r.M} N={r.N} K={r.K}"
  if r.fault is not None: return f"{head}  kernel faulted\n        {r.fault}"
  mixs = " ".join(f"{k} {n}" for k, n in r.mix.items() if n)
  line = (f"{head}  max_abs {_g(r.max_abs)} max_ulp {_g(r.max_ulp)} ({_g(r.max_ratio)} of bound)  {r.instructions} insts: {mixs}  "
          f"lds r/w {r.lds_read}/{r.lds_written} B  {r.seconds:.2f} s" + (f"  oob reads {r.oob_reads}" if r.oob_reads else ""))
  if r.ok: return line
  f, w = r.first, r.first["writer"]
  where = ("never written (no store hit it)" if f["stores"] == 0 else
           f"written by workgroup {w.workgroup} wave {w.wave} lane {w.lane} at pc {w.pc:#x}: {w.disasm}" +
           (f" (the last of {f['stores']} writes)" if f["stores"] > 1 else ""))
  got = "fill pattern (NaN)" if f["unwritten"] else _g(f["got"])
  return (f"{line}\n        {r.bad} of {r.M * r.N} elements out of bound ({r.unwritten} never written); first wrong C[{f['row']},{f['col']}] = {got}, "
          f"want {_g(f['want'])} (bound {_g(f['bound'])}): {where}")

def parser() -> argparse.ArgumentParser:
  """Returns: the argument parser of `mockgpu gemm`."""
  from mockgpu.emu.gemm import FIXTURES
  shipped = ", ".join(sorted(p.stem for p in FIXTURES.iterdir() if p.suffix in (".py", ".json")))
  p = argparse.ArgumentParser(prog="mockgpu gemm", description="validate an assembly GEMM kernel on the emulator: a sweep of shapes and dtypes "
                              "against a float64 reference with an error bound from K and the accumulation type (docs/gemm.md)")
  p.add_argument("kernel", metavar="KERNEL", help=f"a shipped example ({shipped}), a .py file or module defining KERNEL = GemmKernel(...), "
                 "or a .json description of a code object")
  p.add_argument("--shape", type=_shape, action="append", metavar="MxNxK", help="a problem size (repeatable; default: the kernel's sweep)")
  p.add_argument("--dtype", type=_dtypes, action="append", metavar="IN/ACC/OUT", help="dtypes to run (repeatable; default: all the kernel supports)")
  p.add_argument("--seed", type=int, default=0, help="input data seed (default 0)")
  p.add_argument("--backend", default="c", choices=("c", "python"), help="emulator backend (default c)")
  p.add_argument("--timeout", type=float, help="wall-clock limit per run in seconds")
  p.add_argument("--json", type=pathlib.Path, metavar="FILE", help="also write the results as JSON (docs/gemm.md, 'JSON report')")
  p.add_argument("--ops", action="store_true", help="print the per-opcode counts of each run")
  p.add_argument("--list", action="store_true", help="print the kernel's claims and its default sweep, run nothing")
  return p

def main(argv: list[str] | None = None) -> int:
  """Entry point. Returns 0 if every run passed, 1 if any failed (out of bound or a fault), 2 for usage errors."""
  a = parser().parse_args(argv)
  from mockgpu.emu.gemm import load_kernel, sweep_shapes, validate_one
  from mockgpu.errors import MockGPUError
  try: k = load_kernel(a.kernel)
  except MockGPUError as e:
    print(f"mockgpu gemm: {e}", file=sys.stderr)
    return 2
  shapes, dts = a.shape or sweep_shapes(k), a.dtype or list(k.dtypes)
  bad = [f"{m}x{n}x{kk}" for m, n, kk in shapes if not k.supports(m, n, kk)] + ["/".join(d) for d in dts if tuple(d) not in k.dtypes]
  claims = (f"{k.name} on {k.arch}: dtypes {', '.join('/'.join(d) for d in k.dtypes)}; B {k.b_layout}; tile {'x'.join(map(str, k.tile))}; " +
            (f"only sizes {' '.join('x'.join(map(str, x)) for x in k.shapes)}" if k.fixed_shapes else f"sizes multiples of {'x'.join(map(str, k.multiple))}"))
  if a.list:
    print(f"{claims}\ndefault sweep: {' '.join('x'.join(map(str, s)) for s in sweep_shapes(k))}")
    return 0
  if bad:
    print(f"mockgpu gemm: {k.name} does not claim {', '.join(bad)} ({claims}); ask for what it supports", file=sys.stderr)
    return 2
  runs = [(s, d) for s in shapes for d in dts]
  print(f"{claims}\n{len(shapes)} shapes x {len(dts)} dtypes, seed {a.seed}, backend {a.backend}", flush=True)
  t0, results = time.perf_counter(), []
  for i, (s, d) in enumerate(runs):
    try: r = validate_one(k, *s, tuple(d), seed=a.seed, backend=a.backend, timeout=a.timeout)
    except MockGPUError as e:   # the kernel or its build is broken beyond one run (a bad launch description)
      print(f"mockgpu gemm: {'x'.join(map(str, s))} {'/'.join(d)}: {type(e).__name__}: {e}", file=sys.stderr)
      return 1
    results.append(r)
    print(f"[{i + 1:{len(str(len(runs)))}d}/{len(runs)}] {format_result(r)}", flush=True)
    if a.ops: print("\n".join(f"        {n:8d} {op}" for op, n in sorted(r.op_counts.items(), key=lambda kv: -kv[1])), flush=True)
  failed = sum(not r.ok for r in results)
  print(f"{len(results) - failed} passed, {failed} failed, {len(results)} runs in {time.perf_counter() - t0:.1f} s "
        f"(emulator {sum(r.seconds for r in results):.1f} s)")
  if a.json:
    a.json.write_text(json.dumps({"kernel": k.name, "arch": k.arch, "seed": a.seed, "backend": a.backend, "passed": len(results) - failed,
                                  "failed": failed, "results": [r.as_dict() for r in results]}, indent=1) + "\n")
  return 1 if failed else 0
