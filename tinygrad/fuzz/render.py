"""The render fuzzer: the same random program on every renderer/backend, judged against a reference with per-op ULP classes.

Programs are small SSA lists over one loop, optionally reducing over an inner loop and with tinygrad Opts (vectors, local
memory), on integer, bool, float16, bfloat16, fp8, float32 and float64 values (see `render_ir`), lowered by tinygrad 0.14.0 for
each executor of `mockgpu.tinygrad.fuzz.kexec` (PYTHON, CPU with CLANG/LLVM/X86, aarch64 under unicorn, the mock AMD GPU;
opt-in gfx1201, gfx950 and NVIDIA PTX) that supports the case's dtypes and opts. Integers, bools and
exactly-determined floats must match the reference bit for bit (+0.0 and -0.0 are equal: the LLVM renderer emits `nsz`);
other floats must lie within the error bound the reference carries. Failure classes: `mismatch:<EXEC>` (a value outside its
class), `fault:<EXEC>` (the kernel faulted), `crash:<EXEC>` (lowering, rendering or compiling raised),
`param-slot-collision:<EXEC>` (the lowered kernel's PARAM slots collide, see kexec.ParamSlotCollision; not run),
`cast-nonfinite:<EXEC>` (the executor raised casting inf/NaN to an integer, which the reference leaves undetermined).
"""
from __future__ import annotations
import copy, inspect, json, math, random
from collections import Counter
from typing import Any, Iterator, Sequence
from tinygrad.codegen.opt import KernelOptError
from mockgpu.tinygrad.fuzz.core import Fuzzer, Failure, safe_check
from mockgpu.tinygrad.fuzz import render_ir as ir
from mockgpu.tinygrad.fuzz.kexec import Executor, ExecFault, ParamSlotCollision, EXECUTORS, GPU_EXECUTORS, executor

__all__ = ["RenderFuzzer", "DEFAULT_EXECUTORS", "lane_ok", "simpler"]

DEFAULT_EXECUTORS: tuple[str, ...] = EXECUTORS

def lane_ok(got:Any, ref:Any, dt:str) -> bool:
  """Args: got: a backend's value; ref: the reference (None, bool/int, or (float, err)); dt: the dtype name.
  Returns: whether `got` is within the class of `ref` (None accepts anything)."""
  if ref is None: return True
  if dt not in ir.FLOATS: return ir.to_bits(got, dt) == ir.to_bits(ref, dt)
  v, e = ref
  got = float(got)
  if math.isnan(v) or math.isnan(got): return math.isnan(v) and math.isnan(got)
  if e == 0 or math.isinf(v) or math.isinf(got): return got == v
  return abs(got - v) <= 2 * e

