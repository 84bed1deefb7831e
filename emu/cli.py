"""`mockgpu emu ...` / `python -m mockgpu.emu ...`: benchmark, run a raw kernel or an ELF code object, rebuild fixtures, and the
fidelity report (which instructions follow AMD's pseudocode, a correction, hand-written prose or are unsupported, and how tested)."""
from __future__ import annotations
import argparse, pathlib, sys
from mockgpu.argtypes import positive_int, nonnegative_int
from mockgpu.emu.facts import SREG_VCC_LO

__all__ = ["main", "parser"]

def _dims(s: str) -> tuple[int, int, int]:
  try: p = [int(x, 0) for x in s.split(",")]
  except ValueError: raise argparse.ArgumentTypeError(f"{s!r}: expected up to three positive integers, e.g. 4,8") from None
  if not 1 <= len(p) <= 3 or min(p) < 1: raise argparse.ArgumentTypeError(f"{s!r}: expected up to three positive integers, e.g. 4,8")
  return tuple((p + [1, 1])[:3])

def _int0(s: str) -> int:
  try: return int(s, 0)
  except ValueError: raise argparse.ArgumentTypeError(f"{s!r} is not an integer (0x.. for hex)") from None

def _bytes(s: str) -> int:
  if (n := _int0(s)) < 1: raise argparse.ArgumentTypeError(f"{s!r}: a buffer needs at least one byte")
  return n

