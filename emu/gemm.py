"""Validate a hand-written GEMM kernel on the emulator: run it over a sweep of shapes and dtypes against a float64 numpy
reference with an error bound derived from K and the accumulation type, and explain the first wrong element (which
workgroup, wave, lane and store wrote it). `mockgpu gemm` (emu/gemm_cli.py) is the command; docs/gemm.md the manual.

The kernel interface: a Python module defines `KERNEL = GemmKernel(...)`, whose `build(M, N, K, dtypes)` returns the code
(raw instructions, e.g. assembled with tinygrad's DSL by `assemble`, or an AMD ELF code object) and its launch for one
problem C = A @ B: A is M x K row-major, B is K x N row-major (`b_layout="kn"`) or N x K row-major ("nk"), C is M x N
row-major, all dense."""
from __future__ import annotations
import dataclasses, importlib, importlib.util, json, pathlib, struct
from dataclasses import dataclass, field
from typing import Callable
import numpy as np
from tinygrad.runtime.autogen import amdgpu_kd as kd
from mockgpu.emu.api import StoreRecord
from mockgpu.emu.arch import get_arch
from mockgpu.emu.errors import EmuError

__all__ = ["GemmKernel", "GemmLaunch", "Branch", "assemble", "DTYPES", "error_bound", "sweep_shapes", "ShapeResult", "validate_one",
           "load_kernel", "FIXTURES", "DEFAULT_RSRC2", "POINTER_ARGS", "SCALAR_ARGS"]

# name -> (precision p in bits incl. the implicit one, smallest normal exponent, storage bytes): the unit roundoff is 2^-p
DTYPES = {"f16": (11, -14, 2), "bf16": (8, -126, 2), "f32": (24, -126, 4)}
POINTER_ARGS = ("A", "B", "C")                       # 8-byte device addresses in the kernel arguments
SCALAR_ARGS = ("M", "N", "K", "lda", "ldb", "ldc")   # u32 (leading dimensions in elements)
# RSRC2 of raw code that names none: two user SGPRs (s[0:1] = kernel argument address), workgroup ids x, y, z in the SGPRs after them
DEFAULT_RSRC2 = 2 << 1 | 1 << 7 | 1 << 8 | 1 << 9
# a bit pattern no arithmetic produces (a signalling NaN with a payload): C is filled with it, so unwritten elements show
SENTINEL = {"f16": 0x7d0d, "bf16": 0x7f8d, "f32": 0x7f80dead}

@dataclass(frozen=True)
class GemmLaunch:
  """What `GemmKernel.build` returns for one problem.

  code: raw instructions (entry at byte 0) or an AMD ELF code object (detected by its magic; its descriptor then gives
    RSRC1/2/3, LDS size and wave size, and `lds_bytes`, `rsrc2` and `wave64` are ignored).
  grid: workgroups (x, y, z). block: work-items per workgroup.
  args: the kernel-argument layout, in order: "A", "B", "C" as 8-byte addresses (8-aligned), "M", "N", "K", "lda", "ldb",
    "ldc" as u32. s[0:1] holds the argument address (tinygrad's AMD convention).
  lds_bytes: LDS per workgroup (raw code). rsrc2: COMPUTE_PGM_RSRC2 of raw code (default DEFAULT_RSRC2). wave64: raw code
  runs in wave64 (always on gfx950 and gfx942)."""
  code: bytes
  grid: tuple[int, int, int]
  block: tuple[int, int, int]
  args: tuple[str, ...] = ("A", "B", "C", "M", "N", "K")
  lds_bytes: int = 0
  rsrc2: int = DEFAULT_RSRC2
  wave64: bool = False

