"""Fixture kernels for the benchmark: the code objects tinygrad's own compiler emits (AMDLLVMRenderer, LLVM) for a
256x256 f32 matmul and a 1M f32 elementwise x * y + 1 (WORKLOADS) on gfx1100, saved under fixtures/kernels/ with a provenance
note so the benchmark needs no compiler.
Regenerate with `mockgpu emu fixtures --out fixtures/kernels` in a checkout (never into an installed package)."""
from __future__ import annotations
import functools, json, pathlib, platform
from importlib.metadata import version

__all__ = ["FIXTURE_DIR", "WORKLOADS", "regenerate", "load_fixture"]

FIXTURE_DIR = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "kernels"

# stem prefix -> (the tinygrad expression over E = Tensor.empty on CPU, as code and as text; bytes of every buffer)
WORKLOADS = {"matmul256_f32": (lambda E: E(256, 256) @ E(256, 256), "Tensor.empty(256,256) @ Tensor.empty(256,256)", 256 * 256 * 4),
             "elementwise1m_f32": (lambda E: E(1 << 20) * E(1 << 20) + 1, "Tensor.empty(1 << 20) * Tensor.empty(1 << 20) + 1", 4 << 20)}

def regenerate(out: pathlib.Path, arch: str = "gfx1100", only: tuple[str, ...] = ()) -> list[pathlib.Path]:
  """Compile the kernels of every WORKLOADS entry (or those named in `only`) with tinygrad (needs LLVM 19 for gfx1100) and
  write <stem>_<arch>_k<i>.elf + .json into `out` (created). Returns the ELF paths."""
  from tinygrad import Tensor
  from tinygrad.helpers import Target, ansistrip
  from tinygrad.renderer.llvmir import AMDLLVMRenderer
  from tinygrad.codegen import to_program
  from tinygrad.uop.ops import Ops
  ren = AMDLLVMRenderer(Target("AMD", "LLVM", arch))
  out, elfs = pathlib.Path(out), []
  out.mkdir(parents=True, exist_ok=True)
  for name, (fn, src, nbytes) in WORKLOADS.items():
    if only and name not in only: continue
    lin = fn(functools.partial(Tensor.empty, device="CPU")).schedule_linear()
    for i, call in enumerate(lin.src):
      prg = to_program(call.src[0], ren)
      info, lib = prg.arg, next(x for x in prg.src if x.op is Ops.BINARY).arg
      stem = f"{name}_{arch}_k{i}"
      (out / f"{stem}.elf").write_bytes(lib)
      meta = {"name": ansistrip(info.name), "function_name": info.function_name, "arch": arch, "grid": list(info.global_size),
              "block": list(info.local_size), "buffers": [{"index": g, "bytes": nbytes, "role": "out" if g in info.outs else "in"} for g in info.globals],
              "provenance": {"tinygrad": version("tinygrad"), "renderer": "tinygrad.renderer.llvmir.AMDLLVMRenderer", "compiler": "LLVM (libLLVM-19)",
                             "source": f"({src}).schedule_linear(), to_program(ast, AMDLLVMRenderer)",
                             "python": platform.python_version(), "regenerate": "mockgpu emu fixtures --out fixtures/kernels"}}
      (out / f"{stem}.json").write_text(json.dumps(meta, indent=1) + "\n")
      elfs.append(out / f"{stem}.elf")
  return elfs

def load_fixture(stem: str) -> tuple[bytes, dict]:
  """(ELF bytes, metadata) of a saved fixture."""
  return (FIXTURE_DIR / f"{stem}.elf").read_bytes(), json.loads((FIXTURE_DIR / f"{stem}.json").read_text())
