"""`mockgpu demo`: run tinygrad's real compiler and HCQ runtime on the mock AMD GPU and print a short report.

Every workload is checked against numpy; the report lists, per workload, the kernels the emulated GPU ran, the
wave-instructions it executed, the time spent inside the emulator and the wall time. Exit status 1 if any result is wrong.
"""
from __future__ import annotations
import argparse, os, sys, time
from dataclasses import dataclass
from typing import Callable

__all__ = ["Workload", "WORKLOADS", "main"]

@dataclass(frozen=True)
class Workload:
  """A tinygrad computation and its numpy oracle. `run(Tensor, np)` and `expect(np)` return numpy arrays."""
  name: str
  run: Callable
  expect: Callable
  rtol: float = 1e-5
  atol: float = 1e-6

def _data(np, *shape, seed=0): return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)

WORKLOADS: tuple[Workload, ...] = (
  Workload("add int32", lambda T, np: (T([1, 2, 3]) + 1).numpy(), lambda np: np.array([2, 3, 4], np.int32)),
  Workload("exp2*x+1 f32 4096", lambda T, np: (T(_data(np, 4096)).exp2() * T(_data(np, 4096, seed=1)) + 1).numpy(),
           lambda np: (np.exp2(_data(np, 4096)) * _data(np, 4096, seed=1) + 1).astype(np.float32), rtol=1e-5, atol=1e-5),
  Workload("sum f32 65536", lambda T, np: T(_data(np, 65536)).sum().numpy(), lambda np: _data(np, 65536).astype(np.float64).sum(),
           rtol=1e-4, atol=1e-3),
  Workload("max axis=1 32x512", lambda T, np: T(_data(np, 32, 512)).max(axis=1).numpy(), lambda np: _data(np, 32, 512).max(axis=1)),
  Workload("argmax 1000", lambda T, np: T(_data(np, 1000)).argmax().numpy(), lambda np: np.argmax(_data(np, 1000))),
  Workload("matmul f32 64x64", lambda T, np: (T(_data(np, 64, 64)) @ T(_data(np, 64, 64, seed=1))).numpy(),
           lambda np: _data(np, 64, 64) @ _data(np, 64, 64, seed=1), rtol=1e-4, atol=1e-4),
  Workload("conv2d 1x4x16x16 k3", lambda T, np: T(_data(np, 1, 4, 16, 16)).conv2d(T(_data(np, 8, 4, 3, 3, seed=1))).numpy(),
           lambda np: _conv2d(np, _data(np, 1, 4, 16, 16), _data(np, 8, 4, 3, 3, seed=1)), rtol=1e-4, atol=1e-4),
  Workload("copy AMD:0 -> AMD:1", lambda T, np: (T(_data(np, 1024)).to("AMD:1") * 2).numpy(), lambda np: _data(np, 1024) * 2),
)

def _conv2d(np, x, w):
  """Valid cross-correlation, NCHW x OIHW, stride 1: the numpy oracle for tinygrad's conv2d."""
  n, c, h, wd = x.shape
  o, _, kh, kw = w.shape
  out = np.zeros((n, o, h - kh + 1, wd - kw + 1), np.float64)
  for i in range(kh):
    for j in range(kw): out += np.einsum("nchw,oc->nohw", x[:, :, i:i + h - kh + 1, j:j + wd - kw + 1], w[:, :, i, j])
  return out.astype(np.float32)

def _counters() -> tuple[int, int, float]:
  """(dispatches, wave-instructions, emulator seconds) summed over every mock GPU of this process."""
  from mockgpu.mock.kfd import system
  gs = [g.stats for g in system().gpus.values()]
  return sum(s["dispatches"] for s in gs), sum(s["wave_instructions"] for s in gs), sum(s["emu_seconds"] for s in gs)

def main(argv: list[str] | None = None) -> int:
  """Run the demo workloads on `--dev` (default MOCKKFD+AMD) and print the report. Returns 0 iff all results match numpy."""
  ap = argparse.ArgumentParser(prog="mockgpu demo", description=__doc__.splitlines()[0])
  ap.add_argument("--dev", default=os.environ.get("DEV") if "MOCK" in os.environ.get("DEV", "") else "MOCKKFD+AMD",
                  help="tinygrad DEV string naming a MOCK interface (default MOCKKFD+AMD)")
  ap.add_argument("-k", default="", help="only workloads whose name contains this text")
  args = ap.parse_args(argv)
  if "MOCK" not in args.dev: ap.error(f"--dev={args.dev!r} names no MOCK interface; try MOCKKFD+AMD")
  if "tinygrad" in sys.modules and "tinygrad.runtime.support.hcq" in sys.modules:
    ap.error("tinygrad's HCQ runtime is already imported in this process; run the demo in a fresh interpreter")
  os.environ["DEV"] = args.dev
  from mockgpu.tinygrad.activate import install
  install()
  import numpy as np
  from tinygrad import Tensor, Device
  t_start = time.perf_counter()
  print(f"mockgpu demo: DEV={args.dev}, device {Device.DEFAULT} arch {Device[Device.DEFAULT].arch}, renderer "
        f"{type(Device[Device.DEFAULT].renderer).__name__}\n")
  print(f"{'workload':26s} {'result':7s} {'kernels':>7s} {'wave-inst':>11s} {'emu ms':>8s} {'wall s':>7s}")
  failed = 0
  for w in WORKLOADS:
    if args.k not in w.name: continue
    k0, i0, e0 = _counters()
    t0 = time.perf_counter()
    try:
      got = w.run(Tensor, np)
      ok, why = bool(np.allclose(got, w.expect(np), rtol=w.rtol, atol=w.atol)), "mismatch"
    except Exception as e: ok, why = False, f"{type(e).__name__}: {e}"
    wall = time.perf_counter() - t0
    k1, i1, e1 = _counters()
    failed += not ok
    print(f"{w.name:26s} {'ok' if ok else 'WRONG':7s} {k1-k0:7d} {i1-i0:11,d} {(e1-e0)*1e3:8.2f} {wall:7.2f}" + ("" if ok else f"  {why}"))
  k, i, e = _counters()
  total = time.perf_counter() - t_start
  print(f"\n{k} kernels, {i:,} wave-instructions in {e*1e3:.1f} ms of emulation ({i / e / 1e6 if e else 0:.1f} M wave-inst/s); "
        f"{total:.1f} s wall including tinygrad's compiler. {'ALL CORRECT' if not failed else f'{failed} WRONG'}")
  return 1 if failed else 0

if __name__ == "__main__": sys.exit(main())
