"""Fixture kernels for the benchmark: the code objects tinygrad's own compiler emits (AMDLLVMRenderer, LLVM) for a
256x256 f32 matmul on gfx1100, saved under fixtures/kernels/ with a provenance note so the benchmark needs no compiler.
Regenerate with `mockgpu emu fixtures --out fixtures/kernels` in a checkout (never into an installed package)."""
from __future__ import annotations
import json, pathlib, platform
from importlib.metadata import version

__all__ = ["FIXTURE_DIR", "regenerate", "load_fixture"]

FIXTURE_DIR = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "kernels"

def regenerate(out: pathlib.Path, arch: str = "gfx1100", n: int = 256) -> list[pathlib.Path]:
  """Compile the matmul's kernels with tinygrad (needs LLVM 19 for gfx1100) and write <name>.elf + <name>.json into `out`
  (created). Returns the ELF paths."""
  from tinygrad import Tensor
  from tinygrad.helpers import Target, ansistrip
  from tinygrad.renderer.llvmir import AMDLLVMRenderer
  from tinygrad.codegen import to_program
  from tinygrad.uop.ops import Ops
  a, b = Tensor.empty(n, n, device="CPU"), Tensor.empty(n, n, device="CPU")
  lin = (a @ b).schedule_linear()
  ren = AMDLLVMRenderer(Target("AMD", "LLVM", arch))
  out, elfs = pathlib.Path(out), []
  out.mkdir(parents=True, exist_ok=True)
  for i, call in enumerate(lin.src):
    prg = to_program(call.src[0], ren)
    info, lib = prg.arg, next(x for x in prg.src if x.op is Ops.BINARY).arg
    stem = f"matmul{n}_f32_{arch}_k{i}"
    (out / f"{stem}.elf").write_bytes(lib)
    meta = {"name": ansistrip(info.name), "function_name": info.function_name, "arch": arch, "grid": list(info.global_size),
            "block": list(info.local_size), "buffers": [{"index": g, "bytes": n * n * 4, "role": "out" if g in info.outs else "in"} for g in info.globals],
            "provenance": {"tinygrad": version("tinygrad"), "renderer": "tinygrad.renderer.llvmir.AMDLLVMRenderer", "compiler": "LLVM (libLLVM-19)",
                           "source": f"(Tensor.empty({n},{n}) @ Tensor.empty({n},{n})).schedule_linear(), to_program(ast, AMDLLVMRenderer)",
                           "python": platform.python_version(), "regenerate": "mockgpu emu fixtures --out fixtures/kernels"}}
    (out / f"{stem}.json").write_text(json.dumps(meta, indent=1) + "\n")
    elfs.append(out / f"{stem}.elf")
  return elfs

def load_fixture(stem: str) -> tuple[bytes, dict]:
  """(ELF bytes, metadata) of a saved fixture."""
  return (FIXTURE_DIR / f"{stem}.elf").read_bytes(), json.loads((FIXTURE_DIR / f"{stem}.json").read_text())