@dataclass(frozen=True)
class GemmKernel:
  """A GEMM kernel's claims, which `mockgpu gemm` checks.

  name: shown in reports. arch: "gfx1100" | "gfx1201" | "gfx950" | "gfx942". dtypes: the (input, accumulate, output) type names it
  supports, each from DTYPES ("f16", "bf16", "f32"). tile: (M, N, K) one workgroup computes per step (documentation and the
  edge shapes of the sweep). multiple: M, N and K must be multiples of these (1: any size). shapes: the sizes it claims
  (the default sweep adds edge sizes, see sweep_shapes). build(M, N, K, dtypes) -> GemmLaunch. b_layout: "kn" (B is
  K x N) or "nk" (B is N x K, i.e. the kernel computes A @ B^T of its N x K input). fixed_shapes: the kernel supports
  exactly `shapes` (code compiled for one size), so the sweep is those and no edge sizes."""
  name: str
  arch: str
  dtypes: tuple[tuple[str, str, str], ...]
  tile: tuple[int, int, int]
  multiple: tuple[int, int, int]
  shapes: tuple[tuple[int, int, int], ...]
  build: Callable[[int, int, int, tuple[str, str, str]], GemmLaunch]
  b_layout: str = "kn"
  fixed_shapes: bool = False

  def __post_init__(self):
    bad = [d for dt in self.dtypes for d in dt if d not in DTYPES]
    if bad or not self.dtypes: raise EmuError(f"GemmKernel {self.name!r}: dtypes={self.dtypes}: each must be an (input, accumulate, output) "
                                              f"triple of {', '.join(DTYPES)}")
    if self.b_layout not in ("kn", "nk"): raise EmuError(f"GemmKernel {self.name!r}: b_layout={self.b_layout!r}: use 'kn' or 'nk'")
    if min(self.multiple) < 1 or min(self.tile) < 1: raise EmuError(f"GemmKernel {self.name!r}: tile and multiple must be positive")

  def supports(self, M: int, N: int, K: int) -> bool:
    """Whether (M, N, K) is a size the kernel claims: one of `shapes` if they are fixed, else positive multiples of `multiple`."""
    if self.fixed_shapes: return (M, N, K) in set(map(tuple, self.shapes))
    return min(M, N, K) >= 1 and M % self.multiple[0] == 0 and N % self.multiple[1] == 0 and K % self.multiple[2] == 0

# ---------------- an assembler with labels, for kernels written with tinygrad's DSL ----------------
@dataclass(frozen=True)
class Branch:
  """A SOPP branch to a label: `Branch(s_cbranch_scc1, "loop")` (the DSL constructor takes simm16)."""
  op: Callable
  label: str

