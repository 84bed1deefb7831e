"""The generated-C backend: load the per-arch library (building it once, see build.py) and run a dispatch inside C with
the GIL released (ctypes releases it for CDLL calls), or with a GIL policy, holding it while the policy says so
(csrc/emu_xlat.h gil_poll)."""
from __future__ import annotations
import ctypes, functools, os, sys, threading, time
from typing import Callable
import numpy as np
from mockgpu.emu import translate
from mockgpu.emu.api import Dispatch, Stats, WaveState
from mockgpu.emu.arch import ArchSpec, unmodelled_ops
from mockgpu.emu.build import Library, build
from mockgpu.emu.errors import BackendUnavailable, EmuError, GPUFault, FaultReport, UnsupportedDispatch
from mockgpu.emu.memory import MemoryMap
from mockgpu.emu.report import oob_report, raise_status, watch_report

__all__ = ["run", "load"]

class MRange(ctypes.Structure): _fields_ = [("start", ctypes.c_uint64), ("end", ctypes.c_uint64)]
class WatchRec(ctypes.Structure):
  """Mirror of WatchRec in csrc/emu_core.h."""
  _fields_ = [("addr", ctypes.c_uint64), ("pc", ctypes.c_uint64), *[(n, ctypes.c_int32) for n in ("size", "lane", "wave", "len", "fmt", "op")],
              ("wg", ctypes.c_uint32 * 3), ("raw", ctypes.c_uint32 * 4), ("pad", ctypes.c_uint32)]
  def record(self) -> tuple: return (self.addr, self.size, self.lane, self.wave, tuple(self.wg), self.pc, bytes(self.raw)[:max(0, min(self.len, 16))], self.fmt, self.op)

class EmuArgs(ctypes.Structure):
  """Mirror of EmuArgs in csrc/emu_core.h (same order, natural alignment)."""
  _fields_ = [("code_addr", ctypes.c_uint64), ("ranges", ctypes.POINTER(MRange)), ("nranges", ctypes.c_int64),
    ("mranges", ctypes.POINTER(MRange)), ("nmranges", ctypes.c_int64),
    ("grid", ctypes.c_uint32 * 3), ("block", ctypes.c_uint32 * 3), ("user_sgprs", ctypes.c_uint32 * 32), ("nuser", ctypes.c_uint32),
    ("rsrc1", ctypes.c_uint32), ("rsrc2", ctypes.c_uint32), ("rsrc3", ctypes.c_uint32), ("mode", ctypes.c_uint32),
    ("wave_size", ctypes.c_uint32), ("lds_bytes", ctypes.c_uint32), ("scratch_per_lane", ctypes.c_uint32), ("tgid_in_ttmp", ctypes.c_uint32),
    ("resident", ctypes.c_uint32), ("poison", ctypes.c_uint32),
    ("budget", ctypes.c_uint64), ("timeout", ctypes.c_double), ("op_counts", ctypes.POINTER(ctypes.c_uint64)),
    ("cap_sgpr", ctypes.POINTER(ctypes.c_uint32)), ("cap_vgpr", ctypes.POINTER(ctypes.c_uint32)), ("cap_misc", ctypes.c_uint64 * 7),
    ("instructions", ctypes.c_uint64), ("waves", ctypes.c_uint64), ("workgroups", ctypes.c_uint64),
    *[(n, ctypes.c_int32) for n in ("status", "f_kind", "f_space", "f_size", "f_lane", "f_wave", "f_fmt", "f_op", "f_len", "f_pad")],
    ("f_addr", ctypes.c_uint64), ("f_pc", ctypes.c_uint64), ("f_limit", ctypes.c_uint64),
    ("f_wg", ctypes.c_uint32 * 3), ("f_raw", ctypes.c_uint32 * 4), ("f_msg", ctypes.c_char * 160), ("f_info", ctypes.c_int64 * 6),
    ("v_count", ctypes.c_uint64), ("v_addr", ctypes.c_uint64), ("v_pc", ctypes.c_uint64),
    *[(n, ctypes.c_int32) for n in ("v_size", "v_lane", "v_wave", "v_len", "v_fmt", "v_op")], ("v_wg", ctypes.c_uint32 * 3), ("v_raw", ctypes.c_uint32 * 4),
    ("v_pad", ctypes.c_uint32), *[(n, ctypes.c_uint64) for n in ("w_lo", "w_hi", "w_alo", "w_ahi", "w_count")], ("w_first", WatchRec),
    ("w_last", WatchRec), ("lds_rd", ctypes.c_uint64), ("lds_wr", ctypes.c_uint64),
    ("xlat", ctypes.c_void_p), ("xlat_pcs", ctypes.POINTER(ctypes.c_uint32)), ("xlat_n", ctypes.c_uint32), ("trace_cap", ctypes.c_uint32),
    ("trace_pcs", ctypes.POINTER(ctypes.c_uint32)), ("trace_n", ctypes.c_uint64), ("threads", ctypes.c_uint32), ("threads_used", ctypes.c_uint32),
    ("gil_save", ctypes.c_void_p), ("gil_restore", ctypes.c_void_p), ("gil_hold", ctypes.c_void_p), ("threads_held", ctypes.c_uint32),
    ("gil_pad", ctypes.c_uint32), ("xlat_poll", ctypes.c_void_p), ("deny", ctypes.POINTER(ctypes.c_uint8)), ("deny_msg", ctypes.c_char_p)]

