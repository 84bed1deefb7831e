"""Emulator throughput benchmarks (printed by `python -m mockgpu.emu bench`, never asserted in tests).

(a) a VALU/SALU loop kernel assembled with the wheel's DSL on gfx1100 (wave32) and, the same instructions in gfx9 spelling,
on gfx950 (wave64), (b) the kernel tinygrad emits for a 256x256 f32 matmul on gfx1100 (fixtures/kernels), (c) a hand-written
elementwise kernel of many one-wave workgroups on gfx1100, (d) tinygrad's own kernel for the same 1M elementwise (fixture). Cold = first dispatch in this process (library load from the disk cache and decode-cache
fill; a one-time build, if it happens, is reported on its own line); warm = best of the following dispatches, by wall time
(each kernel on one thread and on every CPU: "x N" is the threads the dispatch ran on)
and by the CPU time the process actually got (the two agree on an idle machine; on a busy one the CPU figure is the
throughput of the emulator itself)."""
from __future__ import annotations
import os, resource, time
import numpy as np
from mockgpu.emu.api import default_threads, run_code, Stats
from mockgpu.emu.arch import get_arch
from mockgpu.emu.memory import MemoryMap

__all__ = ["loop_kernel", "bench_loop", "bench_matmul", "bench_elementwise", "main"]

def loop_kernel(iters: int = 20000, family: str = "rdna3") -> bytes:
  """4 VALU + 3 SALU instructions per iteration (float add/fma, integer add, move, counter, compare, branch); family rdna3
  or cdna (the integer add is V_ADD_U32 there)."""
  import importlib
  I = importlib.import_module(f"tinygrad.runtime.autogen.amd.{family}.ins")
  s_mov_b32, s_add_u32, s_cmp_lg_u32, s_cbranch_scc1, s_endpgm, s, v = I.s_mov_b32, I.s_add_u32, I.s_cmp_lg_u32, I.s_cbranch_scc1, I.s_endpgm, I.s, I.v
  iadd = I.v_add_nc_u32_e32 if family != "cdna" else I.v_add_u32_e32
  body = [I.v_add_f32_e32(v[1], v[1], v[2]), I.v_fmac_f32_e32(v[5], 1.0, v[1]), iadd(v[3], v[3], v[0]), I.v_mov_b32_e32(v[4], v[1]),
          s_add_u32(s[4], s[4], -1), s_cmp_lg_u32(s[4], 0)]
  nwords = sum(len(i.to_bytes()) for i in body) // 4 + 1
  insts = [s_mov_b32(s[4], iters), *body, s_cbranch_scc1(simm16=(-nwords) & 0xffff), s_endpgm()]
  return b"".join(i.to_bytes() for i in insts)

def _measure(fn, reps: int, xlat: str = "off") -> tuple[Stats, float, float, float]:
  """(stats of the last run, cold wall seconds, best warm wall seconds, best warm CPU seconds of this process), with the
  translator `xlat` ($MOCKGPU_EMU_XLAT: "off" interprets; "sync" translates after the cold run, so the warm runs are translated)."""
  old = os.environ.get("MOCKGPU_EMU_XLAT")
  os.environ["MOCKGPU_EMU_XLAT"] = xlat
  try:
    t0 = time.perf_counter(); st = fn(); cold = time.perf_counter() - t0
    warm, cpu = float("inf"), float("inf")
    for _ in range(reps):
      c0 = time.process_time(); st = fn(); warm = min(warm, st.seconds); cpu = min(cpu, time.process_time() - c0)
  finally:
    if old is None: os.environ.pop("MOCKGPU_EMU_XLAT", None)
    else: os.environ["MOCKGPU_EMU_XLAT"] = old
  return st, cold, warm, cpu