def simpler(bits:int, dt:str) -> list[int]:
  """Simpler values than raw `bits` of dtype `dt`, most aggressive first: 0, 1, the magnitude, then integers halved toward 0
  (truncating division by 2) and floats rounded to their integer part or to 1, 2, 4, 8, 10, 12 or 16 significant bits and
  scaled toward 1 by 2 (halved above 2, doubled below 0.5), so greedy minimisation walks a value to a small canonical one (the
  fewest significant bits that still fail) in about log2 steps. Returns: their bits (never `bits`)."""
  v = ir.from_bits(bits, dt)
  if dt == "bool": cands: list = [False]
  elif dt in ir.FLOATS:
    cands = [0.0, 1.0, abs(v)]
    if math.isfinite(v) and v != 0:
      m, e = math.frexp(v)
      cands += [float(math.trunc(v))] + [math.ldexp(round(m * 2**k) / 2**k, e) for k in (1, 2, 4, 8, 10, 12, 16)] + \
               ([v / 2] if abs(v) >= 2 else [v * 2] if abs(v) < 0.5 else [])
  else: cands = [0, 1, abs(v), int(v / 2) if abs(v) < 2**52 else v // 2 if v > 0 else -(-v // 2)]
  out: list[int] = []
  for c in cands:
    try: b = ir.to_bits(c, dt)
    except (OverflowError, ValueError): continue
    if b != bits and b not in out: out.append(b)
  return out

class RenderFuzzer(Fuzzer):
  """Differential fuzzer of tinygrad's renderers.

  Args:
    executors: names from `kexec.EXECUTORS` (default: all of them).
    max_nodes: the most ALU/CAST nodes per program.
    avoid_known: do not generate the triggers of the documented findings (see `render_ir.generate`); pair it with the campaign's
      `--ignore param-slot-collision --ignore cast-nonfinite` (findings F1, F7).
    extra: additional `Executor` objects (tests inject a renderer with a known bug here; not saved in `options`).
  """
  name = "render"
  def __init__(self, executors:Sequence[str]=DEFAULT_EXECUTORS, max_nodes:int=10, avoid_known:bool=False, extra:Sequence[Executor]=()):
    self.executor_names, self.max_nodes, self.avoid_known = tuple(executors), max_nodes, avoid_known
    self.extra, self._executors, self._stats = tuple(extra), None, Counter()
    self._supported: dict[str, set[str]] = {}
  def options(self) -> dict: return {"executors": list(self.executor_names), "max_nodes": self.max_nodes, "avoid_known": self.avoid_known}
  def stats(self) -> dict[str, int]: return dict(self._stats)
  def executors(self) -> list[Executor]:
    """Returns: the executors, built on first use (so forked campaign workers build their own)."""
    if self._executors is None:
      self._executors = [executor(n) for n in self.executor_names] + list(self.extra)
      for ex in self._executors:
        if ex.warm is not None: ex.warm()  # GPU workers start while the CPU executors run the first case
    return self._executors

  def prepare(self) -> None:
    """Build the executors, start their GPU workers and compile one trivial program on each (its counters are not kept)."""
    saved = self._stats.copy()
    safe_check(self, {"n": 1, "axis": "LOOP", "inputs": [{"dtype": "int32", "bits": [1]}], "nodes": [["in", "int32", 0]], "outs": [0]})
    self._stats = saved

  def _dtypes(self, ex:Executor) -> set[str]:
    """Returns: the render dtypes `ex`'s renderer supports (a case using another one is not run there: `skipped_dtype`)."""
    if ex.name not in self._supported:
      sup = ex.renderer().supported_dtypes()
      self._supported[ex.name] = {"bool", *(d for d in ir.INTS + ir.FLOATS if ir.tg_dtype(d) in sup)}
    return self._supported[ex.name]

  def generate(self, rng:random.Random) -> dict: return ir.generate(rng, self.max_nodes, self.avoid_known)

  def check(self, case:dict) -> Failure|None:
    ub: set[str] = set()
    ref, out_dts = ir.evaluate(case, signed_overflow=not self.avoid_known, ub=ub), [case["nodes"][o][1] for o in case["outs"]]
    dts = {nd[1] for nd in case["nodes"]}
    ast = ir.build_ast(case)
    lanes = [x for col in ref for x in col]
    self._stats.update({"lanes": len(lanes), "lanes_undetermined": sum(x is None for x in lanes)})
    for ex in self.executors():
      if not dts <= self._dtypes(ex):
        self._stats["skipped_dtype"] += 1
        continue
      self._stats["runs"] += 1
      arrays = ir.to_arrays(case, out_dts)
      try: ex.run(ast, arrays)
      except ExecFault as e:
        if "division" in ub and "SIGFPE" in e.detail:  # x86 traps on a division the reference leaves undefined
          self._stats["division_traps"] += 1
          continue
        return Failure(f"fault:{ex.name}", f"{ex.name} faulted: {e.detail}")
      except ParamSlotCollision as e: return Failure(f"param-slot-collision:{ex.name}", str(e))
      except Exception as e:
        if isinstance(e, KernelOptError) and case.get("opts"):  # e.g. LOCAL/GROUP on a renderer without local memory
          self._stats["skipped_opts"] += 1
          continue
        if isinstance(e, (OverflowError, ValueError)) and "cannot convert float" in str(e):
          return Failure(f"cast-nonfinite:{ex.name}", f"{ex.name} cannot cast a non-finite float to an integer: {e}")
        return Failure(f"crash:{ex.name}", f"{ex.name} raised {type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}")
      for j, (dt, col) in enumerate(zip(out_dts, ref)):
        for lane in range(case["n"]):
          got = ir.from_array(arrays[j][lane].item(), dt)
          if not lane_ok(got, col[lane], dt):
            want = col[lane] if dt not in ir.FLOATS else f"{ir.value_str(col[lane][0])} +- {2*col[lane][1]:.3g}"
            return Failure(f"mismatch:{ex.name}", f"{ex.name} out{j}[{lane}] ({dt}) = {ir.value_str(got)}, reference {want}")
    return None

  def shrink(self, case:dict) -> Iterator[dict]:
    if len(case["outs"]) > 1:
      for o in case["outs"]: yield ir.gc({**case, "outs": [o]})
      for k in range(len(case["outs"])): yield ir.gc({**case, "outs": case["outs"][:k] + case["outs"][k+1:]})
    n, k = case["n"], ir.red_k(case)
    if case.get("opts"): yield {key: v for key, v in case.items() if key != "opts"}
    if k > 1:
      for keep in (1, k // 2):  # iterations j < keep of every lane (1: no reduction left)
        c = copy.deepcopy(case)
        for inp in c["inputs"]: inp["bits"] = [b for i in range(n) for b in inp["bits"][i*k:i*k+keep]]
        if keep == 1: del c["red"]
        else: c["red"]["k"] = keep
        yield c
    if n > 1:
      spans = [(0, n//2), (n//2, n)] + [(i, i+1) for i in range(n)] + [(0, n-1), (1, n)]
      for a, b in spans: yield self._lanes(case, a, b)
    if case["axis"] == "GLOBAL": yield {**case, "axis": "LOOP"}
    nodes = case["nodes"]
    for i in reversed(range(len(nodes))):
      nd = nodes[i]
      if nd[0] in ("in", "idx", "const"): continue
      for a in dict.fromkeys(nd[2:]):
        if nodes[a][1] == nd[1]: yield self._replace(case, i, a)
      for v in (0, 1):
        yield self._set(case, i, ["const", nd[1], ir.to_bits(v if nd[1] not in ir.FLOATS else float(v), nd[1])])
    for i, nd in enumerate(nodes):
      if nd[0] == "const":
        for b in simpler(nd[2], nd[1]): yield self._set(case, i, ["const", nd[1], b])
      if nd[0] == "idx" and nd[2] != 0: yield self._set(case, i, ["idx", nd[1], 0])
      if nd[0] == "in" and n == 1: yield self._set(case, i, ["const", nd[1], case["inputs"][nd[2]]["bits"][0]])
    for k, inp in enumerate(case["inputs"]):
      for lane, b in enumerate(inp["bits"]):
        for simple in simpler(b, inp["dtype"]):
          c = copy.deepcopy(case)
          c["inputs"][k]["bits"][lane] = simple
          yield c

  @staticmethod
  def _lanes(case:dict, a:int, b:int) -> dict:
    c, k = copy.deepcopy(case), ir.red_k(case)
    c["n"] = b - a
    for inp in c["inputs"]: inp["bits"] = inp["bits"][a*k:b*k]
    for nd in c["nodes"]:
      if nd[0] == "idx": nd[2] += a
    return c
  @staticmethod
  def _replace(case:dict, i:int, j:int) -> dict:
    c = copy.deepcopy(case)
    for nd in c["nodes"][i+1:]:
      if nd[0] not in ("in", "idx", "const"): nd[2:] = [j if x == i else x for x in nd[2:]]
    c["outs"] = [j if o == i else o for o in c["outs"]]
    return ir.gc(c)
  @staticmethod
  def _set(case:dict, i:int, nd:list) -> dict:
    c = copy.deepcopy(case)
    c["nodes"][i] = nd
    return ir.gc(c)

  def describe(self, case:dict) -> str:
    extra = (f" red={case['red']['op']}x{case['red']['k']}" if case.get("red") else "") + (f" opts={case['opts']}" if case.get("opts") else "")
    return f"n={case['n']}{extra} " + " ".join(f"%{i}={nd[0]}.{nd[1]}{tuple(nd[2:])}" for i, nd in enumerate(case["nodes"])) + f" outs={case['outs']}"

  def repro(self, case:dict) -> str:
    f = self.check(case)
    bad = f.cls.split(":", 1)[1] if f is not None and ":" in f.cls else "CLANG"
    msg = f.message if f else "passes now"
    # a failure of a test-only executor (an injected renderer) cannot reproduce on stock tinygrad: the script runs CLANG instead
    if bad not in EXECUTORS + GPU_EXECUTORS: bad, msg = "CLANG", f"{msg}\n(found with the test-only executor {bad}; stock CLANG is run instead)"
    ref = ir.evaluate(case, signed_overflow=not self.avoid_known)
    expect = [[None if r is None else (list(r) if isinstance(r, tuple) else r) for r in col] for col in ref]
    return _REPRO.format(msg=msg, build=inspect.getsource(ir.bits_value) + "\n" + inspect.getsource(ir.build_ast), case=json.dumps(case),
                         expect=json.dumps(expect), executor=json.dumps(bad), to_arrays=_TO_ARRAYS)

_TO_ARRAYS = '''
RAW = {"bfloat16": "uint16", "fp8e4m3": "uint8", "fp8e5m2": "uint8"}  # numpy has no such dtype: arrays hold their bits
def arrays(case):
  npd = lambda n: np.bool_ if n == "bool" else np.dtype(RAW.get(n, n))
  outs = [np.zeros(case["n"], npd(case["nodes"][o][1])) for o in case["outs"]]
  return outs + [np.array(i["bits"] if i["dtype"] in RAW else [bits_value(b, i["dtype"]) for b in i["bits"]], npd(i["dtype"])) for i in case["inputs"]]
'''

_REPRO = '''"""Standalone repro of a mockgpu render-fuzzer failure (needs tinygrad; numpy; clang for CPU executors, unicorn for *-A64,
mockgpu for the GPUs: the mock AMD GPU behind DEV=MOCKKFD+AMD::<arch>, the mock NVIDIA GPU behind DEV=MOCK+NV:PTX).
{msg}
"""
import json, math, os, shutil, sys
GPU = {executor}.startswith("AMD") or {executor} == "NV"
ARCH = {executor}.split("-", 1)[1] if {executor}.startswith("AMD-") else "gfx1100"
if GPU:  # activate the mock before tinygrad's runtime is imported
  os.environ["DEV"] = "MOCK+NV:PTX" if {executor} == "NV" else f"MOCKKFD+AMD::{{ARCH}}"
  if ARCH == "gfx950":  # tinygrad compiles gfx950 with libLLVM >= 20
    from mockgpu.tinygrad.checks import find_libllvm
    os.environ["LLVM_PATH"] = os.environ.get("MOCKGPU_LLVM20") or find_libllvm(20)
  from mockgpu.tinygrad.activate import install
  install()
import numpy as np
if not shutil.which(os.environ.get("CC", "clang")):
  os.environ["CC"] = next(c for c in ("clang-19", "clang-18", "clang-17", "clang") if shutil.which(c))
{build}
{to_arrays}
def run(name, ast, arrs):
  from tinygrad.codegen import do_to_program
  from tinygrad.device import Device
  from tinygrad.helpers import Target
  if name == "PYTHON":
    from tinygrad.runtime.ops_python import PythonRenderer
    prg = do_to_program(ast, PythonRenderer(Target("PYTHON")))
    Device["PYTHON"].runtime(prg.to_elf())(*[memoryview(arrs[i].view(np.uint8)).cast("B") for i in prg.arg.globals],
                                            global_size=prg.arg.global_size, local_size=prg.arg.local_size or (1, 1, 1), vals=prg.arg.vals({{}}))
    return
  if name.startswith("AMD") or name == "NV":
    from tinygrad.renderer.llvmir import AMDLLVMRenderer
    from tinygrad.renderer.ptx import PTXRenderer
    dev = "NV" if name == "NV" else "AMD"
    ren = PTXRenderer(Target("NV", "PTX", "sm_70", "MOCK")) if name == "NV" else AMDLLVMRenderer(Target("AMD", "LLVM", ARCH))
    prg, al = do_to_program(ast, ren), Device[dev].allocator
    mvs = {{i: memoryview(arrs[i].view(np.uint8)).cast("B") for i in prg.arg.globals}}
    bufs = {{i: al.alloc(max(mv.nbytes, 1)) for i, mv in mvs.items()}}
    for i, b in bufs.items(): al._copyin(b, mvs[i])
    Device[dev].runtime(prg.to_elf())(*bufs.values(), global_size=prg.arg.global_size, local_size=prg.arg.local_size or (1, 1, 1),
                                      vals=prg.arg.vals({{}}), wait=True)
    for i, b in bufs.items(): al._copyout(mvs[i], b)
    return
  from tinygrad.renderer.cstyle import ClangRenderer
  from tinygrad.renderer.llvmir import CPULLVMRenderer
  from tinygrad.renderer.isa.x86 import X86Renderer
  base = name.removesuffix("-A64")
  cls = {{"CLANG": ClangRenderer, "LLVM": CPULLVMRenderer, "X86": X86Renderer}}[base]
  arch = "arm64,generic" if name.endswith("-A64") else Device["CPU"].arch
  prg = do_to_program(ast, cls(Target("CPU", base, arch)))
  print(prg.src[2].arg if isinstance(prg.src[2].arg, str) else "")
  if name.endswith("-A64"):
    from unicorn import Uc, UC_ARCH_ARM64, UC_MODE_ARM, arm64_const as a
    from tinygrad.runtime.support.elf import jit_loader
    img, uc = jit_loader(prg.src[3].arg, base=0x10000000), Uc(UC_ARCH_ARM64, UC_MODE_ARM)
    uc.mem_map(0x10000000, (len(img) + 0x1fff) & ~0xfff); uc.mem_write(0x10000000, img)
    uc.mem_map(0x20000000, 0x100000); uc.mem_map(0x2ff00000, 0x1000)
    addrs = [0x40000000 + k * 0x100000 for k in range(len(prg.arg.globals))]
    for ad, i in zip(addrs, prg.arg.globals): uc.mem_map(ad, 0x80000); uc.mem_write(ad, arrs[i].tobytes())
    for tid in range(int(prg.arg.global_size[0])):
      args = addrs + [tid] * (len(prg.to_elf().signature) - len(addrs))
      for k, v in enumerate(args): uc.reg_write(a.UC_ARM64_REG_X0 + k, v)
      uc.reg_write(a.UC_ARM64_REG_SP, 0x200ff000); uc.reg_write(a.UC_ARM64_REG_LR, 0x2ff00000)
      uc.emu_start(0x10000000, 0x2ff00000)
    for ad, i in zip(addrs, prg.arg.globals): arrs[i][...] = np.frombuffer(bytes(uc.mem_read(ad, arrs[i].nbytes)), arrs[i].dtype)
    return
  class Buf:
    def __init__(self, arr): self.arr = arr; self.va_addr = arr.ctypes.data
  al = {{i: (lambda r: r[(-r.ctypes.data) % 64:][:arrs[i].nbytes].view(arrs[i].dtype))(np.zeros(arrs[i].nbytes + 64, np.uint8))
        for i in prg.arg.globals}}
  for i in al: al[i][...] = arrs[i]
  Device["CPU"].runtime(prg.to_elf())(*[Buf(al[i]) for i in prg.arg.globals], global_size=prg.arg.global_size, vals=prg.arg.vals({{}}))
  for i in al: arrs[i][...] = al[i]

case = json.loads({case!r})
expect = json.loads({expect!r})  # per output lane: null (any), an int/bool, or [float, abs error bound]
bad = False
for name in ("PYTHON", {executor}):
  arrs = arrays(case)
  run(name, build_ast(case), arrs)
  for j, col in enumerate(expect):
    for lane, want in enumerate(col):
      got = arrs[j][lane].item()
      if (dt:=case["nodes"][case["outs"][j]][1]) in RAW: got = bits_value(got, dt)
      if want is None: continue
      if isinstance(want, list):
        v, e = want
        if math.isnan(v) or math.isnan(got): ok = math.isnan(v) and math.isnan(got)
        else: ok = got == v if e == 0 or math.isinf(v) else abs(got - v) <= 2 * e
      else: ok = got == want
      print(f"{{name:9s}} out{{j}}[{{lane}}] = {{got!r}} reference {{want!r}} {{'ok' if ok else 'MISMATCH'}}")
      bad |= not ok
sys.exit(1 if bad else 0)
'''