_POLLING = threading.local()   # (translator, code_addr, code_end, acc_off, sync) of the dispatch this thread runs

@ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint32), ctypes.c_uint64, ctypes.c_double)
def _xlat_poll(pcs, n, seconds):
  """EmuArgs.xlat_poll (csrc/emu_xlat.h): the translation a running dispatch may adopt now, or None. One callback for every
  dispatch (made once: a ctypes callback costs more to make than a small dispatch takes)."""
  try:
    tr, code_addr, code_end, acc_off, sync = _POLLING.args
    return tr.running(code_addr, code_end, pcs[:n], seconds, acc_off, sync) or None
  except Exception: return None   # the dispatch goes on interpreted; a failed translation says why in Kernel.error
_XLAT_POLL = ctypes.cast(_xlat_poll, ctypes.c_void_p).value

def poison() -> int:
  """EmuArgs.poison from $MOCKGPU_EMU_POISON (a byte, e.g. 0xa5; unset or empty: off): every handler's pseudocode state
  starts filled with that byte (docs/emu.md, "Pseudocode state")."""
  v = os.environ.get("MOCKGPU_EMU_POISON", "")
  if not v: return 0
  try: b = int(v, 0)
  except ValueError: b = -1
  if not 0 <= b <= 255: raise UnsupportedDispatch(f"MOCKGPU_EMU_POISON={v!r}: give one byte (0..255, e.g. 0xa5), or unset it")
  return 0x100 | b

@functools.cache
def _deny(arch: ArchSpec):
  """EmuArgs.deny/deny_msg for `arch`: per handler slot of its library 1 if the op is in arch.unmodelled_ops (None, None if
  there are none). Cached per arch: hashing the 5000+ handler names per dispatch cost more than an empty dispatch."""
  if not (um := unmodelled_ops(arch)): return None, None
  handlers = load(arch)[1].handlers
  msg = dict.fromkeys(um.values())
  assert len(msg) == 1, "EmuArgs carries one deny message per dispatch"
  from mockgpu.emu.fidelity import mnemonic
  return (ctypes.c_uint8 * len(handlers))(*(mnemonic(h) in um for h in handlers)), next(iter(msg)).encode()

