"""Replay recorded launches (mockgpu.emu.capture) on the emulator and compare every buffer with its recorded after state.

Each launch is replayed on its own, from its recorded before states: its regions are mapped at their recorded addresses
when that host memory is free, else elsewhere (same offset within the page) with every recorded pointer patched
("relocated"); the Dispatch runs with `api.run`; then each buffer is compared with the capture, bit for bit or, with a
`Tolerance`, as floats."""
from __future__ import annotations
import ctypes, dataclasses, hashlib, mmap, struct, time
from dataclasses import dataclass
import numpy as np
from tinygrad.runtime.autogen import libc
from mockgpu.emu.api import run
from mockgpu.emu.capture import SGPRS, Capture, Launch, Region
from mockgpu.emu.errors import EmuError
from mockgpu.emu.memory import PAGE, MemoryMap

__all__ = ["Tolerance", "Difference", "Result", "DTYPES", "compare", "replay"]

MAP_FIXED_NOREPLACE = 0x100000
DTYPES = {"float32": (np.float32, np.uint32), "float16": (np.float16, np.uint16), "bfloat16": (None, np.uint16), "float64": (np.float64, np.uint64)}

@dataclass(frozen=True)
class Tolerance:
  """How buffers are compared: bit for bit (the default), or as `dtype` floats that may differ by `atol + rtol * |expected|`
  or by at most `ulp` units in the last place. NaNs match NaNs at the same element in every mode."""
  dtype: str = "float32"
  rtol: float = 0.0
  atol: float = 0.0
  ulp: int | None = None
  @property
  def exact(self) -> bool: return self.rtol == 0 and self.atol == 0 and self.ulp is None
  def describe(self) -> str:
    if self.exact: return "bit for bit"
    return f"as {self.dtype} within " + (f"{self.ulp} ulp" if self.ulp is not None else f"rtol={self.rtol:g} atol={self.atol:g}")

@dataclass(frozen=True)
class Difference:
  """The first differing element of a buffer: element `index` (byte `byte`, `size` bytes: less than a `dtype` for the
  trailing bytes of a buffer that is not a whole number of elements) as little-endian bits, and how many of `total` differ."""
  region: Region
  index: int
  byte: int
  size: int
  expected: int
  got: int
  count: int
  total: int
  dtype: str
  def describe(self, expected:str = "expected", got:str = "got") -> str:
    r = self.region
    whole = self.size == np.dtype(DTYPES[self.dtype][1]).itemsize
    def fmt(bits:int) -> str: return _fmt(bits, self.dtype, self.size) if whole else f"{bits:#0{2 + 2 * self.size}x}"
    return (f"buffer {r.label} ({r.size} bytes at {r.addr:#x}): element {self.index} (byte {self.byte}) {expected} {fmt(self.expected)}, "
            f"{got} {fmt(self.got)}; {self.count} of {self.total} {self.dtype} elements differ")

@dataclass(frozen=True)
class Result:
  """One replayed launch. ok: every buffer matched (or the recorded fault recurred); differences: the differing buffers;
  error: what the replay raised when the capture recorded no fault (or "no fault" when it recorded one); relocated: the
  regions were not at their recorded addresses; seconds: the emulator's time; instructions: wave-instructions run."""
  launch: Launch
  differences: tuple[Difference, ...] = ()
  error: str | None = None
  relocated: bool = False
  seconds: float = 0.0
  instructions: int = 0
  @property
  def ok(self) -> bool: return not self.differences and self.error is None

def _fmt(bits:int, dtype:str, n:int) -> str:
  f, _ = DTYPES[dtype]
  v = np.uint32(bits << 16).view(np.float32) if f is None else np.frombuffer(bits.to_bytes(n, "little"), f)[0]
  return f"{str(v)} ({bits:#0{2 + 2 * n}x})"   # str of a numpy float: the shortest repr of its own precision