# the float mode of tinygrad's LLVM kernels (the matmul fixture: MODE 0x3f0, denormals kept); the arch default (LLVM's descriptor
# default) flushes f32 denormals, which the emulator runs on its slower non-default-mode float path
LOOP_RSRC1 = 3 << 16 | 3 << 18 | 1 << 21 | 1 << 23

def bench_loop(reps: int = 3, backend: str = "c", arch: str = "gfx1100", xlat: str = "off", threads: int = 1) -> tuple[Stats, float, float, float]:
  """The loop kernel on 8 workgroups of 256 threads (gfx1100: 8 wave32 each; gfx950: 4 wave64 each), in LOOP_RSRC1's float mode."""
  a = get_arch(arch)
  code = loop_kernel(family=a.family)
  return _measure(lambda: run_code(code, arch=arch, wave64=32 not in a.wave_sizes, block=(256, 1, 1), grid=(8, 1, 1), rsrc1=LOOP_RSRC1,
                                   backend=backend, threads=threads), reps, xlat)

def _bench_fixture(stem: str, shape: tuple[int, ...], expect, reps: int, backend: str, xlat: str, threads: int) -> tuple[Stats, float, float, float]:
  """A saved tinygrad kernel (emu/fixtures.py) on out, x, y of `shape` (standard normal inputs); raises if out is not
  expect(x, y) within 1e-3 (float64 numpy), since the figures of a wrong run would be meaningless."""
  from mockgpu.emu.codeobj import load_elf
  from mockgpu.emu.fixtures import load_fixture
  from mockgpu.emu.launch import prepare
  elf, meta = load_fixture(stem)
  rng = np.random.default_rng(0)
  bufs = [np.zeros(shape, np.float32), rng.standard_normal(shape).astype(np.float32), rng.standard_normal(shape).astype(np.float32)]
  mem = MemoryMap()
  for i, b in enumerate(bufs): mem.add(b.ctypes.data, b.nbytes, f"buf{i}")
  launch = prepare(load_elf(elf), "gfx1100", meta["grid"], meta["block"], [b.ctypes.data for b in bufs], memory=mem)
  st, cold, warm, cpu = _measure(lambda: launch.run(backend=backend, threads=threads), reps, xlat)
  if (err := float(np.abs(bufs[0] - expect(bufs[1].astype(np.float64), bufs[2])).max())) > 1e-3:
    raise RuntimeError(f"{stem}: result is wrong (max abs error {err}); the benchmark figures would be meaningless")
  return st, cold, warm, cpu

def bench_matmul(reps: int = 3, backend: str = "c", xlat: str = "off", threads: int = 1) -> tuple[Stats, float, float, float]:
  """tinygrad's 256x256 f32 matmul kernel (fixture)."""
  # the reference without BLAS: OpenBLAS's threads spin on the other cores for a while after a call, and took the next
  # benchmark's second emulator thread's core (and doubled its process CPU time)
  return _bench_fixture("matmul256_f32_gfx1100_k0", (256, 256), lambda x, y: np.einsum("ij,jk->ik", x, y), reps, backend, xlat, threads)

def bench_tinygrad_elementwise(reps: int = 3, backend: str = "c", xlat: str = "off", threads: int = 1) -> tuple[Stats, float, float, float]:
  """tinygrad's own kernel for x * y + 1 over 1M f32 (fixture E_8192_32_4: 8192 one-wave workgroups, four elements per lane
  with B128 loads and 64-bit address arithmetic, 28 wave-instructions each), what DEV=MOCKKFD+AMD runs for it."""
  return _bench_fixture("elementwise1m_f32_gfx1100_k0", (1 << 20,), lambda x, y: x * y + 1, reps, backend, xlat, threads)