@functools.cache
def load(arch: ArchSpec) -> tuple[ctypes.CDLL, Library]:
  """(CDLL, Library) for `arch`, built on first use in this process (or taken from the disk cache)."""
  lib = build(arch)
  try: dll = ctypes.CDLL(str(lib.path))
  except OSError as e:   # whole bytes the loader still rejects (a cache restored onto another system): rebuild once
    print(f"mockgpu: loading {lib.path} failed ({e}); rebuilding it", file=sys.stderr)
    try: dll = ctypes.CDLL(str((lib:=build(arch, force=True)).path))
    except OSError as e2: raise BackendUnavailable(f"the {arch.name} emulator library {lib.path} does not load: {e2}") from e2
  dll.emu_run.argtypes, dll.emu_run.restype = [ctypes.POINTER(EmuArgs), ctypes.c_uint64], ctypes.c_int
  return dll, lib

_GIL = tuple(ctypes.cast(getattr(ctypes.pythonapi, f), ctypes.c_void_p).value for f in ("PyEval_SaveThread", "PyEval_RestoreThread"))

@functools.cache
def _run_holding(path: os.PathLike):
  """emu_run of the library at `path` called without releasing the GIL (a dispatch with a GIL policy releases it itself)."""
  (fn := ctypes.PyDLL(str(path)).emu_run).argtypes, fn.restype = [ctypes.POINTER(EmuArgs), ctypes.c_uint64], ctypes.c_int
  return fn

@functools.lru_cache(maxsize=8)
def _asker(policy: Callable[[], bool]) -> tuple[object, int]:
  """(the C callback asking `policy`, its address): made once per policy, not per dispatch."""
  def ask() -> int:
    try: return int(bool(policy()))
    except Exception: return 0   # a broken policy releases the GIL, as a dispatch without one
  cb = ctypes.CFUNCTYPE(ctypes.c_int)(ask)
  return cb, ctypes.cast(cb, ctypes.c_void_p).value