def _run(a) -> int:
  import numpy as np
  from mockgpu.emu.api import run_code
  from mockgpu.emu.arch import get_arch
  from mockgpu.emu.memory import MemoryMap
  try: data = pathlib.Path(a.file).read_bytes()
  except OSError as e:
    print(f"mockgpu emu run: cannot read {a.file}: {e.strerror or e}", file=sys.stderr)
    return 2
  mem = MemoryMap()
  bufs = [np.zeros(-(-n // 4), np.uint32) for n in a.buffer]   # whole words to print; exactly n bytes mapped
  for i, (b, n) in enumerate(zip(bufs, a.buffer)): mem.add(b.ctypes.data, n, f"buf{i}")
  opts = dict(budget=a.budget, backend=a.backend, capture=True, op_counts=a.counts)
  if data[:4] == b"\x7fELF" and not a.raw:
    from mockgpu.emu.codeobj import load_elf
    from mockgpu.emu.launch import prepare
    co = load_elf(data)
    print(f"code object: entry={co.entry:#x} rsrc1={co.rsrc1:#x} rsrc2={co.rsrc2:#x} lds={co.lds_bytes} scratch/lane={co.scratch_bytes_per_lane} "
          f"wave{'32' if co.wave32 else '64'}")
    st = prepare(co, a.arch, a.grid, a.block, [b.ctypes.data for b in bufs], memory=mem).run(**opts)
  else:
    us = tuple(x for b in bufs for x in (b.ctypes.data & 0xffffffff, b.ctypes.data >> 32))
    st = run_code(data, mem, arch=a.arch, grid=a.grid, block=a.block, user_sgprs=us, rsrc2=a.rsrc2 if a.rsrc2 is not None else len(us) << 1,
                  lds_bytes=a.lds, scratch_bytes_per_lane=a.scratch, wave64=a.wave64 or 32 not in get_arch(a.arch).wave_sizes, **opts)
  print(f"{st.instructions} wave-instructions, {st.workgroups} workgroups, {st.waves} waves, {st.seconds * 1e3:.2f} ms")
  if st.state is not None:
    w = st.state
    print(f"workgroup 0 wave 0 at s_endpgm (pc={w.pc:#x}): exec={w.exec:#x} vcc={w.vcc:#x} scc={w.scc} m0={w.m0:#x}")
    print("sgprs: " + " ".join(f"s{i}={x:#x}" for i, x in enumerate(w.sgprs[:SREG_VCC_LO]) if x))
    for r in range(a.vgprs): print(f"v{r:<3d} " + " ".join(f"{x:08x}" for x in w.vgprs[r]))
  for i, b in enumerate(bufs): print(f"buf{i}: " + " ".join(f"{x:08x}" for x in b[:16]) + (" ..." if len(b) > 16 else ""))
  if st.op_counts: print("\n".join(f"{n:8d} {k}" for k, n in sorted(st.op_counts.items(), key=lambda kv: -kv[1])))
  return 0

def _fidelity(a) -> int:
  from mockgpu.emu import fidelity
  if a.update_coverage:
    try: return fidelity.update_coverage(jobs=a.jobs)
    except FileNotFoundError as e:
      print(f"mockgpu emu fidelity: {e}", file=sys.stderr)
      return 2
  try: rc, text = fidelity.report(a.arch, a.instruction, a.status, a.untested, a.totals, a.json)
  except ValueError as e: rc, text = 2, f"mockgpu emu fidelity: {e}"
  print(text, file=sys.stdout if rc == 0 else sys.stderr)
  return rc

def parser() -> argparse.ArgumentParser:
  """Returns: the argument parser of `mockgpu emu`."""
  p = argparse.ArgumentParser(prog="mockgpu emu", description="AMD ISA emulator tools")
  sub = p.add_subparsers(dest="cmd", required=True, metavar="{bench,run,fixtures,fidelity}")
  b = sub.add_parser("bench", help="wave-instructions/s, warm and cold: VALU/SALU loop and tinygrad's 256x256 matmul")
  b.add_argument("--reps", type=positive_int, default=3, help="timed repetitions per workload (default 3)")
  b.add_argument("--backend", default="c", choices=("c", "python"), help="emulator backend: generated C (default) or the Python reference")
  r = sub.add_parser("run", help="run a raw kernel (instruction bytes) or an ELF code object and print the final registers")
  r.add_argument("file", help="raw instruction bytes, or an AMD ELF code object (detected by its magic)")
  r.add_argument("--arch", default="gfx1100", help="gfx1100 (default), gfx1201, gfx950 or gfx942")
  r.add_argument("--raw", action="store_true", help="treat FILE as raw bytes even if it starts like an ELF")
  r.add_argument("--grid", type=_dims, default=(1, 1, 1), help="workgroups in x[,y[,z]] (default 1)")
  r.add_argument("--block", type=_dims, default=(32, 1, 1), help="work-items per workgroup in x[,y[,z]] (default 32)")
  r.add_argument("--buffer", action="append", default=[], type=_bytes, metavar="BYTES",
                 help="bytes of a zeroed buffer passed as kernel argument / s-pair (repeatable)")
  r.add_argument("--rsrc2", type=_int0, help="COMPUTE_PGM_RSRC2 of a raw kernel (default: user SGPR count of the buffers' pointers)")
  r.add_argument("--lds", type=nonnegative_int, default=0, help="LDS bytes per workgroup of a raw kernel (default 0)")
  r.add_argument("--scratch", type=nonnegative_int, default=0, help="scratch bytes per lane of a raw kernel (default 0)")
  r.add_argument("--wave64", action="store_true", help="run a raw kernel in wave64 (the default on gfx950 and gfx942, which have no wave32)")
  r.add_argument("--budget", type=positive_int, help="stop after this many wave-instructions (watchdog)")
  r.add_argument("--backend", default="c", choices=("c", "python"), help="emulator backend: generated C (default) or the Python reference")
  r.add_argument("--vgprs", type=nonnegative_int, default=8, help="VGPRs to print (default 8)")
  r.add_argument("--counts", action="store_true", help="print per-opcode instruction counts")
  f = sub.add_parser("fixtures", help="recompile the benchmark's fixture kernels with tinygrad (needs LLVM 19) into --out")
  f.add_argument("--out", type=pathlib.Path, required=True, metavar="DIR",
                 help="directory to write <name>.elf and <name>.json into (in a checkout: fixtures/kernels)")
  fd = sub.add_parser("fidelity", help="can I trust instruction X: per instruction, where its semantics come from and how it is tested",
                      formatter_class=argparse.RawDescriptionHelpFormatter, description=FIDELITY_HELP)
  fd.add_argument("instruction", nargs="*", help="explain these instructions on every selected arch (e.g. V_DIV_SCALE_F32; case and _E32/_E64 do not matter)")
  fd.add_argument("--arch", action="append", default=[], metavar="ARCH", help="gfx1100, gfx1201, gfx950, gfx942 or a family (rdna3, rdna4, cdna); "
                  "repeatable (default: all)")
  fd.add_argument("--status", choices=("published", "corrected", "prose", "unsupported"), help="list only instructions of this status")
  fd.add_argument("--untested", action="store_true", help="list only instructions no passing test executes")
  fd.add_argument("--totals", action="store_true", help="print only the per-arch totals (the table in docs/fidelity.md)")
  fd.add_argument("--json", metavar="FILE", help="also write the selected rows, totals and coverage warnings as JSON to FILE ('-': print only the JSON)")
  fd.add_argument("--update-coverage", action="store_true", help="in a checkout: run tests/isa and tests/pcode recording which instructions "
                  "each passing test executes, and rewrite the package's fidelity_coverage.json")
  fd.add_argument("--jobs", type=positive_int, default=1, help="pytest-xdist workers for --update-coverage (default 1)")
  return p

FIDELITY_HELP = """Per instruction of each arch:
  status     published: runs AMD's pseudocode from the tinygrad wheel as written; corrected: with an entry of
             mockgpu.pcode.corrections.FIXES (reason, source); prose: hand-written from the ISA's prose (no usable
             pseudocode); unsupported: raises InvalidInstruction("unsupported: ...")
  diff       passing tests that compare the C and Python backends on random inputs (marker `differential`)
  known      other passing tests in tests/isa, tests/pcode that execute it (expected values from numpy, exact arithmetic, the ISA)
  hw         passing tests marked hw_fact("MNEMONIC", source=...) naming it: expected values are hardware facts
The test columns come from the package's fidelity_coverage.json (regenerate: mockgpu emu fidelity --update-coverage).
Details: docs/fidelity.md."""

def main(argv: list[str] | None = None) -> int:
  """Entry point. Returns the process exit code (2 for usage errors and unreadable files, 1 for emulator errors)."""
  a = parser().parse_args(argv)
  from mockgpu.errors import MockGPUError
  try:
    if a.cmd == "bench":
      from mockgpu.emu.bench import main as bench_main
      return bench_main(a.reps, a.backend)
    if a.cmd == "run": return _run(a)
    if a.cmd == "fidelity": return _fidelity(a)
    from mockgpu.emu.fixtures import regenerate
    for f in regenerate(out=a.out): print(f)
    return 0
  except MockGPUError as e:
    print(f"mockgpu emu: {type(e).__name__}: {e}", file=sys.stderr)
    return 1