def bench_elementwise(reps: int = 3, backend: str = "c", xlat: str = "off", threads: int = 1, n: int = 1 << 20) -> tuple[Stats, float, float, float]:
  """out = x * y + 1 over `n` f32 on gfx1100 in n / 32 one-wave workgroups of 9 instructions (address, two loads, FMA, store):
  the shape of tinygrad's elementwise kernels, where starting a workgroup costs as much as running it."""
  from tinygrad.runtime.autogen.amd.rdna3 import ins as I
  rng = np.random.default_rng(0)
  x, y, out = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32), np.zeros(n, np.float32)
  mem = MemoryMap()
  for i, b in enumerate((out, x, y)): mem.add(b.ctypes.data, b.nbytes, f"buf{i}")
  s, v = I.s, I.v   # s[0:1] out, s[2:3] x, s[4:5] y, s6 the workgroup id
  code = b"".join(i.to_bytes() for i in (I.s_lshl_b32(s[7], s[6], 7), I.v_lshlrev_b32_e32(v[1], 2, v[0]), I.v_add_nc_u32_e32(v[1], s[7], v[1]),
         I.global_load_b32(vdst=v[2], addr=v[1], saddr=s[2:3]), I.global_load_b32(vdst=v[3], addr=v[1], saddr=s[4:5]), I.s_waitcnt(simm16=0),
         I.v_fma_f32(v[4], v[2], v[3], 1.0), I.global_store_b32(addr=v[1], data=v[4], saddr=s[0:1]), I.s_endpgm()))
  us = tuple(w for b in (out, x, y) for w in (b.ctypes.data & 0xffffffff, b.ctypes.data >> 32))
  st, cold, warm, cpu = _measure(lambda: run_code(code, mem, user_sgprs=us, rsrc2=6 << 1 | 1 << 7, grid=(n // 32, 1, 1), block=(32, 1, 1),
                                                  backend=backend, threads=threads), reps, xlat)
  if not np.allclose(out, x.astype(np.float64) * y + 1, rtol=1e-6, atol=1e-6):   # one rounding (FMA) against numpy's float64
    raise RuntimeError("elementwise result is wrong; the benchmark figures would be meaningless")
  return st, cold, warm, cpu

def main(reps: int = 3, backend: str = "c") -> int:
  from mockgpu.emu.build import build
  if backend == "c":
    for arch in ("gfx1100", "gfx950"):
      lib = build(get_arch(arch))
      print(f"library: {lib.path.name} ({'built now in %.1f s' % lib.build_seconds if lib.built else 'from the cache'})")
  load = os.getloadavg()[0]
  print(f"machine: {os.cpu_count()} cpus, load average {load:.2f}" + ("  (busy: figures are lower than on an idle machine)" if load > (os.cpu_count() or 1) else ""))
  nth = default_threads() if backend == "c" else 1
  for name, fn in (("loop (VALU/SALU)", bench_loop), ("loop gfx950 wave64 (VALU/SALU)", lambda r, backend, xlat, threads: bench_loop(r, backend, "gfx950", xlat, threads)),
                   ("matmul 256x256 f32 (tinygrad, LLVM)", bench_matmul), ("elementwise 1M f32, 32768 workgroups", bench_elementwise),
                   ("elementwise 1M f32 (tinygrad, LLVM)", bench_tinygrad_elementwise)):
    for xlat in ("off", "sync") if backend == "c" else ("off",):
      for th in sorted({1, nth}):   # one thread, then every CPU (multi-core dispatch): wall-clock figures scale, per CPU-second ones do not
        st, cold, warm, cpu = fn(reps, backend=backend, xlat=xlat, threads=th)
        how = ("translated" if st.extra.get("translated") else "interpreted") + f" x{st.extra.get('threads', 1)}"
        print(f"{name:38s} {how:14s} {st.instructions:>10d} wave-inst  cold {st.instructions / cold / 1e6:8.2f} M/s ({cold * 1e3:7.1f} ms)  "
              f"warm {st.instructions / warm / 1e6:8.2f} M/s ({warm * 1e3:7.1f} ms)  warm per CPU-second {st.instructions / max(cpu, 1e-9) / 1e6:8.2f} M/s")
  print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
  return 0