def assemble(items: list) -> bytes:
  """Concatenate DSL instructions; a string "name:" defines a label at that point and `Branch` items jump to one
  (simm16 = dword distance from the next instruction). Returns the code bytes."""
  pc, labels = 0, {}
  for it in items:
    if isinstance(it, str): labels[it.rstrip(":")] = pc
    else: pc += 4 if isinstance(it, Branch) else len(it.to_bytes())
  out, pc = bytearray(), 0
  for it in items:
    if isinstance(it, str): continue
    if isinstance(it, Branch):
      if it.label not in labels: raise EmuError(f"assemble: branch to unknown label {it.label!r}; define it with '{it.label}:'")
      it = it.op(simm16=((labels[it.label] - pc - 4) // 4) & 0xffff)
    out += it.to_bytes(); pc += len(it.to_bytes())
  return bytes(out)

# ---------------- numbers ----------------
def to_bits(x: np.ndarray, dt: str) -> np.ndarray:
  """float64 values -> storage bits of `dt` (round to nearest even; bf16 through f32)."""
  if dt == "f16": return x.astype(np.float16).view(np.uint16)
  f = x.astype(np.float32).view(np.uint32)
  if dt == "f32": return f
  return ((f.astype(np.uint64) + 0x7fff + ((f >> 16) & 1)) >> 16).astype(np.uint16)

def from_bits(b: np.ndarray, dt: str) -> np.ndarray:
  """Storage bits of `dt` -> float64 values."""
  with np.errstate(invalid="ignore"):   # signalling NaNs (the fill pattern) become quiet ones
    if dt == "f16": return b.view(np.float16).astype(np.float64)
    if dt == "bf16": return (b.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return b.view(np.float32).astype(np.float64)

def _half_tiny(dt: str) -> float:
  p, emin, _ = DTYPES[dt]
  return 2.0 ** (emin - p)   # half the smallest subnormal: the absolute error of rounding in the subnormal range

def error_bound(K: int, acc: str, out: str, ref: np.ndarray, absprod: np.ndarray) -> np.ndarray:
  """Per-element bound on |computed - exact| of C = A @ B (docs/gemm.md, "Error bound"). With u = 2^-p the unit roundoff:

    acc_bound = 2 * K * u_acc * (|A| @ |B|) + K * tiny_acc
    bound     = acc_bound                                              (output type = accumulation type)
              = acc_bound + u_out * (|C| + acc_bound) + tiny_out       (the accumulator is rounded once more to the output)

  Any order of K products and K additions, each rounded once in the accumulation type, errs by at most
  gamma_K = K u / (1 - K u) times sum |a||b| (Higham, Accuracy and Stability of Numerical Algorithms, 3.1); the factor 2
  covers the 1/(1 - K u) term and rounding modes up to 2u per operation (a matrix unit that truncates). tiny_* is half the
  smallest subnormal of the type (underflow). `ref` is the exact product, `absprod` = |A| @ |B|, both float64."""
  up, ua = 2.0 ** -DTYPES[acc][0], 2.0 ** -DTYPES[out][0]
  b = 2 * K * up * absprod + K * _half_tiny(acc)
  return b if out == acc else b + ua * (np.abs(ref) + b) + _half_tiny(out)

def ulp(x: np.ndarray, dt: str) -> np.ndarray:
  """The spacing of `dt` numbers at |x| (the smallest subnormal's spacing below the normal range)."""
  p, emin, _ = DTYPES[dt]
  e = np.floor(np.log2(np.maximum(np.abs(x), 2.0 ** emin)))
  return 2.0 ** (e - (p - 1))

def sweep_shapes(k: GemmKernel) -> list[tuple[int, int, int]]:
  """The default sweep: the claimed shapes, plus edge sizes built from the tile and the multiples: the smallest problem,
  one tile, one tile plus the smallest remainder in each dimension (a size that is not a tile multiple when the kernel
  allows one), and two non-square ones. Only sizes the kernel supports, sorted by work (just `shapes` if they are fixed)."""
  if k.fixed_shapes: return sorted(set(map(tuple, k.shapes)), key=lambda s: (s[0] * s[1] * s[2], s))
  (tm, tn, tk), (mm, nn, km) = k.tile, k.multiple
  def up(x, m): return max(m, -(-x // m) * m)
  edge = [(mm, nn, km), (tm, tn, tk), (tm + mm, tn + nn, tk + km), (2 * tm, 3 * tn, km), (3 * tm - mm, tn + nn, 4 * tk)]
  shapes = {(up(M, mm), up(N, nn), up(K, km)) for M, N, K in edge} | set(map(tuple, k.shapes))
  return sorted((s for s in shapes if k.supports(*s)), key=lambda s: (s[0] * s[1] * s[2], s))

# ---------------- one run ----------------
@dataclass
class ShapeResult:
  """The outcome of one (shape, dtypes) run. `ok`: every element within its bound (and no fault). `max_abs`: largest
  |C - reference|; `max_ulp`: the same in units in the last place of the output type at the reference value;
  `max_ratio`: largest error / bound (<= 1 passes). `bad`: elements out of bound; `unwritten`: elements still holding the
  fill pattern. `first`: the first wrong element in row-major order: row, col, got, want, bound, and `writer` (the last
  store into it: emu.api.StoreRecord whose `addr` is the write's byte offset in C, None if nothing wrote there) with
  `stores` (how many writes hit it).
  `fault`: the emulator error, if the kernel faulted. `mix`: wave-instructions by class (docs/gemm.md); `op_counts`: per
  opcode. `lds_read` / `lds_written`: LDS bytes over all lanes. `seconds`: emulator time of the run."""
  kernel: str
  arch: str
  M: int
  N: int
  K: int
  dtypes: tuple[str, str, str]
  ok: bool = False
  max_abs: float = 0.0
  max_ulp: float = 0.0
  max_ratio: float = 0.0
  bad: int = 0
  unwritten: int = 0
  first: dict | None = None
  fault: str | None = None
  instructions: int = 0
  mix: dict = field(default_factory=dict)
  op_counts: dict = field(default_factory=dict)
  lds_read: int = 0
  lds_written: int = 0
  oob_reads: int = 0
  seconds: float = 0.0

  def as_dict(self) -> dict:
    """JSON-ready (docs/gemm.md, "JSON report")."""
    d = dataclasses.asdict(self)
    if self.first and isinstance(self.first.get("writer"), StoreRecord): d["first"]["writer"] = dataclasses.asdict(self.first["writer"])
    return d

MIX = (("matrix", lambda f, o: "WMMA" in o or "MFMA" in o), ("lds", lambda f, o: f in ("DS", "LDSDIR", "VDSDIR")),
       ("vmem", lambda f, o: f in ("GLOBAL", "FLAT", "SCRATCH", "MUBUF", "MTBUF", "MIMG", "VGLOBAL", "VFLAT", "VSCRATCH", "VBUFFER", "VIMAGE", "VSAMPLE")),
       ("smem", lambda f, o: f == "SMEM"), ("ctrl", lambda f, o: f == "SOPP"), ("salu", lambda f, o: f.startswith("SOP")), ("valu", lambda f, o: True))

def mix(op_counts: dict[str, int]) -> dict[str, int]:
  """Wave-instructions by class: matrix (WMMA/MFMA), valu, salu, vmem (global/buffer/flat/image), lds (DS), smem, ctrl
  (SOPP: waits, barriers, branches, s_endpgm)."""
  out = {k: 0 for k, _ in MIX}
  for key, n in op_counts.items():
    fmt, _, op = key.partition(" ")
    out[next(k for k, test in MIX if test(fmt, op))] += n
  return out

def _kernargs(names: tuple[str, ...], vals: dict[str, int]) -> list[int]:
  """The argument bytes as u32 words (emu.launch.prepare packs them as given)."""
  raw = b""
  for n in names:
    if n in POINTER_ARGS: raw = raw.ljust(-(-len(raw) // 8) * 8, b"\0") + struct.pack("<Q", vals[n])
    elif n in SCALAR_ARGS: raw += struct.pack("<I", vals[n])
    else: raise EmuError(f"GemmLaunch.args names {n!r}; known: {', '.join(POINTER_ARGS + SCALAR_ARGS)}")
  raw = raw.ljust(-(-len(raw) // 4) * 4, b"\0")
  return list(struct.unpack(f"<{len(raw) // 4}I", raw))

def raw_rsrc1(arch: str) -> int:
  """RSRC1 of a kernel given as raw code: the float mode tinygrad's LLVM kernels run in, the arch's assembler default
  (ArchSpec.default_rsrc1) with f32 denormals kept (MODE 0x3f0 on gfx9-gfx11, 0xf0 on gfx12)."""
  return get_arch(arch).default_rsrc1 | 3 << kd.COMPUTE_PGM_RSRC1_FLOAT_DENORM_MODE_32_SHIFT

def _prepare(k: GemmKernel, L: GemmLaunch, mem, addrs: dict[str, int], M: int, N: int, K: int):
  """The code object and its kernel arguments placed in `mem`: an emu.launch.Launch to run (more than once)."""
  from mockgpu.emu.codeobj import CodeObject, load_elf
  from mockgpu.emu.launch import prepare
  vals = {**addrs, "M": M, "N": N, "K": K, "lda": K, "ldb": K if k.b_layout == "nk" else N, "ldc": N}
  if L.code[:4] == b"\x7fELF": co = load_elf(L.code)
  else: co = CodeObject(L.code, 0, raw_rsrc1(k.arch), L.rsrc2, 0, L.lds_bytes, 0, 0, not L.wave64 and 32 in get_arch(k.arch).wave_sizes, False)
  return prepare(co, k.arch, L.grid, L.block, [], _kernargs(L.args, vals), memory=mem)

def inputs(M: int, N: int, K: int, dt: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
  """A (M x K) and B (K x N) as storage bits of `dt`: uniform in [-1, 1) rounded to `dt`, from a generator seeded by
  (seed, M, N, K), so every run of a shape sees the same data."""
  rng = np.random.default_rng([seed, M, N, K])
  return to_bits(rng.uniform(-1, 1, (M, K)), dt), to_bits(rng.uniform(-1, 1, (K, N)), dt)

def validate_one(k: GemmKernel, M: int, N: int, K: int, dts: tuple[str, str, str], *, seed: int = 0, backend: str = "c",
                 budget: int | None = None, timeout: float | None = None) -> ShapeResult:
  """Build, run and check one problem (see ShapeResult). A faulting kernel gives ok=False with `fault` set; the element
  check and the writer search run only when the kernel finished.

  Raises: EmuError if the kernel does not support the shape or dtypes (ask only for what it claims)."""
  from mockgpu.emu.memory import MemoryMap, PAGE
  from mockgpu.errors import MockGPUError
  if not k.supports(M, N, K):
    raise EmuError(f"{k.name} does not support M={M} N={N} K={K}: " + (f"it runs only {k.shapes}" if k.fixed_shapes else f"sizes must be multiples of {k.multiple}"))
  if tuple(dts) not in k.dtypes: raise EmuError(f"{k.name} does not support dtypes {'/'.join(dts)}; it supports {', '.join('/'.join(d) for d in k.dtypes)}")
  ti, ta, to = dts
  res = ShapeResult(k.name, k.arch, M, N, K, tuple(dts))
  a, b = inputs(M, N, K, ti, seed)
  bufs = {"A": np.ascontiguousarray(a), "B": np.ascontiguousarray(b if k.b_layout == "kn" else b.T),
          "C": np.full(M * N, SENTINEL[to], np.uint16 if DTYPES[to][2] == 2 else np.uint32)}
  mem = MemoryMap(strict=True)   # byte-exact: a store past C faults instead of landing in a neighbour
  for n, x in bufs.items(): mem.add(x.ctypes.data, x.nbytes, n, PAGE)
  addrs = {n: x.ctypes.data for n, x in bufs.items()}
  try: launch = k.build(M, N, K, tuple(dts))
  except Exception as e: raise EmuError(f"{k.name}: build({M}, {N}, {K}, {tuple(dts)}) raised {type(e).__name__}: {e}; fix the kernel module") from e
  if not isinstance(launch, GemmLaunch): raise EmuError(f"{k.name}: build() returned {type(launch).__name__}, not a GemmLaunch")
  run = _prepare(k, launch, mem, addrs, M, N, K)
  opts = dict(backend=backend, op_counts=True, budget=budget, timeout=timeout)
  try: st = run.run(**opts)
  except MockGPUError as e:
    res.fault = f"{type(e).__name__}: {e}"
    return res
  res.instructions, res.op_counts, res.mix, res.seconds = st.instructions, dict(st.op_counts or {}), mix(st.op_counts or {}), st.seconds
  res.lds_read, res.lds_written, res.oob_reads = st.lds_read, st.lds_written, st.oob_reads
  A64, B64 = from_bits(a, ti), from_bits(b, ti)
  ref, absprod = A64 @ B64, np.abs(A64) @ np.abs(B64)
  bound = error_bound(K, ta, to, ref, absprod)
  got_bits = bufs["C"].reshape(M, N)
  got = from_bits(got_bits, to)
  with np.errstate(invalid="ignore", over="ignore"):
    err = np.abs(got - ref)
    bad = ~(err <= bound)   # NaN and inf are bad
    fin = np.where(np.isfinite(err), err, np.inf)
    res.max_abs, res.max_ulp, res.max_ratio = float(fin.max()), float((fin / ulp(ref, to)).max()), float((fin / bound).max())
  res.bad, res.unwritten, res.ok = int(bad.sum()), int((got_bits == SENTINEL[to]).sum()), not bad.any()
  if not res.ok:
    r, c = divmod(int(np.argmax(bad.reshape(-1))), N)
    res.first = {"row": r, "col": c, "got": float(got[r, c]), "want": float(ref[r, c]), "bound": float(bound[r, c]),
                 "unwritten": bool(got_bits[r, c] == SENTINEL[to])}
    size = DTYPES[to][2]
    bufs["C"][:] = SENTINEL[to]   # the same run again, watching that element's bytes
    ws = run.run(**opts, watch=(addrs["C"] + (r * N + c) * size, size)).watch
    res.first |= {"stores": ws.count, "writer": ws.last and dataclasses.replace(ws.last, addr=ws.last.addr - addrs["C"])}
  return res

# ---------------- finding a kernel ----------------
FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "gemm"   # the shipped examples (mockgpu.fixtures.gemm)

def _from_json(path: pathlib.Path) -> GemmKernel:
  """A code object described by a JSON file (docs/gemm.md, "A code object and its launch")."""
  try: d = json.loads(path.read_text())
  except (OSError, ValueError) as e: raise EmuError(f"{path}: cannot read the kernel description: {e}") from e
  miss = [k for k in ("arch", "code", "dtypes", "shapes", "block") if k not in d]
  if miss: raise EmuError(f"{path}: the kernel description lacks {', '.join(miss)} (docs/gemm.md lists the keys)")
  try: code = (path.parent / d["code"]).read_bytes()
  except OSError as e: raise EmuError(f"{path}: cannot read its code object {d['code']!r} (relative to the description): {e.strerror or e}") from e
  tile = tuple(d.get("tile", d.get("multiple", (16, 16, 16))))
  def build(M: int, N: int, K: int, dtypes) -> GemmLaunch:
    grid = tuple(d["grid"]) if "grid" in d else (-(-N // tile[1]), -(-M // tile[0]), 1)
    return GemmLaunch(code, grid, tuple(d["block"]), tuple(d.get("args", ("A", "B", "C", "M", "N", "K"))), d.get("lds_bytes", 0),
                      d.get("rsrc2", DEFAULT_RSRC2), d.get("wave64", False))
  return GemmKernel(d.get("name", path.stem), d["arch"], tuple(map(tuple, d["dtypes"])), tile, tuple(d.get("multiple", (1, 1, 1))),
                    tuple(map(tuple, d["shapes"])), build, d.get("b_layout", "kn"), d.get("fixed_shapes", False))

def load_kernel(spec: str) -> GemmKernel:
  """The GemmKernel named by `spec`: a shipped example (`mfma_gfx950`, see FIXTURES), a Python file or module defining
  KERNEL, or a JSON description of a code object. Raises EmuError saying what was tried."""
  path = pathlib.Path(spec)
  if path.suffix == ".json": return _from_json(path)
  if path.suffix == ".py":
    if not path.is_file(): raise EmuError(f"{spec}: no such file")
    sp = importlib.util.spec_from_file_location(f"mockgpu_gemm_{path.stem}", path)
    mod = importlib.util.module_from_spec(sp)
    try: sp.loader.exec_module(mod)
    except Exception as e: raise EmuError(f"{spec}: importing it raised {type(e).__name__}: {e}") from e
  elif (FIXTURES / f"{spec}.json").is_file(): return _from_json(FIXTURES / f"{spec}.json")
  else:
    name = f"mockgpu.fixtures.gemm.{spec}" if (FIXTURES / f"{spec}.py").is_file() else spec
    try: mod = importlib.import_module(name)
    except ModuleNotFoundError as e:
      known = ", ".join(sorted(p.stem for p in FIXTURES.iterdir() if p.suffix in (".py", ".json")))
      raise EmuError(f"{spec!r} is not a shipped kernel ({known}), a .py or .json file, or an importable module ({e})") from e
  k = getattr(mod, "KERNEL", None)
  if not isinstance(k, GemmKernel): raise EmuError(f"{spec}: defines no KERNEL = GemmKernel(...) (found {type(k).__name__})")
  return k