def run(arch: ArchSpec, d: Dispatch, memory: MemoryMap, *, budget: int, timeout: float | None, op_counts: bool, capture: bool,
        resident: int, watch: tuple[int, int] | None = None, threads: int = 1, hold_gil: Callable[[], bool] | None = None,
        threads_held: int = 1) -> Stats:
  """Run `d` on the C backend. See mockgpu.emu.api.run for the contract."""
  dll, lib = load(arch)
  exact, mapped = memory.spans()
  if (code:=mapped.find(d.code_addr)) is None:
    near = memory.nearest(d.code_addr)
    raise GPUFault(FaultReport("fetch", "code", d.code_addr, 4, arch.name, 0, d.code_addr, b"", "(code not mapped)",
                               nearest=(near.name, near.start, near.size) if near else None, offset=d.code_addr - near.start if near else None),
                   "register the code object's buffer in the MemoryMap before dispatching")
  a = EmuArgs()
  def arr(sp): return ctypes.cast(sp.words(), ctypes.POINTER(MRange))   # the pointer keeps the array alive (ctypes _objects)
  check = exact if memory.strict else mapped
  if watch is not None:   # api.run checked that one span holds it
    check, (a.w_alo, a.w_ahi) = check.carve(watch[0], watch[0] + watch[1])
    a.w_lo, a.w_hi = watch[0], watch[0] + watch[1]
  a.code_addr, a.ranges, a.nranges = d.code_addr, arr(check), len(check)
  if memory.strict: a.mranges, a.nmranges = arr(mapped), len(mapped)
  a.grid[:], a.block[:] = d.grid, d.block
  us = list(d.user_sgprs)[:32]
  a.user_sgprs[:len(us)] = us
  a.nuser, a.rsrc1, a.rsrc2, a.rsrc3, a.mode = len(us), d.rsrc1, d.rsrc2, d.rsrc3, arch.initial_mode(d.rsrc1)
  a.wave_size, a.lds_bytes, a.scratch_per_lane, a.tgid_in_ttmp = d.wave_size, d.lds_size, d.scratch_bytes_per_lane, int(arch.tgid_in_ttmp)
  a.budget, a.timeout, a.resident, a.poison, a.threads = budget, float(timeout or 0.0), min(resident, 1 << 31), poison(), min(threads, 1 << 10)
  counts = (ctypes.c_uint64 * len(lib.handlers))() if op_counts else None
  if counts is not None: a.op_counts = counts
  if capture:
    cs, cv = (ctypes.c_uint32 * 128)(), (ctypes.c_uint32 * (arch.nvregs * 64))()
    a.cap_sgpr, a.cap_vgpr = cs, cv
  a.deny, a.deny_msg = _deny(arch)
  # the translator: not on an arch that stops some ops at decode
  xm, xk, trace, acc_off = translate.mode(), None, None, ((d.rsrc3 & 63) + 1) * 4 if arch.num_agprs else 0
  if xm != "off" and not a.deny:
    tr = translate.translator(arch, dll, lib.path.stem)
    if (xk := tr.lookup(d.code_addr, code[1])) is not None: a.xlat, a.xlat_pcs, a.xlat_n = xk.fn, xk.pcs_arr, len(xk.pcs)
    else:
      trace = (ctypes.c_uint32 * translate.TRACE_CAP)(); a.trace_pcs, a.trace_cap = trace, translate.TRACE_CAP
      _POLLING.args, a.xlat_poll = (tr, d.code_addr, code[1], acc_off, xm == "sync"), _XLAT_POLL
  emu_run = dll.emu_run
  if hold_gil is not None:   # csrc/emu_xlat.h gil_poll; `asker` keeps the callback alive until the call returns
    emu_run, asker = _run_holding(lib.path), _asker(hold_gil)
    a.gil_save, a.gil_restore, a.gil_hold, a.threads_held = *_GIL, asker[1], min(threads_held, 1 << 10)
  t0 = time.perf_counter()
  st = emu_run(ctypes.byref(a), code[1])
  dt = time.perf_counter() - t0
  if trace is not None and st == 0: tr.observe(d.code_addr, code[1], list(trace[:a.trace_n]), dt, acc_off, xm == "sync")
  oc = {lib.handlers[i]: int(counts[i]) for i in np.flatnonzero(np.ctypeslib.as_array(counts))} if counts is not None else None   # 5000+ slots
  try: raise_status(arch, st, code_addr=d.code_addr, memory=memory, budget=budget, timeout=timeout, pc=a.f_pc,
                    raw=bytes(a.f_raw)[:max(0, min(a.f_len, 16))], fmt=a.f_fmt, op=a.f_op, wave=a.f_wave, wg=tuple(a.f_wg), kind=a.f_kind,
                    space=a.f_space, addr=a.f_addr, size=a.f_size, lane=a.f_lane, limit=a.f_limit, msg=a.f_msg.decode(errors="replace"),
                    info=tuple(a.f_info))
  except EmuError as e: e.op_counts = oc; raise
  state = None
  if capture and a.cap_misc[5]:
    ws = d.wave_size
    state = WaveState(tuple(cs), tuple(tuple(cv[r*64:r*64+ws]) for r in range(arch.nvregs)), a.cap_misc[0], a.cap_misc[1], a.cap_misc[2], a.cap_misc[3], a.cap_misc[4], a.cap_misc[6])
  oob = oob_report(arch, memory, d.code_addr, a.v_count, a.v_addr, a.v_size, a.v_lane, a.v_wave, tuple(a.v_wg), a.v_pc,
                   bytes(a.v_raw)[:max(0, min(a.v_len, 16))], a.v_fmt, a.v_op) if a.v_count else None
  wr = watch_report(arch, watch, a.w_count, a.w_first.record() if a.w_count else None, a.w_last.record() if a.w_count else None) if watch else None
  return Stats(a.instructions, a.workgroups, a.waves, dt, "c", oc, state, {"translated": xk is not None, "adopted": xk is None and bool(a.xlat), "threads": a.threads_used}, oob_reads=a.v_count,
               oob_report=oob, lds_read=a.lds_rd, lds_written=a.lds_wr, watch=wr)