def _floats(b:bytes, dtype:str) -> tuple[np.ndarray, np.ndarray]:
  f, u = DTYPES[dtype]
  bits = np.frombuffer(b[:len(b) // np.dtype(u).itemsize * np.dtype(u).itemsize], u)
  return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64) if f is None else bits.view(f).astype(np.float64), bits

def _ordered(bits:np.ndarray) -> np.ndarray:
  """Float bit patterns as integers that are consecutive for adjacent floats (for ulp distances)."""
  n = bits.dtype.itemsize * 8
  b = bits.astype(np.int64) if n < 64 else bits.view(np.int64)
  sign = (bits >> np.array(n - 1, bits.dtype)).astype(bool)
  mag = b & ((1 << (n - 1)) - 1)
  return np.where(sign, -mag, mag)

def compare(region:Region, expected:bytes, got:bytes, tol:Tolerance = Tolerance()) -> Difference | None:
  """The first element of `got` that differs from `expected` (bytes of the same length) under `tol` (trailing bytes that
  make no whole element are compared bit for bit), or None if they match."""
  _, u = DTYPES[tol.dtype]
  n = np.dtype(u).itemsize
  e, g = _floats(expected, tol.dtype), _floats(got, tol.dtype)
  if tol.exact: bad = e[1] != g[1]
  else:
    with np.errstate(invalid="ignore", over="ignore"):
      nan = np.isnan(e[0]) & np.isnan(g[0])
      if tol.ulp is not None: close = np.abs(_ordered(e[1]) - _ordered(g[1])) <= tol.ulp
      else: close = (e[0] == g[0]) | (np.abs(e[0] - g[0]) <= tol.atol + tol.rtol * np.abs(e[0]))
      bad = ~(nan | close)
  tail = len(e[1]) * n
  if expected[tail:] != got[tail:]: bad = np.append(bad, True)
  if not bad.any(): return None
  i = int(np.argmax(bad))
  if i == len(e[1]):   # only the tail differs
    ex, gx = (int.from_bytes(b[tail:], "little") for b in (expected, got))
    return Difference(region, i, tail, len(expected) - tail, ex, gx, 1, i + 1, tol.dtype)
  return Difference(region, i, i * n, n, int(e[1][i]), int(g[1][i]), int(bad.sum()), len(bad), tol.dtype)

def _mmap(addr:int, size:int) -> int | None:
  """Anonymous read-write pages: exactly at `addr` (None if anything is mapped there), or anywhere if `addr` is 0."""
  flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | (MAP_FIXED_NOREPLACE if addr else 0)
  ret = libc.mmap(addr, size, mmap.PROT_READ | mmap.PROT_WRITE, flags, -1, 0)
  if ret in (None, -1, 0xffffffffffffffff):
    if addr: return None
    raise MemoryError(f"cannot map {size:#x} bytes of host memory for a replay")
  if addr and ret != addr:   # a kernel before 4.17 takes MAP_FIXED_NOREPLACE for a hint
    libc.munmap(ret, size)
    return None
  return ret

def _spans(regions:tuple[Region, ...]) -> list[list[int]]:
  """The pages the regions touch, merged: [start, end, region indices...]."""
  out: list[list[int]] = []
  for i, r in sorted(enumerate(regions), key=lambda ir: ir[1].addr):
    s, e = r.addr // PAGE * PAGE, -(-(r.addr + r.size) // PAGE) * PAGE
    if out and s < out[-1][1]:
      out[-1][1] = max(out[-1][1], e)
      out[-1].append(i)
    else: out.append([s, e, i])
  return out

def replay(cap:Capture, launch:Launch, *, backend:str = "c", tol:Tolerance = Tolerance(), relocate:bool = False, budget:int | None = None) -> Result:
  """Replay `launch` of `cap` on the emulator and compare its buffers with the recorded after states.

  Args: backend: "c" or "python". tol: how buffers are compared. relocate: place the regions at new addresses even if
    the recorded ones are free. budget: the emulator's wave-instruction budget (default api.DEFAULT_BUDGET).
  Returns: Result (errors of the emulator are part of it, not raised).
  Raises: CaptureError for a missing or corrupt blob; BackendUnavailable."""
  regions = launch.regions
  before = [cap.blob(r.before, f"{launch.label} {r.label} before") for r in regions]
  spans, mapped, base = _spans(regions), [], {}
  try:
    if not relocate:
      for s in spans:
        if _mmap(s[0], s[1] - s[0]) is None: break
        mapped.append((s[0], s[1] - s[0]))
      else: base = {i: regions[i].addr for s in spans for i in s[2:]}
      if not base:
        for a, n in mapped: libc.munmap(a, n)
        mapped = []
    if not base:
      for s in spans:
        mapped.append((new:=_mmap(0, s[1] - s[0]), s[1] - s[0]))
        base |= {i: new + regions[i].addr - s[0] for i in s[2:]}
    moved = any(base[i] != r.addr for i, r in enumerate(regions))
    mem = MemoryMap()
    for i, r in enumerate(regions):
      ctypes.memmove(base[i], before[i], r.size)
      mem.add(base[i], r.size, f"{r.label} (region {i})", granule=r.granule)
    d, sgprs = launch.dispatch, list(launch.dispatch.user_sgprs)
    for p in launch.pointers if moved else ():
      v = base[p.dst] + p.offset
      if p.src == SGPRS: sgprs[p.at:p.at + 2] = [v & 0xffffffff, v >> 32]
      else: ctypes.memmove(base[p.src] + p.at, struct.pack("<Q", v), 8)
    code = launch.code
    d = dataclasses.replace(d, code_addr=base[regions.index(code)] + d.code_addr - code.addr, user_sgprs=tuple(sgprs))
    t0 = time.perf_counter()
    try: st = run(d, mem, backend=backend, budget=budget)
    except EmuError as e:
      if launch.fault is not None and launch.fault.split(":")[0] == type(e).__name__: return Result(launch, relocated=moved)
      return Result(launch, error=f"{type(e).__name__}: {e}", relocated=moved, seconds=time.perf_counter() - t0)
    if launch.fault is not None: return Result(launch, error=f"no fault (the capture recorded {launch.fault})", relocated=moved, seconds=st.seconds)
    diffs = []
    for i, r in enumerate(regions):
      if r.after is None or hashlib.sha256(got:=ctypes.string_at(base[i], r.size)).hexdigest() == r.after: continue   # same contents
      if (df:=compare(r, cap.blob(r.after, f"{launch.label} {r.label} after"), got, tol)) is not None: diffs.append(df)
    return Result(launch, tuple(diffs), relocated=moved, seconds=st.seconds, instructions=st.instructions)
  finally:
    for a, n in mapped: libc.munmap(a, n)
