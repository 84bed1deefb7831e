"""The pure-Python reference backend: the same decoder tables, operand rules, scheduler and memory checks as the C
backend, with semantics from mockgpu.pcode.pyeval (the pseudocode's reference evaluator) instead of generated C.
About 10^4 times slower; used for differential tests and as the fallback without a C compiler. Supported here: SALU,
VALU (VOP1/2/3/3SD/3P/C, VOPD, DPP16/DPP8), VINTERP, LDSDIR, MIMG (pyimage.py), SMEM, DS, FLAT/GLOBAL/SCRATCH, the
hand-written prose ops and the matrix ops (mockgpu.emu.matrix); anything else raises InvalidInstruction("unsupported ...
python backend")."""
from __future__ import annotations
import ctypes, re, time
from mockgpu.emu.api import Dispatch, Stats, WaveState
from mockgpu.emu import matrix
from mockgpu.emu.arch import ArchSpec, unmodelled_ops
from mockgpu.emu import buffer
from mockgpu.emu.gen_c import PROSE_C, PROSE_STOP, dpp16_table, omod_of, ds_counter_m0, handler_names, _vopd_target, _vopd_ops, _SALU, _VALU, _VMEM, _FLAT, _opinfo, _packed, _usage, \
  f16_half, int_clamp, acc_rules, semantics_entry, zero_hi16, pk32, DS_READ_TR, smem_align, dst_sgpr, plain_dwords, ds_writes_vdst, UNMODELLED, \
  SALU_RAW
from mockgpu.emu.isa import Format, formats, hwreg, mode_hwreg, operands
from mockgpu.emu.gen_gfx import GFX_PROSE, EXPORT_FORMATS, IMAGE_FORMATS
from mockgpu.emu.pygfx import exec_vinterp, lds_direct_load, export
from mockgpu.emu.pyimage import exec_mimg
from mockgpu.emu.bvh import BVH_FORMATS, BVH_OPS
from mockgpu.emu.pybvh import exec_bvh
from mockgpu.emu.image import aliases as image_aliases
from mockgpu.emu.errors import EmuError
from mockgpu.emu.memory import MemoryMap
from mockgpu.pcode.errors import PcodeRuntimeError
from mockgpu.emu.report import oob_report, raise_status, watch_report
from mockgpu.emu.facts import ST_FAULT, ST_INVALID, ST_UNSUPPORTED, ST_WATCHDOG, ST_TIMEOUT, ST_TRAP, ST_DEADLOCK, STATUS, MSG, SRC, NGWS, GDS_BYTES, \
  WK_SEMA, WK_BARRIER, WK_ORDERED, TR_TRAP, TR_HALT, APERTURE_SHARED, APERTURE_PRIVATE, SH_MEM_BASES, SREG_EXEC_LO, SREG_EXEC_HI, SREG_VCC_LO, \
  SREG_VCC_HI, SREG_WIDE_END, SREG_TGID_X, SREG_TGID_YZ, NSREG, K_READ, K_WRITE, K_ATOMIC, K_FETCH, SP_GLOBAL, SP_LDS, SP_SCRATCH, SP_CODE, \
  SP_GDS, SP_VGPR, MAXLANES, aperture, inline_float

__all__ = ["run"]

M32, M64 = 0xffffffff, (1 << 64) - 1

class Stop(Exception):
  def __init__(self, status: int, **kw): self.status, self.kw = status, kw

def sext(v: int, bits: int) -> int: return v - (1 << bits) if (v >> (bits - 1)) & 1 else v

def decode(arch: ArchSpec, words: list[int]) -> tuple[int, dict] | None:
  """(format index, fields) like the C decoder (emu_decode), or None. Raises Stop for truncated instructions."""
  raw = sum(w << (32 * i) for i, w in enumerate(words))
  def field(fl, f):
    v = (raw >> fl.lo) & ((1 << fl.width) - 1)
    if fl.conv == "vgpr": f[fl.name] = v + 256
    elif fl.conv == "sbase": f[fl.name] = v << 1
    elif fl.conv == "srsrc": f[fl.name] = v << 2
    elif fl.conv == "vdsty": f[fl.name] = 256 + ((v << 1) | (((f["vdstx"] - 256) & 1) ^ 1))
    elif fl.conv.startswith("lanesel"): f["lane_sel"] = f.get("lane_sel", 0) | v << (3 * int(fl.conv[-1]))
    else: f[fl.name] = v
  for fi, fm in enumerate(formats(arch.family)):
    nd = (fm.mask.bit_length() + 31) // 32
    if nd > len(words) or (raw & fm.mask) != fm.value: continue
    f: dict = {"dpp_kind": 0, "lit": 0, "size": fm.size}
    if fm.op_field:
      lo, wd = fm.op_field
      f["op"] = (raw >> lo) & ((1 << wd) - 1)
      if f["op"] not in fm.valid: continue
    for fl in fm.fields: field(fl, f)
    image_aliases(fm.name, f)
    if fm.name == "VOPD" and (f["opx"] not in fm.valid or f["opy"] not in fm.valid): return None
    if f.get("op") in fm.mfma_ops:
      for fl in fm.variants["_MFMA"][1]: field(fl, f)
    sdwa = fm.variants.get("_SDWA") or fm.variants.get("_SDWA_SDST")
    if sdwa and "src0" in fm.src_fields and arch.enc_sdwa >= 0 and f.get("src0") == arch.enc_sdwa:
      f["dpp_kind"], f["size"] = 4, sdwa[0]
      for fl in sdwa[1]: field(fl, f)
    elif "_DPP16" in fm.variants and f.get("src0") == arch.enc_dpp16:
      f["dpp_kind"], f["size"] = 1, fm.variants["_DPP16"][0]
      for fl in fm.variants["_DPP16"][1]: field(fl, f)
    elif "_DPP8" in fm.variants and arch.enc_dpp8 >= 0 and f.get("src0") in (arch.enc_dpp8, arch.enc_dpp8 + 1):
      f["dpp_kind"], f["size"] = (2 if f["src0"] == arch.enc_dpp8 else 3), fm.variants["_DPP8"][0]
      for fl in fm.variants["_DPP8"][1]: field(fl, f)
    elif any(f.get(s) == 255 for s in fm.src_fields) or (fm.lit_only and (f.get("op") in fm.lit_only or f.get("opx") in fm.lit_only or f.get("opy") in fm.lit_only)):
      f["lit"], f["size"] = (raw >> (fm.size * 8)) & M32, fm.size + 4
    if f["size"] > 4 * len(words): raise Stop(ST_INVALID, msg="instruction runs past the end of the code's mapped range", fmt=fi)
    return fi, f
  return None

def global_check(w, addr: int, n: int, kind: int, lane: int) -> int:
  """Check a global access of `n` bytes before it touches host memory, as gptr() in csrc/emu_core.h: inside the mapped
  granules (byte-exact in strict mode, where a read outside the allocations but inside their granules is noted in
  Ctx.oob and performed). Returns `addr`; raises Stop(ST_FAULT)."""
  c = w.c
  if c.check.find(addr, n) is not None: return addr
  if c.watch and addr < c.watch[1] and addr + n > c.watch[0] and c.watch[2] <= addr and addr + n <= c.watch[3]: return addr
  if c.strict and c.mapped.find(addr, n) is not None:
    if kind != K_READ: raise Stop(ST_FAULT, kind=kind, space=SP_GLOBAL, addr=addr, size=n, lane=lane)
    if c.oob[0] == 0: c.oob[1] = (addr, n, lane, w.id, c.wg, w.pc0)
    c.oob[0] += 1
    return addr
  raise Stop(ST_FAULT, kind=kind, space=SP_GLOBAL, addr=addr, size=n, lane=lane)

def watch_note(w, addr: int, n: int, lane: int):
  """After a global write of n bytes at addr: count and record it if it overlaps the watched range (watch_note in csrc/emu_core.h)."""
  c = w.c
  if not c.watch or addr >= c.watch[1] or addr + n <= c.watch[0]: return
  fi, f, raw = c.cache[w.pc0]
  r = (addr, n, lane, w.id, c.wg, w.pc0, raw, fi, f.get("opx") or f.get("op", -1))
  if c.watched[0] == 0: c.watched[1] = r
  c.watched[0] += 1; c.watched[2] = r

class _Mem:
  """Checked access for pyeval's MEM (global / LDS / scratch of one lane), a whole access at a time like the C backend;
  faults raise Stop before touching memory."""
  def __init__(self, wave, space: str, lane_ref): self.w, self.space, self.lane = wave, space, lane_ref
  def _check(self, addr: int, n: int, kind: int):
    w, lane = self.w, self.lane[0]
    if self.space == "global": return ("g", global_check(w, addr, n, kind, lane))
    a, lim = addr & M32, len(w.lds) if self.space == "lds" else w.scratch_lane
    if a + n > lim: raise Stop(ST_FAULT, kind=kind, space=SP_LDS if self.space == "lds" else SP_SCRATCH, addr=a, size=n, lane=lane, limit=lim)
    return ("l", a) if self.space == "lds" else ("p", lane * w.scratch_lane + a)
  def read(self, addr: int, n: int) -> int:
    k, a = self._check(addr, n, K_ATOMIC if self.w.atomic else K_READ)
    if k == "g": return int.from_bytes(ctypes.string_at(a, n), "little")
    if k == "l": self.w.c.lds_rw[0] += n
    return int.from_bytes((self.w.lds if k == "l" else self.w.scratch)[a:a + n], "little")
  def write(self, addr: int, n: int, val: int):
    k, a = self._check(addr, n, K_ATOMIC if self.w.atomic else K_WRITE)
    b = (val & ((1 << (8 * n)) - 1)).to_bytes(n, "little")
    if k == "g": ctypes.memmove(a, b, n); watch_note(self.w, a, n, self.lane[0])
    else: (self.w.lds if k == "l" else self.w.scratch)[a:a + n] = b
    if k == "l": self.w.c.lds_rw[1] += n

class _BufMem(_Mem):
  """MEM of a buffer op: each whole access maps the lane's linear address through the V# (swizzle, range check: out of
  range reads 0 and drops writes), then goes to global memory (mockgpu.emu.buffer, csrc/emu_buffer.h)."""
  def _map(self, addr: int) -> tuple[int, bool]:
    b = self.w.buf
    return buffer.map_access(b["desc"], b["idx"], b["off"] + addr - b["addr"])
  def read(self, addr: int, n: int) -> int:
    p, ok = self._map(addr)
    return super().read(p, n) if ok else 0
  def write(self, addr: int, n: int, val: int):
    p, ok = self._map(addr)
    if ok: super().write(p, n, val)

class _SBufMem(_Mem):
  """MEM of a scalar buffer op (S_BUFFER_*): an access of n bytes is in range iff its offset from the V# base + n <= the
  limit of buffer.scalar_desc (out of range: reads 0, writes are dropped), then it is a checked global access."""
  def __init__(self, wave, base: int, lim: int): super().__init__(wave, "global", [0]); self.base, self.lim = base, lim
  def read(self, addr: int, n: int) -> int: return super().read(addr, n) if addr - self.base + n <= self.lim else 0
  def write(self, addr: int, n: int, val: int):
    if addr - self.base + n <= self.lim: super().write(addr, n, val)

class _VRegs:
  """pyeval's VGPR[lane][reg]: a register past the file (or a lane past 64) is a fault of space 7 ("vgpr", address = the
  index), as vgpr_rd/vgpr_wr in csrc/emu_core.h."""
  def __init__(self, w): self.w = w
  def _check(self, lane: int, reg: int, kind: int):
    if lane >= MAXLANES or reg >= len(self.w.v): raise Stop(ST_FAULT, kind=kind, space=SP_VGPR, addr=reg, size=4, lane=lane, limit=len(self.w.v))
  def get(self, key, default=0):
    lane, reg = key
    if reg >= len(self.w.v) and reg - len(self.w.v) < len(self.w.vshadow) and lane < MAXLANES: return self.w.vshadow[reg - len(self.w.v)][lane]
    self._check(lane, reg, 1)
    return self.w.v[reg][lane]
  def __getitem__(self, key): return self.get(key)
  def __setitem__(self, key, val): lane, reg = key; self._check(lane, reg, 2); self.w.v[reg][lane] = val & M32

class _SRegs:
  def __init__(self, w): self.w = w
  def get(self, r, default=0): return self.w.s[r] if r < NSREG else 0
  def __getitem__(self, r): return self.get(r)
  def __setitem__(self, r, val):
    if r < NSREG and r != self.w.c.arch.enc_null: self.w.s[r] = val & M32

class Wave:
  def __init__(self, ctx, wid):
    self.c, self.id, self.s, self.scc, self.pc, self.pc0, self.state = ctx, wid, [0] * NSREG, 0, 0, 0, "run"
    self.wait_kind, self.wait_arg, self.wait_tag, self.wait_pc, self.ordinal, self.released = 0, 0, 0, 0, 0, 0   # as csrc/emu_core.h
    self.v = [[0] * MAXLANES for _ in range(ctx.arch.nvregs)]
    self.lds, self.scratch_lane = ctx.lds, ctx.scratch_lane
    self.scratch = bytearray(max(1, ctx.scratch_lane * MAXLANES))
    self.atomic, self.vshadow = False, []
    self.mode = ctx.arch.initial_mode(ctx.d.rsrc1)    # the MODE register (hwreg 1)
  @property
  def exec(self): return ((self.s[SREG_EXEC_HI] << 32) | self.s[SREG_EXEC_LO]) & self.c.wave_mask
  @exec.setter
  def exec(self, v): self.s[SREG_EXEC_LO], self.s[SREG_EXEC_HI] = v & M32, (v >> 32) & M32 if self.c.wave_size == 64 else 0
  @property
  def vcc(self): return ((self.s[SREG_VCC_HI] << 32) | self.s[SREG_VCC_LO]) & self.c.wave_mask
  @vcc.setter
  def vcc(self, v):
    self.s[SREG_VCC_LO] = v & M32
    if self.c.wave_size == 64: self.s[SREG_VCC_HI] = (v >> 32) & M32

class Slot:
  """A resident workgroup: its id, waves, LDS and the creation ordinal of its wave 0 (csrc/emu_core.h Slot)."""
  def __init__(self, lds_size: int): self.lds, self.live, self.waves, self.wg, self.ordinal0, self.used = bytearray(lds_size), False, [], (0, 0, 0), 0, 0

class Ctx:
  def __init__(self, arch, d: Dispatch, memory: MemoryMap, budget, timeout, watch: tuple[int, int] | None = None):
    self.arch, self.d, self.budget, self.timeout = arch, d, budget, timeout
    exact, self.mapped = memory.spans()   # global accesses: checked against `check` (global_check)
    self.strict, self.check, self.oob = memory.strict, exact if memory.strict else self.mapped, [0, None]
    self.watch, self.watched, self.lds_rw = None, [0, None, None], [0, 0]   # watch: (lo, hi, span lo, span hi); watched: count, first, last
    if watch is not None:
      self.check, span = self.check.carve(watch[0], watch[0] + watch[1])
      self.watch = (watch[0], watch[0] + watch[1], *span)
    self.wave_size, self.wave_mask = d.wave_size, (1 << d.wave_size) - 1
    self.lds, self.scratch_lane = None, d.scratch_bytes_per_lane   # lds: the running workgroup's (Slot.lds)
    self.icount, self.wg, self.cache, self.t0, self.wg_base, self.limit = 0, (0, 0, 0), {}, time.perf_counter(), 0, budget
    self.slots, self.res, self.progress, self.cur = [], [], False, None   # the resident workgroups (Slot), as csrc/emu_sched.c
    self.gws_cnt, self.gws_flag, self.gws_rel, self.gds = [0] * NGWS, [0] * NGWS, [0] * NGWS, [0] * (GDS_BYTES // 4)
    self.fmts, self.ops, self.names = formats(arch.family), operands(arch.family), handler_names(arch)
    from mockgpu.pcode.tables import entries
    self.ents = entries(arch.family)

# ---------------- operands ----------------
def acc_fix(arch: ArchSpec, fm: Format, f: dict, off: int):
  """Move the AccVGPR operands of a decoded instruction to their unified slots (gen_c.acc_rules; emu_acc_fix in C)."""
  for ops, flag, bit, flds in acc_rules(arch).get(fm.name, ()):
    if (ops is None or f.get("op") in ops) and (flag is None or f.get(flag, 0) >> bit & 1):
      for x in list(flds) + (["vsrc0"] if "src0" in flds and ("_DPP16" in fm.variants or "_SDWA" in fm.variants) else []):
        if f.get(x, 0) >= 256: f[x] += off

def scalar_src(w: Wave, f: dict, e: int, bits: int, fw: int) -> int:
  if e < NSREG:
    if e == w.c.arch.enc_null: return 0
    v = w.s[e] | (w.s[e + 1] << 32 if bits > 32 and e < SREG_EXEC_HI else 0)
    if e in (SREG_EXEC_LO, SREG_EXEC_HI): v = w.exec if e == SREG_EXEC_LO else (w.exec >> 32)
    return v
  if e <= SRC["INT_POS_END"]: return e - SRC["INT_ZERO"]
  if e <= SRC["INT_NEG_END"]: return (SRC["INT_POS_END"] - e) & M64
  if SRC["FLOAT"] <= e <= SRC["FLOAT_END"]: return inline_float(e, fw or bits)
  if e == SRC["LITERAL"]: return f["lit"] << 32 if fw == 64 else f["lit"]
  if e == SRC["SCC"]: return w.scc
  if e == SRC["VCCZ"]: return int(w.vcc == 0)
  if e == SRC["EXECZ"]: return int(w.exec == 0)
  if SRC["SHARED_BASE"] <= e <= SRC["PRIVATE_LIMIT"]: return aperture(e, bits)
  raise Stop(ST_UNSUPPORTED, msg=MSG["SRC_ENCODING"])

def flat_space(addr: int) -> str:
  """Where a FLAT address goes: the shared aperture to LDS, the private one to scratch (at the low dword), else global."""
  hi = addr >> 32
  return "lds" if hi == APERTURE_SHARED >> 32 else "scratch" if hi == APERTURE_PRIVATE >> 32 else "global"

def sdst_write(w: Wave, e: int, v: int, bits: int):
  if e == w.c.arch.enc_null: return
  if e == SREG_EXEC_LO and bits > 32: w.exec = v; return
  if e < NSREG: w.s[e] = v & M32
  if bits > 32 and e + 1 < NSREG: w.s[e + 1] = (v >> 32) & M32

def dpp16_src(c: Ctx, ctl: int, L: int) -> tuple[int, bool]:
  """(source lane, valid) of lane L under DPP16 control `ctl`: the rules of gen_c.dpp16_src, as the C backend's DPP16_SRC table."""
  sl = dpp16_table(c.arch)[ctl & 511][L]
  if sl == -2: raise Stop(ST_UNSUPPORTED, msg=MSG["DPP16_CTRL"])
  return (sl, True) if sl >= 0 else (L, False)

def pyrun(c: Ctx, w: Wave, ename: str, space: str = "global", **kw):
  from mockgpu.pcode.pyeval import State, run as prun
  lane = [kw.get("laneId", 0)]
  st = State(**kw)
  mem = _BufMem(w, "global", lane) if space == "buffer" else _SBufMem(w, *w.sbuf) if space == "sbuffer" else _Mem(w, space, lane)
  st.MODE, st.mem, st.vgpr, st.sgpr = kw.get("MODE", w.mode), mem, _VRegs(w), _SRegs(w)
  # RDNA4 and CDNA address built-ins return the effective address the caller put in ADDR (as csrc/emu_pre.h does)
  st.hooks = {n: (lambda *a, st=st: st.ADDR) for n in ("CalcGlobalAddr", "CalcScratchAddr", "CalcFlatAddr", "CalcDsAddr", "CalcScalarGlobalAddr",
                                                           "CalcImageAddr")}
  st.hooks["s_nop"] = lambda *a: 0   # V_PERMLANE64_B32 in wave32 (csrc/emu_pre.h)
  if space in ("buffer", "sbuffer"): st.hooks["CalcBufferAddr"] = st.hooks["CalcScalarBufferAddr"] = lambda *a, st=st: st.ADDR
  try: return prun(c.arch.family, ename, st)
  except PcodeRuntimeError as e:   # a built-in this emulator does not provide: unsupported, named as the C backend names it
    if e.hook is None: raise
    raise Stop(ST_UNSUPPORTED, msg=e.hook) from e

def exec_valu(c: Ctx, w: Wave, fm: Format, f: dict, name: str, ename: str, ops: dict, u):
  sb, sf, db, dfw = _opinfo(ops, fm.name, name)
  enc32, packed, mix = fm.name in ("VOP1", "VOP2", "VOPC"), _packed(fm.name, ops), "FMA_MIX" in name or "MAD_MIX" in name
  t16, zh, sdwa, p32 = enc32 and c.arch.true16, zero_hi16(c.arch, name, db), f["dpp_kind"] == 4, pk32(fm.name, ops, u)
  cmp = name.startswith(("V_CMP_", "V_CMPX_"))
  vcc_src2 = fm.name in ("VOP3", "VOP3SD") and "src2" in ops and ops["src2"][0].name == "FMT_NUM_M64"
  if vcc_src2: sb[2] = 0
  dsts = dst_sgpr(ops, name)
  es = [f.get("src0", 0), f.get("src1", 0) if fm.name != "VOP1" else 0, f.get("src2", 0)]   # VOPD: src2 set for an accumulating half
  opsel, neg, ab, neg_hi, opsel_hi = (0, 0, 0, 0, 0) if enc32 else (f.get("opsel", 0), f.get("neg", 0), f.get("abs", 0), f.get("neg_hi", 0),
                                                                 f.get("opsel_hi", 0) | f.get("opsel_hi2", 0) << 2)
  exe = w.exec
  srcs = []
  for i in range(3):
    bits, fw, e = sb[i], sf[i], es[i]
    if not bits or (i == 0 and f["dpp_kind"]): srcs.append(None); continue
    sh, shh, am, xm, hi16 = 0, 16, M64, 0, 0
    if e >= 256:
      r = e - 256
      if bits == 16 and t16: hi16, r = r >> 7, r & 127
      get = (lambda r: lambda L, k=0: w.v[(r + k) & (len(w.v) - 1)][L])(r)
    else:
      val = scalar_src(w, f, e, bits, fw)
      get = (lambda val: lambda L, k=0: (val >> (32 * k)) & M32)(val)
    if packed >> i & 1: sh, shh, xm = (opsel >> i & 1) * 16, (opsel_hi >> i & 1) * 16, ((neg >> i & 1) << 15 | (neg_hi >> i & 1) << 31) * bool(fw)
    elif p32 >> i & 1:   # gen_c.pk32: op_sel / op_sel_hi pick the dword of the pair for the low / high result
      get = (lambda g, s0, s1: lambda L, k=0: g(L, s1 if k else s0))(get, opsel >> i & 1, opsel_hi >> i & 1)
      if fw: xm = (neg >> i & 1) << 31 | (neg_hi >> i & 1) << 63
    elif mix:
      sbit = ((31 if opsel >> i & 1 else 15) if opsel_hi >> i & 1 else 31)
      xm, am = (neg >> i & 1) << sbit, M64 & ~((neg_hi >> i & 1) << sbit)
    else:
      if bits == 16: sh = (hi16 | (opsel >> i & 1)) * 16
      if fw:
        if ab >> i & 1: am = M64 & ~(1 << (fw - 1))
        if neg >> i & 1: xm = 1 << (fw - 1)
    srcs.append([get, sh, shh, am, xm, bits, bool(packed >> i & 1)])
  if sdwa:   # byte/word/dword selects with zero/sign extension, then abs/neg (emu_ops.h sdwa_setup)
    if any(f.get(k, 0) > 6 for k in ("src0_sel", "src1_sel", "dst_sel")) or f.get("dst_unused", 0) > 2: raise Stop(ST_INVALID, msg=MSG["SDWA_SEL"])
    for i in range(2):
      if not sb[i]: continue
      e, p = (f["vsrc0"], "src0") if i == 0 else (f["src1"], "src1")
      if f.get(f"s{i}", 0): e -= 256
      width, ssh = _sdwa_sel(f.get(f"{p}_sel", 0))
      raw = (lambda r: lambda L: w.v[r][L])(e - 256) if e >= 256 else (lambda v: lambda L: v)(scalar_src(w, f, e, sb[i], sf[i]) & M32)
      ext = (lambda raw, width, ssh, sx: lambda L, k=0: 0 if k else (lambda x: x if width == 32 else (sext(x & ((1 << width) - 1), width) & M32 if sx
             else x & ((1 << width) - 1)))(raw(L) >> ssh))(raw, width, ssh, f.get(f"{p}_sext", 0))
      am, xm = M64, 0
      if sf[i] and f.get(f"{p}_abs", 0): am = M64 & ~(1 << (sf[i] - 1))
      if sf[i] and f.get(f"{p}_neg", 0): xm = 1 << (sf[i] - 1)
      srcs[i] = [ext, 0, 16, am, xm, sb[i], False]
  elif f["dpp_kind"]:
    r, bits = f["vsrc0"] - 256, sb[0]
    vals, wmask = {}, 0
    for L in range(c.wave_size):
      if f["dpp_kind"] == 1:
        sl, valid = dpp16_src(c, f["dpp"], L)
        if not (f["row_mask"] >> (L >> 4) & 1) or not (f["bank_mask"] >> ((L >> 2) & 3) & 1): continue
        if valid and not f.get("fi", 0) and not (exe >> sl & 1): valid = False
        if not valid and not f.get("bc", 0): continue
      else:
        sl = (L & ~7) | ((f.get("lane_sel", 0) >> ((L & 7) * 3)) & 7); valid = not (f["dpp_kind"] == 2 and not (exe >> sl & 1))
      wmask |= 1 << L
      vals[L] = (w.v[r][sl], w.v[(r + 1) & (len(w.v) - 1)][sl]) if valid else (0, 0)
    exe &= wmask
    am, xm = M64, 0
    if f["dpp_kind"] == 1 and sf[0]:
      if f.get("src0_abs"): am = M64 & ~(1 << (sf[0] - 1))
      if f.get("src0_neg"): xm = 1 << (sf[0] - 1)
    if f["dpp_kind"] == 1 and sf[1] and srcs[1] is not None:
      if f.get("src1_abs"): srcs[1][3] = M64 & ~(1 << (sf[1] - 1))
      if f.get("src1_neg"): srcs[1][4] = 1 << (sf[1] - 1)
    srcs[0] = [lambda L, k=0, vals=vals: vals[L][k], ((r >> 7) & 1) * 16 if bits == 16 and t16 else 0, 16, am, xm, bits, False]
  def fetch(s, L):
    get, sh, shh, am, xm, bits, pk = s
    if pk: raw = get(L); return (((raw >> sh) & 0xffff) | ((raw >> shh) & 0xffff) << 16) ^ xm
    if bits == 16: return ((get(L) >> sh) & 0xffff & am) ^ xm
    if bits == 64: return ((get(L) | get(L, 1) << 32) & am) ^ xm
    if bits > 64: return sum(get(L, k) << (32 * k) for k in range(bits // 32))
    return (get(L) & am & M32) ^ xm
  edst = f.get("vdst", 0) if not (cmp or dsts) and "vdst" in ops else 0
  dsh, dr = 0, edst - 256
  if edst >= 256 and db == 16:
    h = dr >> 7 if t16 else (opsel >> 3 & 1)
    if t16: dr &= 127
    dsh = h * 16
  omod, clamp = (omod_of(w.mode, f.get("omod", 0)), f.get("clmp", 0)) if (fm.name in ("VOP3", "VOP3SD") and dfw) or sdwa else (0, f.get("clmp", 0) if fm.name == "VOP3P" and dfw else 0)
  kw = dict(SCC=w.scc, EXEC=w.exec, EXEC_LO=w.exec & M32, M0=w.s[c.arch.enc_m0], PC=c.d.code_addr + w.pc0, WAVE64=int(c.wave_size == 64),
            SIMM16=sext(f.get("simm16", 0), 16) & M64, SIMM32=f["lit"], VCCZ=int(w.vcc == 0), EXECZ=int(w.exec == 0),
            INST_ABS=f.get("abs", 0), INST_NEG=f.get("neg", 0), INST_OMOD=f.get("omod", 0), OPSEL=opsel, OPSEL_HI=opsel_hi, NEG=neg, SRC0=(es[0] - 256) & M32, SRC1=(es[1] - 256) & M32, SRC2=(es[2] - 256) & M32,
            DST=(f.get("vdst", 0) - 256) & M32, VDST=(f.get("vdst", 0) - 256) & M32)
  kw["VCC"] = (scalar_src(w, f, f.get("src2", 0), 64, 0) & c.wave_mask) if vcc_src2 else w.vcc
  if u.wave_vgpr or dsts:
    for i in range(3):
      if sb[i] and es[i] < 256: kw[f"S{i}"] = scalar_src(w, f, es[i], sb[i], sf[i])
    st = pyrun(c, w, ename, laneId=0, **kw)
    if "D0" in u.writes:
      if dsts: sdst_write(w, f.get("vdst", 0) - 256, st.D0, db)
      else:
        for L in range(64):
          if exe >> L & 1: w.v[dr][L] = st.D0 & M32
    if "EXEC" in u.writes: w.exec = st.EXEC
    return
  d0mask, vcc, execw, ic, cout = 0, kw["VCC"], 0, int_clamp(fm.name, ops, name), 0
  carry = fm.name == "VOP3SD" and "D1" in u.writes   # as gen_c._valu: D1 is the lane's SDST bit
  for L in range(c.wave_size):
    if not exe >> L & 1: continue
    for i in range(3):
      if srcs[i] is not None: kw[f"S{i}"] = fetch(srcs[i], L)
    kw["VCC"], kw["laneId"], kw["D0"], kw["EXEC"] = vcc, L, d0mask if cmp else 0, execw if cmp and "EXEC" in u.writes else w.exec
    if "D0" in u.reads and not cmp and edst:
      kw["D0"] = ((w.v[dr][L] >> dsh) & 0xffff) if db == 16 else (w.v[dr][L] | w.v[(dr + 1) & (len(w.v) - 1)][L] << 32 if db == 64 else w.v[dr][L])
    cin = vcc >> L & 1   # the carry-in, before the pseudocode updates the lane's VCC bit
    st = pyrun(c, w, ename, **kw)
    vcc, cout = st.VCC, cout | (st.D1 & 1) << L if carry else cout
    if cmp: d0mask, execw = st.D0 & M64, st.EXEC
    if "D0" in u.writes and not cmp and edst:
      val = st.D0
      if (omod or clamp) and dfw == db: val = _post(val, dfw, omod, clamp)
      elif clamp and fm.name == "VOP3P" and dfw == 16:
        sh = f16_half(c.ents[ename].text)
        val = (val & ~(0xffff << sh) & M32) | _post(val >> sh, 16, 0, clamp) << sh
      if ic and f.get("clmp", 0): val = _iclamp(ic, *(kw.get(f"S{i}", 0) if sb[i] else 0 for i in range(3)), cin, neg)
      old = w.v[dr][L]
      if db == 16: w.v[dr][L] = val & 0xffff if zh else (old & ~(0xffff << dsh) & M32) | ((val & 0xffff) << dsh)
      elif db == 64: w.v[dr][L], w.v[(dr + 1) & (len(w.v) - 1)][L] = val & M32, (val >> 32) & M32
      else: w.v[dr][L] = val & M32
      if sdwa: w.v[dr][L] = _sdwa_dst(f, w.v[dr][L], old)
    if "S0" in u.writes and sb[0] and es[0] >= 256: w.v[(es[0] - 256) & (127 if t16 and sb[0] == 16 else len(w.v) - 1)][L] = st.S0 & M32
  if cmp and "D0" in u.writes:
    sdst_write(w, (f["sdst"] if sdwa and f.get("sd") else SREG_VCC_LO) if fm.name == "VOPC" else f.get("vdst", 0) - 256, d0mask & c.wave_mask, c.wave_size)
  if cmp and "EXEC" in u.writes: w.exec = execw
  if carry: sdst_write(w, f["sdst"], cout & exe & c.wave_mask, c.wave_size)
  if "VCC" in u.writes:
    if fm.name == "VOP3SD": sdst_write(w, f["sdst"], vcc & exe & c.wave_mask, c.wave_size)
    else: w.vcc = vcc & exe

def _sdwa_sel(sel: int) -> tuple[int, int]: return (8, sel * 8) if sel < 4 else (16, (sel - 4) * 16) if sel < 6 else (32, 0)

def _sdwa_dst(f: dict, r: int, old: int) -> int:
  """The VGPR word an SDWA op leaves: the result's low bits in the dst_sel field, other bits per dst_unused."""
  width, sh = _sdwa_sel(f.get("dst_sel", 0))
  m = M32 if width == 32 else ((1 << width) - 1) << sh
  x = (r << sh) & m
  if f.get("dst_unused", 0) == 1 and width < 32: x = (sext(r & ((1 << width) - 1), width) << sh) & M32
  elif f.get("dst_unused", 0) == 2: x |= old & ~m & M32
  return x

def _iclamp(ic: tuple, a: int, b: int, c: int, cin: int, neg: int) -> int:
  """Integer clamp as csrc/emu_ops.h iclamp: the exact result of the INT_CLAMP formula, saturated to the destination."""
  kind, eb, n, sg, b2, db, dsgn, packed = ic
  if packed: return sum(_iclamp((kind, eb, n, sg, b2, db, dsgn, 0), a >> h & 0xffff, b >> h & 0xffff, c >> h & 0xffff, cin, neg) << h for h in (0, 16))
  s0, s1 = (neg & 1, neg >> 1 & 1) if sg & 8 else (sg & 1, sg >> 1 & 1)
  def el(v: int, k: int, bits: int, sgn: int) -> int: x = v >> (k * bits) & ((1 << bits) - 1); return sext(x, bits) if sgn else x
  x, y, z = el(a, 0, eb, s0), el(b, 0, eb, s1), el(c, 0, b2, sg >> 2 & 1) if b2 else 0
  if kind in "+-rcbB": r = {"+": x + y, "-": x - y, "r": y - x, "c": x + y + cin, "b": x - y - cin, "B": y - x - cin}[kind]
  elif kind == "3": r = x + y + z
  elif kind == "x": r = (x ^ y) + z
  elif kind == "m": r = x * y + z
  elif kind == "d": r = z + sum(el(a, k, eb, s0) * el(b, k, eb, s1) for k in range(n))
  else:
    r = sum(abs(el(a, k, eb, 0) - el(b, k, eb, 0)) for k in range(n) if kind != "M" or el(b, k, eb, 0))
    r = (r << 16 if kind == "h" else r) + z
  lo, hi = (-(1 << (db - 1)), (1 << (db - 1)) - 1) if dsgn else (0, (1 << db) - 1)
  return min(max(r, lo), hi) & ((1 << db) - 1)

def _post(val: int, fw: int, omod: int, clamp: int) -> int:
  import numpy as np
  if fw == 16:
    val &= 0xffff
    if omod:
      with np.errstate(all="ignore"): val = int((np.array([val], np.uint16).view(np.float16) * np.float16((0, 2, 4, 0.5)[omod])).view(np.uint16)[0])
    if clamp: val = 0 if ((val & 0x7fff) > 0x7c00 or val & 0x8000) else min(val, 0x3c00)
    return val
  ft, it = (np.float32, np.uint32) if fw == 32 else (np.float64, np.uint64)
  with np.errstate(all="ignore"):
    x = np.array([val], it).view(ft)
    if omod: x = x * ft(2.0 if omod == 1 else 4.0 if omod == 2 else 0.5)
    if clamp: x = np.where(np.isnan(x), ft(0), np.clip(x, ft(0), ft(1))).astype(ft)
  return int(x.view(it)[0])

def exec_salu(c: Ctx, w: Wave, fm: Format, f: dict, name: str, ename: str, ops: dict, u):
  sb, sf, db, _ = _opinfo(ops, fm.name, name)
  kw = dict(SCC=w.scc, EXEC=w.exec, EXEC_LO=w.exec & M32, M0=w.s[c.arch.enc_m0], PC=c.d.code_addr + w.pc0, WAVE64=int(c.wave_size == 64),
            SIMM16=sext(f.get("simm16", 0), 16) & M64, SIMM32=f["lit"], VCCZ=int(w.vcc == 0), EXECZ=int(w.exec == 0), VCC=w.vcc)
  if fm.name == "SOPK":   # operand naming as in gen_c._salu
    db = ops.get("sdst", (None, 32))[1]
    kw["S0"] = kw["D0"] = scalar_src(w, f, f["sdst"], db, 0)
    if "S1" in u.reads: kw["S1"] = f["simm16"] & 0xffff
    elif "SIMM16" not in u.reads and "S0" in u.reads: kw["S0"] = f["simm16"] & 0xffff
  else:
    for i, k in enumerate(("src0", "src1")):
      if sb[i]: kw[f"S{i}"] = scalar_src(w, f, f[k], sb[i], sf[i])
    if "D0" in u.reads and db: kw["D0"] = scalar_src(w, f, f["sdst"], db, 0)
  kw.update({nm: f.get(fld, 0) for nm, fld in SALU_RAW.items() if nm in u.reads})   # S_MOVREL*: SGPR numbers (gen_c._salu)
  st = pyrun(c, w, ename, **kw)
  if "D0" in u.writes and db:
    if db <= 64: sdst_write(w, f["sdst"], st.D0, db)
    else:
      for i in range(db // 32):
        if f["sdst"] + i < SREG_WIDE_END: w.s[f["sdst"] + i] = (st.D0 >> (32 * i)) & M32
  if "VCC" in u.writes: w.vcc = st.VCC
  _wb(c, w, st, u)

def _wb(c: Ctx, w: Wave, st, u):
  if "SCC" in u.writes: w.scc = st.SCC & 1
  if "EXEC" in u.writes: w.exec = st.EXEC
  elif "EXEC_LO" in u.writes: w.s[SREG_EXEC_LO] = st.EXEC_LO & M32
  if "M0" in u.writes: w.s[c.arch.enc_m0] = st.M0 & M32
  if "PC" in u.writes: w.pc = (st.PC - c.d.code_addr) & M64

def _sput(w, reg, bits, val):
  for i in range(max(1, bits // 32)):
    if reg + i < SREG_WIDE_END: w.s[reg + i] = (val >> (32 * i)) & M32

def _vget(w, reg, L, bits): return sum(w.v[(reg + k) & (len(w.v) - 1)][L] << (32 * k) for k in range(max(1, bits // 32)))
def _vput(w, reg, L, bits, val):
  for k in range(max(1, bits // 32)): w.v[(reg + k) & (len(w.v) - 1)][L] = (val >> (32 * k)) & M32

def exec_mem(c: Ctx, w: Wave, fm: Format, f: dict, name: str, ename: str, ops: dict, u):
  w.atomic = "ATOMIC" in name or (fm.name == "DS" and "MEM" in u.writes and "RETURN_DATA" in u.writes)
  names = {fl.name for fl in fm.fields}   # RDNA3 vs RDNA4 field names, as in gen_c._mem
  A, D = ("vaddr" if "vaddr" in names else "addr"), ("vsrc" if "vsrc" in names else "data0")
  OFF, OFFW = ("ioffset", 24) if "ioffset" in names else ("offset", 21 if fm.name == "SMEM" else 13)
  ret = (f.get("th", 0) & 1) if "th" in names else f.get("sc0", 0) if "sc0" in names else f.get("glc", 0)
  base = dict(SCC=w.scc, EXEC=w.exec, M0=w.s[c.arch.enc_m0], WAVE64=int(c.wave_size == 64), PC=c.d.code_addr + w.pc0)
  try:
    if fm.name == "SMEM":
      db = ops.get("sdata", (None, 32))[1]
      if "imm" in names:   # gfx9 SMEM addressing (gen_c._mem)
        off = (sext(f[OFF], OFFW) if f["imm"] else 0 if f["soffset_en"] else w.s[f[OFF] & 127]) + (w.s[f["soffset"]] if f["soffset_en"] else 0)
      else: off = sext(f[OFF], OFFW) + (w.s[f["soffset"]] if f["soffset"] != c.arch.enc_null else 0)
      al, space = smem_align(name), "global"
      if name.startswith("S_BUFFER_"):   # through the V# (gen_c._mem, csrc/emu_buffer.h sbuf_setup)
        if f["sbase"] + 3 >= NSREG: raise Stop(ST_UNSUPPORTED, msg=MSG["SBUF_RSRC"])
        w.sbuf, space = buffer.scalar_desc(c.arch, w.s[f["sbase"]:f["sbase"] + 4]), "sbuffer"
        addr = w.sbuf[0] + (off & M32 & ~(al - 1))
      else: addr = ((w.s[f["sbase"]] | w.s[f["sbase"] + 1] << 32) + off) & M64 & ~(al - 1)
      data = sum(w.s[f["sdata"] + i] << (32 * i) for i in range(max(1, db // 32)) if f["sdata"] + i < NSREG)
      st = pyrun(c, w, ename, space, ADDR=addr, SDATA=data, DATA=data, **base)
      if "SDATA" in u.writes: _sput(w, f["sdata"], db, st.SDATA)
      if "RETURN_DATA" in u.writes and ret: _sput(w, f["sdata"], db // 2 if "CMPSWAP" in name else db, st.RETURN_DATA)
      return
    space = "lds" if fm.name == "DS" else "scratch" if "SCRATCH" in fm.name else "global"
    dbits = ops.get("vdst", (None, 32))[1]
    exe = w.exec
    if fm.name == "DS":
      off = f["offset0"] | f["offset1"] << 8
      uses_off = bool(u.reads & {"OFFSET", "OFFSET0", "OFFSET1"})
      d0, d1 = ops.get("data0", (None, 32))[1], ops.get("data1", (None, 32))[1]
      for L in range(c.wave_size):
        if not exe >> L & 1: continue
        addr = w.v[f["addr"] - 256][L] + (0 if uses_off else off)
        kw = dict(base, laneId=L, ADDR=addr, ADDR_BASE=addr, OFFSET=off, OFFSET0=f["offset0"], OFFSET1=f["offset1"],
                  DATA=_vget(w, f["data0"] - 256, L, d0), DATA2=_vget(w, f["data1"] - 256, L, d1), RETURN_DATA=_vget(w, f["vdst"] - 256, L, dbits))
        kw["DATA0"], kw["DATA1"] = kw["DATA"], kw["DATA2"]
        st = pyrun(c, w, ename, space, **kw)
        if ds_writes_vdst(name, u): _vput(w, f["vdst"] - 256, L, dbits, st.RETURN_DATA)
        if "ADDR" in u.writes: w.v[f["addr"] - 256][L] = st.ADDR & M32   # DS_BVH_STACK: the updated stack address
      return
    data = (ops.get("data") or ops.get("vsrc") or (None, 32))[1]
    sa = f["saddr"] not in (c.arch.enc_null, 0x7f)
    sbase = (w.s[f["saddr"]] | w.s[f["saddr"] + 1] << 32) if sa else 0
    off = sext(f[OFF], OFFW)
    pl = plain_dwords(c.ents[ename].text)
    whole = pl[1] if pl and pl[0] == "store" and pl[1] > 1 else 0   # as gen_c._mem: the whole access is checked before any dword is written
    for L in range(c.wave_size):
      if not exe >> L & 1: continue
      a = f[A] - 256
      if space == "scratch": addr = ((w.s[f["saddr"]] if sa else 0) + (w.v[a][L] if f.get("sve") else 0) + off) & M32
      else: addr = ((sbase + w.v[a][L]) if sa else (w.v[a][L] | w.v[(a + 1) & (len(w.v) - 1)][L] << 32)) + off & M64
      for k in range(whole): _Mem(w, flat_space(addr) if fm.name in _FLAT else space, [L])._check((addr + 4 * k) & M64, 4, 2)
      kw = dict(base, laneId=L, ADDR=addr, SGPR_ADDR=sbase, INST_OFFSET=f[OFF] & M32, DATA=_vget(w, f[D] - 256, L, data),
                VDATA=_vget(w, f[D] - 256, L, data) if "STORE" in name else _vget(w, f["vdst"] - 256, L, dbits))
      st = pyrun(c, w, ename, flat_space(addr) if fm.name in _FLAT else space, **kw)
      if "VDATA" in u.writes and "STORE" not in name: _vput(w, f["vdst"] - 256, L, dbits, st.VDATA)
      if "RETURN_DATA" in u.writes and (ret or not w.atomic): _vput(w, f["vdst"] - 256, L, dbits, st.RETURN_DATA)   # as gen_c._mem
  finally: w.atomic = False

def exec_buffer(c: Ctx, w: Wave, fm: Format, f: dict, name: str, ename: str, ops: dict, u):
  """A buffer op through its V# (mockgpu.emu.buffer), as csrc/emu_buffer.h and buffer.c_handler / c_format_handler do:
  pseudocode ops run pyeval with MEM mapped per access, *_FORMAT_* ops run buffer.fmt_load / fmt_store."""
  fl = buffer.fields(fm)
  nst = buffer.tfe_status_vgpr(name, c.ops.get(fm.enum(f["op"]), {}))
  if f.get("tfe") and nst is None: raise Stop(ST_INVALID, msg=MSG["TFE_INVALID"])
  rs = f[fl["rsrc"]]
  if rs + 3 >= NSREG: raise Stop(ST_UNSUPPORTED, msg=MSG["BUF_RSRC"])
  d = buffer.descriptor(c.arch, w.s[rs:rs + 4], scalar_src(w, f, f["soffset"], 32, 0) & M32)
  va, r = f["vaddr"] - 256, f["data0"] - 256
  if u is None:
    store, nch, d16, hi, typed = buffer.format_op(name)
    fi = buffer.format_table(c.arch).get(((f["format"] if "format" in f else f["dfmt"] | f["nfmt"] << 4) if typed else d.fmt) & 127)
    if fi is None: raise Stop(ST_UNSUPPORTED, msg=MSG["BUF_FORMAT"])
    ndw, lane = ((1 if hi else (nch + 1) // 2) if d16 else nch), [0]
    mem = _Mem(w, "global", lane)
    rd, wr = mem.read, mem.write
  else: dbits, rbits = buffer.data_bits(ops, name)
  ret = (f["th"] & 1) if fl["ret"] == "th" else f[fl["ret"]]
  w.atomic = "ATOMIC" in name
  try:
    for L in range(c.wave_size):
      if not w.exec >> L & 1: continue
      idx = ((w.v[va & (len(w.v) - 1)][L] if f["idxen"] else 0) + (L if d.add_tid else 0)) & M32
      off = (f[fl["ioff"]] + (w.v[(va + f["idxen"]) & (len(w.v) - 1)][L] if f["offen"] else 0)) & M32
      addr = (d.base + idx * d.stride + off) & M64
      if u is None:
        lane[0], old = L, _vget(w, r, L, 32 * ndw)
        if store: buffer.fmt_store(d, idx, off, fi, nch, d16, hi, old, rd, wr)
        else: _vput(w, r, L, 32 * ndw, buffer.fmt_load(d, idx, off, fi, nch, d16, hi, old, rd))
        if f.get("tfe") and not store: _vput(w, r + ndw, L, 32, 0)
        continue
      w.buf = {"desc": d, "idx": idx, "off": off, "addr": addr}
      data = _vget(w, r, L, dbits)
      st = pyrun(c, w, ename, "buffer", SCC=w.scc, EXEC=w.exec, laneId=L, ADDR=addr, DATA=data, VDATA=data, vgpr_a=0, sgpr_o=0)
      if "VDATA" in u.writes: _vput(w, r, L, dbits, st.VDATA)
      if "RETURN_DATA" in u.writes and ret: _vput(w, r, L, rbits, st.RETURN_DATA)
      if f.get("tfe"): _vput(w, r + nst, L, 32, 0)   # the fail status (buffer.tfe_status_vgpr): nothing fails
  finally: w.atomic = False

def exec_lds_load(c: Ctx, w: Wave, fm: Format, f: dict, name: str):
  """GLOBAL/SCRATCH_LOAD_LDS_*, BUFFER_LOAD_LDS_*: the dword (extended) goes to LDS at M0 + offset + lane * 4 (DWORDX3/X4:
  the lane's 12/16 bytes dword by dword to M0 + offset + lane * 12/16), as buffer.c_lds_handler generates it for the C backend."""
  n, sx, tid = buffer.lds_load_op(name)
  lane = [0]
  def rd(space, a, k):
    return _Mem(w, space, lane).read(a, k)
  if fm.name == "MUBUF":
    if f.get("tfe"): raise Stop(ST_INVALID, msg=MSG["TFE_INVALID"])
    if f["srsrc"] + 3 >= NSREG: raise Stop(ST_UNSUPPORTED, msg=MSG["BUF_RSRC"])
    d, ioff = buffer.descriptor(c.arch, w.s[f["srsrc"]:f["srsrc"] + 4], scalar_src(w, f, f["soffset"], 32, 0) & M32), f["offset"]
    fi = buffer.format_table(c.arch).get(d.fmt & 127)
    if not n and fi is None: raise Stop(ST_UNSUPPORTED, msg=MSG["BUF_FORMAT"])
  else:
    sa = f["saddr"] not in (c.arch.enc_null, 0x7f)
    sbase, off = (w.s[f["saddr"]] | w.s[f["saddr"] + 1] << 32) if sa else 0, sext(f["offset"], 13)
    ioff, a = off & M32, f["addr"] - 256
  for L in range(c.wave_size):
    if not w.exec >> L & 1: continue
    lane[0] = L
    if fm.name == "MUBUF":
      va = f["vaddr"] - 256
      idx = ((w.v[va & (len(w.v) - 1)][L] if f["idxen"] else 0) + (L if d.add_tid else 0)) & M32
      o = (f["offset"] + (w.v[(va + f["idxen"]) & (len(w.v) - 1)][L] if f["offen"] else 0)) & M32
      if n:
        p, ok = buffer.map_access(d, idx, o)
        v = rd("global", p, n) if ok else 0
      else: v = buffer.fmt_load(d, idx, o, fi, 1, False, False, 0, lambda x, k: rd("global", x, k))
    elif fm.name == "SCRATCH": v = rd("scratch", ((w.s[f["saddr"]] if sa else 0) + (w.v[a & (len(w.v) - 1)][L] if f["sve"] else 0) + off) & M32, n)
    else:
      addr = sbase + off + 4 * L if tid else (sbase + w.v[a & (len(w.v) - 1)][L] if sa else w.v[a & (len(w.v) - 1)][L] | w.v[(a + 1) & (len(w.v) - 1)][L] << 32) + off
      if n > 4:
        for k in range(n // 4):
          v = rd("global", (addr + 4 * k) & M64, 4)
          _Mem(w, "lds", lane).write((w.s[c.arch.enc_m0] + ioff + n * L + 4 * k) & M32, 4, v)
        continue
      v = rd("global", addr & M64, n)
    if n and n < 4 and sx: v = sext(v, 8 * n) & M32
    _Mem(w, "lds", lane).write((w.s[c.arch.enc_m0] + ioff + 4 * L) & M32, 4, v)

def exec_inst(c: Ctx, w: Wave, fi: int, f: dict):
  fm = c.fmts[fi]
  if fm.name == "VOPD":
    outs = []
    for y, opk in ((0, "opx"), (1, "opy")):
      member = fm.enum(f[opk]); tgt = _vopd_target(c.arch.family, member.name, c.ents)
      if tgt is None: raise Stop(ST_UNSUPPORTED, msg=MSG["VOPD_HALF"])
      shadow = Wave.__new__(Wave); shadow.__dict__.update(w.__dict__); shadow.v = [list(r) for r in w.v]
      g = {"src0": f["srcy0" if y else "srcx0"], "src1": f["vsrcy1" if y else "vsrcx1"], "vdst": f["vdsty" if y else "vdstx"], "dpp_kind": 0, "lit": f["lit"]}
      g["src2"] = g["vdst"]   # read only by the VOP3P form of an accumulating op (see gen_c._vopd_target)
      vf = Format(**{**fm.__dict__, "name": "VOP2"})
      exec_valu(c, shadow, vf, g, member.name.replace("V_DUAL_", "V_"), tgt, _vopd_ops(c.ops.get(c.ents[tgt].op, {})), _usage(c.arch.family, c.ents, tgt))
      outs.append((g["vdst"] - 256, shadow.v[g["vdst"] - 256]))
    exe = w.exec
    for r, col in outs:
      for L in range(64):
        if exe >> L & 1: w.v[r][L] = col[L]
    return
  if fm.name in EXPORT_FORMATS: return export(f, Stop)
  member = fm.enum(f["op"]) if fm.enum is not None else None
  name = re.sub(r"_E(32|64)$", "", member.name) if member is not None else fm.name
  if (h := GFX_PROSE.get(name)) in PROSE_STOP: raise Stop(STATUS[PROSE_STOP[h][0]], msg=MSG[PROSE_STOP[h][1]])
  if h == "h_lds_direct_load": return lds_direct_load(c, w, f, Stop)
  if fm.name in BVH_FORMATS and name in BVH_OPS: return exec_bvh(c, w, fm.name, f, name)
  if fm.name in IMAGE_FORMATS: return exec_mimg(c, w, f, name, f"{type(member).__name__}_{member.name}", pyrun)
  if name in UNMODELLED: raise Stop(ST_UNSUPPORTED, msg=f"{name}: {UNMODELLED[name]}")
  if (why := unmodelled_ops(c.arch).get(name)) is not None: raise Stop(ST_UNSUPPORTED, msg=why)
  if name in PROSE_C: return prose(c, w, f, name)
  if (mop := matrix.ops(c.arch.family).get(name)) is not None:
    cb = matrix.ETYPES[mop.c][0]
    cs = scalar_src(w, f, f["src2"], 64 if cb == 64 else 32, cb if cb in (16, 64) else 32) if f["src2"] < 256 else None
    if (err := matrix.execute(mop, w.v, c.wave_size, f, cs)): raise Stop(ST_INVALID, msg=err)
    return
  if name.startswith(("V_WMMA_", "V_SWMMAC_", "V_MFMA_", "V_SMFMAC_")):   # as gen_c: prose pseudocode, no table
    raise Stop(ST_UNSUPPORTED, msg=f"matrix op {name} of {c.arch.name} is not modelled (mockgpu.emu.matrix)")
  ename = semantics_entry(member, c.ents)
  if fm.name in buffer.BUFFER_FORMATS and "FORMAT" in name and "LDS" not in name: return exec_buffer(c, w, fm, f, name, ename, {}, None)
  if fm.name in buffer.LDS_LOADS and "_LOAD_LDS_" in name and buffer.lds_load_op(name): return exec_lds_load(c, w, fm, f, name)
  if ename not in c.ents: raise Stop(ST_UNSUPPORTED, msg=MSG["NO_SEMANTICS"])
  ops, u = c.ops.get(member, {}), _usage(c.arch.family, c.ents, ename)
  if fm.name in _SALU: return exec_salu(c, w, fm, f, name, ename, ops, u)
  if fm.name in _VALU: return exec_valu(c, w, fm, f, name, ename, ops, u)
  if fm.name == "VINTERP": return exec_vinterp(c, w, f, name, ename, ops, u, pyrun, _post, Stop, scalar_src)
  if (fm.name in _VMEM or fm.name in ("DS", "SMEM")) and not ("LDS" in member.name and fm.name != "DS"): return exec_mem(c, w, fm, f, name, ename, ops, u)
  if fm.name in buffer.BUFFER_FORMATS and "LDS" not in name: return exec_buffer(c, w, fm, f, name, ename, ops, u)
  raise Stop(ST_UNSUPPORTED, msg="instruction has no semantics in the python backend")

def prose(c: Ctx, w: Wave, f: dict, name: str):
  """Run the hand-written op `name` (gen_c.PROSE_C): an error of gen_c.PROSE_STOP, else its PROSE_PY handler; a handler with
  no Python twin raises (tests/unit/test_emu_twins.py requires one for every PROSE_C handler)."""
  h = PROSE_C[name]
  if h in PROSE_STOP: raise Stop(STATUS[PROSE_STOP[h][0]], msg=MSG[PROSE_STOP[h][1]])
  if (fn := PROSE_PY.get(h)) is None:
    raise Stop(ST_UNSUPPORTED, msg=f"{name}: its handler {h} (gen_c.PROSE_C) has no Python twin in pybackend.PROSE_PY; add one there")
  fn(c, w, f, name)

def _endpgm(c: Ctx, w: Wave, f: dict, name: str): w.state = "done"; _capture(c, w)

def _trap(c: Ctx, w: Wave, f: dict, name: str): raise Stop(ST_TRAP, kind=TR_TRAP, addr=f["simm16"] & 0xff, msg=MSG["TRAP"])

def _sethalt(c: Ctx, w: Wave, f: dict, name: str):
  if f["simm16"] & 1: raise Stop(ST_TRAP, kind=TR_HALT, msg=MSG["SETHALT"])

def _setkill(c: Ctx, w: Wave, f: dict, name: str):
  if f["simm16"] & 1: w.state = "done"

def _sendmsg(c: Ctx, w: Wave, f: dict, name: str):   # as csrc/emu_prose.h: MSG_DEALLOC_VGPRS (3) is the only compute message
  if f["simm16"] & 0xff != 3: raise Stop(ST_UNSUPPORTED, msg=MSG["SENDMSG"].format(f["simm16"] & 0xff))
  if name == "S_SENDMSGHALT": raise Stop(ST_TRAP, kind=TR_HALT, msg=MSG["SENDMSGHALT"])

def _sendmsg_rtn(c: Ctx, w: Wave, f: dict, name: str):
  msg = f["src0"]
  if msg not in (128, 129, 130, 131, 133): raise Stop(ST_UNSUPPORTED, msg=MSG["SENDMSG_RTN"].format(msg))
  sdst_write(w, f["sdst"], c.icount if msg == 131 else 0, 64 if name.endswith("64") else 32)

def _hwreg(c: Ctx, w: Wave, f: dict, name: str):   # S_GETREG / S_SETREG / S_SETREG_IMM32: hardware registers, as csrc/emu_prose.h
  sim = f["simm16"]; rid, off, mask = sim & 63, (sim >> 6) & 31, (1 << (((sim >> 11) & 31) + 1)) - 1
  if name != "S_GETREG_B32":
    if rid == mode_hwreg(c.arch.family):
      v = scalar_src(w, f, f["sdst"], 32, 0) if name == "S_SETREG_B32" else f["lit"]
      w.mode = (w.mode & ~(mask << off) | (v << off) & (mask << off)) & M32
    return
  clock = {hwreg(c.arch.family, "SHADER_CYCLES"): c.icount & 0xfffff, hwreg(c.arch.family, "SHADER_CYCLES_LO"): c.icount & M32,
           hwreg(c.arch.family, "SHADER_CYCLES_HI"): c.icount >> 32}   # the emulated clock, as csrc/emu_prose.h
  v = w.mode if rid == mode_hwreg(c.arch.family) else w.id if rid == 23 else SH_MEM_BASES if rid == hwreg(c.arch.family, "SH_MEM_BASES") else clock.get(rid, 0)
  sdst_write(w, f["sdst"], (v >> off) & mask, 32)

def _ds_swizzle(c: Ctx, w: Wave, f: dict, name: str):
  off, ex, d, src = f["offset0"] | f["offset1"] << 8, w.exec, w.v[f["vdst"] - 256], list(w.v[f["data0"] - 256])
  for i in range(c.wave_size):
    if ex >> i & 1: j = swizzle_src(off, i); d[i] = src[j] if ex >> j & 1 else 0

def _setstate(state: str): return lambda c, w, f, name: setattr(w, "state", state)

# The Python twin of every hand-written C handler of gen_c.PROSE_C (by handler name), except the errors of gen_c.PROSE_STOP
PROSE_PY = {
  "h_nop": lambda c, w, f, name: None, "h_endpgm": _endpgm, "h_barrier": _setstate("barrier"), "h_sleep": _setstate("sleep"),
  "h_memtime": lambda c, w, f, name: sdst_write(w, f["sdata"], c.icount, 64),
  "h_trap": _trap,
  "h_sethalt": _sethalt, "h_setkill": _setkill, "h_sendmsg": _sendmsg, "h_sendmsghalt": _sendmsg,
  "h_sendmsg_rtn32": _sendmsg_rtn, "h_sendmsg_rtn64": _sendmsg_rtn, "h_getreg": _hwreg, "h_setreg": _hwreg, "h_setreg_imm": _hwreg,
  "h_round_mode": lambda c, w, f, name: setattr(w, "mode", (w.mode & ~0xf) | (f["simm16"] & 0xf)),
  "h_denorm_mode": lambda c, w, f, name: setattr(w, "mode", (w.mode & ~0xf0) | (f["simm16"] & 0xf) << 4),
  "h_ds_swizzle": _ds_swizzle, "h_ds_append": lambda c, w, f, name: ds_counter(c, w, f, 1),
  "h_ds_consume": lambda c, w, f, name: ds_counter(c, w, f, -1),
  **{PROSE_C[n]: (lambda c, w, f, name: ds_read_tr(c, w, f, *DS_READ_TR[name])) for n in DS_READ_TR},
  **{h: (lambda c, w, f, name: gws(c, w, f, PROSE_C[name])) for h in ("h_gws_init", "h_gws_sema_v", "h_gws_sema_br", "h_gws_sema_p",
                                                                   "h_gws_release_all", "h_gws_barrier")},
  "h_ds_ordered": lambda c, w, f, name: ds_ordered(c, w, f),
  "h_subvec_begin": lambda c, w, f, name: subvector_loop(c, w, f, True), "h_subvec_end": lambda c, w, f, name: subvector_loop(c, w, f, False),
}

def subvector_loop(c: Ctx, w: Wave, f: dict, begin: bool):
  """S_SUBVECTOR_LOOP_BEGIN / END: the wave64 block as two 32-lane passes, the rule of csrc/emu_prose.h h_subvec_begin/end."""
  hi = w.s[SREG_EXEC_HI] if c.wave_size == 64 else 0
  branch = lambda: setattr(w, "pc", w.pc0 + 4 + sext(f["simm16"], 16) * 4)
  if begin:
    w.s[SREG_EXEC_HI] = 0; sdst_write(w, f["sdst"], hi, 32)
    if not w.s[SREG_EXEC_LO]: branch()
    return
  sd = scalar_src(w, f, f["sdst"], 32, 0) & M32
  if hi: w.s[SREG_EXEC_LO] = sd
  elif sd: sdst_write(w, f["sdst"], w.s[SREG_EXEC_LO], 32); w.s[SREG_EXEC_LO], w.s[SREG_EXEC_HI] = 0, sd; branch()

def swizzle_src(off: int, i: int) -> int:
  """DS_SWIZZLE_B32: the lane whose DATA0 lane i receives (as csrc/emu_prose.h swizzle_src)."""
  mask = off & 31
  if off >= 0xe000: return (int(f"{i & 31:05b}"[::-1], 2) >> bin(mask).count("1")) | (i & mask) | (i & 32)
  if off >= 0xc000:
    rot = -(off >> 5 & 31) if off >> 10 & 1 else off >> 5 & 31
    return (i & mask) | ((i + rot) & ~mask & 31) | (i & 32)
  if off & 0x8000: return (i & ~3) | (off >> ((i & 3) * 2) & 3)
  return ((i & 31 & mask) | (off >> 5 & 31)) ^ (off >> 10 & 31) | (i & 32)

def ds_counter(c: Ctx, w: Wave, f: dict, sign: int):
  """DS_APPEND (+1) / DS_CONSUME (-1): one atomic update of the LDS counter by the active-lane count (csrc/emu_prose.h)."""
  ex = w.exec
  if not ex: return
  addr = (f["offset0"] | f["offset1"] << 8) + ((w.s[c.arch.enc_m0] & 0xffff) if ds_counter_m0(c.ents) else 0)
  lane = [(ex & -ex).bit_length() - 1]
  mem, w.atomic = _Mem(w, "lds", lane), True
  try:
    old = mem.read(addr, 4)
    mem.write(addr, 4, (old + sign * bin(ex).count("1")) & M32)
  finally: w.atomic = False
  for L in range(c.wave_size):
    if ex >> L & 1: w.v[f["vdst"] - 256][L] = old

def ds_read_tr(c: Ctx, w: Wave, f: dict, width: int, ndw: int):
  """DS_READ_*_TR_*: each active lane reads ndw dwords at ADDR + OFFSET; in every 16-lane group the result is the transpose
  of the 16-element rows they form (csrc/emu_prose.h ds_read_tr)."""
  E, ex, off, lane = ndw * 32 // width, w.exec, f["offset0"] | f["offset1"] << 8, [0]
  src, m = [0] * c.wave_size, _Mem(w, "lds", lane)
  for L in range(c.wave_size):
    if not ex >> L & 1: continue
    lane[0], a = L, w.v[(f["addr"] - 256) & (len(w.v) - 1)][L] + off
    for k in range(ndw): src[L] |= m.read((a + 4 * k) & M32, 4) << (32 * k)
  for i in range(c.wave_size):
    if not ex >> i & 1: continue
    g, li = i & ~15, i & 15
    out = sum(((src[g + 16 // E * j + li // E] >> (li % E * width)) & ((1 << width) - 1)) << (j * width) for j in range(E))
    _vput(w, f["vdst"] - 256, i, 32 * ndw, out)

# ---------------- GWS and ordered count (csrc/emu_prose.h has the model's description) ----------------
def gws(c: Ctx, w: Wave, f: dict, h: str):
  """DS_GWS_*: resource (M0[21:16] + OFFSET0[5:0]) mod 64; value = DATA0 of the first active lane (lane 0 without one)."""
  r, ex = ((w.s[c.arch.enc_m0] >> 16 & 63) + (f["offset0"] & 63)) % NGWS, w.exec
  val = w.v[f["data0"] - 256][(ex & -ex).bit_length() - 1 if ex else 0]
  cnt = sext(c.gws_cnt[r], 32)
  if h == "h_gws_init": c.gws_cnt[r], c.gws_flag[r] = val, 0
  elif h == "h_gws_sema_v": c.gws_cnt[r] = (cnt + 1) & M32
  elif h == "h_gws_sema_br": c.gws_cnt[r] = (cnt + val) & M32
  elif h == "h_gws_release_all": c.gws_rel[r] = (c.gws_rel[r] + 1) & M32
  elif h == "h_gws_sema_p":
    if cnt > 0: c.gws_cnt[r] = cnt - 1
    else: _block(w, WK_SEMA, r, c.gws_rel[r])
  elif cnt <= 0: c.gws_flag[r] ^= 1; c.gws_cnt[r] = val   # h_gws_barrier: the last wave to arrive
  else: c.gws_cnt[r] = cnt - 1; _block(w, WK_BARRIER, r, c.gws_flag[r])

def _block(w: Wave, kind: int, arg: int, tag: int): w.state, w.wait_kind, w.wait_arg, w.wait_tag, w.wait_pc = "wait", kind, arg, tag, w.pc0

def ordered_blocker(c: Ctx, w: Wave, idx: int) -> int | None:
  """Creation ordinal of the earliest wave created before `w` that has neither released ordered index `idx` nor ended."""
  return min((v.ordinal for s in c.res for v in s.waves if v.ordinal < w.ordinal and v.state != "done" and not v.released >> idx & 1), default=None)

def _ordered_op(c: Ctx, w: Wave, f: dict):
  o1, base, ex = f["offset1"], w.s[c.arch.enc_m0] & 0xffff, w.exec
  for i in range(((o1 >> 6) & 3) + 1):
    if ex >> i & 1:
      k, val = (base >> 2) + i, w.v[f["data0"] - 256][i]
      old = c.gds[k]; c.gds[k] = val if o1 >> 4 & 1 else (old + val) & M32; w.v[f["vdst"] - 256][i] = old
  if o1 & 1: w.released |= 1 << (f["offset0"] >> 2 & 63)

def ds_ordered(c: Ctx, w: Wave, f: dict):
  """DS_ORDERED_COUNT: wait for the wave's turn on OFFSET0[7:2], then add/swap DATA0 of lanes < count into M0[15:0] + 4 * lane."""
  base, ex = w.s[c.arch.enc_m0] & 0xffff, w.exec
  for i in range(((f["offset1"] >> 6) & 3) + 1):
    if ex >> i & 1 and (base & 3 or base + 4 * i + 4 > GDS_BYTES):
      raise Stop(ST_FAULT, kind=K_ATOMIC, space=SP_GDS, addr=base + 4 * i, size=4, lane=i, limit=GDS_BYTES, msg=MSG["ORDERED_GDS"])
  idx = f["offset0"] >> 2 & 63
  if ordered_blocker(c, w, idx) is not None: _block(w, WK_ORDERED, idx, 0)
  else: _ordered_op(c, w, f)

def _wait_ready(c: Ctx, w: Wave) -> bool:
  r = w.wait_arg
  if w.wait_kind == WK_SEMA:
    if c.gws_rel[r] != w.wait_tag: return True
    if sext(c.gws_cnt[r], 32) > 0: c.gws_cnt[r] -= 1; return True
    return False
  if w.wait_kind == WK_BARRIER: return c.gws_flag[r] != w.wait_tag
  if ordered_blocker(c, w, r) is not None: return False
  _ordered_op(c, w, c.cache[w.wait_pc][1]); return True

def _capture(c: Ctx, w: Wave):
  if w.id == 0 and c.wg == (0, 0, 0) and c.capture:
    ws = c.wave_size
    c.state = WaveState(tuple(w.s), tuple(tuple(r[:ws]) for r in w.v), w.exec, w.vcc, w.scc, w.s[c.arch.enc_m0], w.pc0, w.mode)

def _fetch(c: Ctx, w: Wave):
  addr = (c.d.code_addr + w.pc) & M64   # w.pc wraps below the code after a jump there (as csrc/emu_sched.c decode_at)
  if w.pc in c.cache: return c.cache[w.pc]
  if w.pc & 3 or not (c.code[0] <= addr and addr + 4 <= c.code[1]):
    raise Stop(ST_FAULT, kind=K_FETCH, space=SP_CODE, addr=addr, size=4, lane=-1, limit=c.code[1] - c.d.code_addr, noinst=True)
  n = min(4, (c.code[1] - addr) // 4)
  words = list((ctypes.c_uint32 * n).from_address(addr))
  r = decode(c.arch, words)
  raw = b"".join(x.to_bytes(4, "little") for x in words)
  if r is None: raise Stop(ST_INVALID, msg="no encoding of this arch matches", raw=raw, fmt=-1)
  if c.arch.num_agprs: acc_fix(c.arch, c.fmts[r[0]], r[1], ((c.d.rsrc3 & 63) + 1) * 4)
  c.cache[w.pc] = (r[0], r[1], raw[:r[1]["size"]])
  return c.cache[w.pc]

def run(arch: ArchSpec, d: Dispatch, memory: MemoryMap, *, budget: int, timeout: float | None, op_counts: bool, capture: bool,
        resident: int, watch: tuple[int, int] | None = None, threads: int = 1) -> Stats:
  """Run `d` on the Python reference backend (see mockgpu.emu.api.run); one thread, whatever `threads` asks."""
  from mockgpu.emu.cbackend import GPUFault, FaultReport
  c = Ctx(arch, d, memory, budget, timeout, watch)
  c.capture, c.state = capture, None
  c.code = c.mapped.find(d.code_addr)
  if c.code is None: raise GPUFault(FaultReport("fetch", "code", d.code_addr, 4, arch.name, 0, d.code_addr, b"", "(code not mapped)"),
                                    "register the code object's buffer in the MemoryMap before dispatching")
  counts: dict[str, int] = {}
  names, hbase = c.names
  nt = d.block[0] * d.block[1] * d.block[2]
  nw = (nt + c.wave_size - 1) // c.wave_size
  total = d.grid[0] * d.grid[1] * d.grid[2]
  maxres = min(resident, total)
  t0, stats = time.perf_counter(), [0, 0]   # waves, workgroups

  def run_wave(w: Wave):
    while w.state == "run":
      w.pc0 = w.pc
      fi, f, raw = _fetch(c, w)
      c.icount += 1
      if c.icount > c.limit: c.icount -= 1; raise Stop(ST_WATCHDOG, raw=raw, fi=fi, f=f)
      if timeout and time.perf_counter() - t0 > timeout: raise Stop(ST_TIMEOUT, raw=raw, fi=fi, f=f)
      if op_counts:
        key = names[hbase[c.fmts[fi].name] + (f.get("opx") or f.get("op", 0))]
        counts[key] = counts.get(key, 0) + 1
      w.pc += f["size"]
      try: exec_inst(c, w, fi, f)
      except Stop as e: e.kw.setdefault("raw", raw); e.kw.setdefault("fi", fi); e.kw.setdefault("f", f); raise

  def use(s: Slot):   # as use_slot / save_slot in csrc/emu_sched.c: the budget is per workgroup
    c.wg, c.lds, c.wg_base = s.wg, s.lds, c.icount - s.used
    c.limit = c.wg_base + budget

  def wg_pass(s: Slot) -> bool:   # as csrc/emu_sched.c wg_pass
    while True:
      ran = False
      for w in s.waves:
        if w.state in ("wait", "sleep") and (w.state == "sleep" or _wait_ready(c, w)): w.state = "run"
        if w.state == "run": ran = True; c.cur = w; run_wave(w)
      c.progress |= ran
      states = [v.state for v in s.waves]
      if all(x == "done" for x in states): return True
      if all(x in ("done", "barrier") for x in states):
        for v in s.waves:
          if v.state == "barrier": v.state = "run"
      elif not ran: return False

  def launch(idx: int):
    s = next((x for x in c.slots if not x.live), None)
    if s is None: s = Slot(d.lds_size); c.slots.append(s)
    s.wg, s.live, s.ordinal0, s.used = (idx % d.grid[0], idx // d.grid[0] % d.grid[1], idx // (d.grid[0] * d.grid[1])), True, idx * nw, 0
    use(s)
    s.waves = [Wave(c, i) for i in range(nw)]
    for w in s.waves: _init_wave(c, w, nt, nw); w.ordinal = s.ordinal0 + w.id
    stats[0] += nw
    c.res.append(s)

  def deadlock(unlaunched: int):
    blocked = [(s, w) for s in c.res for w in s.waves if w.state == "wait"]
    s, w = blocked[0]
    use(s); c.cur = w; w.pc0 = w.wait_pc
    fi, f, raw = c.cache[w.wait_pc]
    r = w.wait_arg
    info = (w.wait_kind, r, 0 if w.wait_kind == WK_ORDERED else sext(c.gws_cnt[r], 32), len(blocked), len(c.res),
            ordered_blocker(c, w, r) if w.wait_kind == WK_ORDERED else -1)
    raise Stop(ST_DEADLOCK, raw=raw, fi=fi, f=f, info=info,
               msg=f"every resident wave is blocked: {len(c.res)} resident workgroups (limit {maxres}), {unlaunched} not launched yet")

  nxt = 0
  try:
    while True:
      c.progress = False
      for s in list(c.res):
        use(s)
        fin = wg_pass(s)
        s.used = c.icount - c.wg_base
        if fin: s.live = False; stats[1] += 1; c.res.remove(s)
      if c.progress: continue
      if nxt < total and len(c.res) < maxres: launch(nxt); nxt += 1; continue
      if c.res: deadlock(total - nxt)
      break
  except Stop as e:
    k, w = e.kw, c.cur
    f = k.get("f") or {}
    raw = b"" if k.get("noinst") else k.get("raw", b"")
    try: raise_status(arch, e.status, code_addr=d.code_addr, memory=memory, budget=budget, timeout=timeout, pc=w.pc0 if w else 0, raw=raw,
                      fmt=k.get("fi", k.get("fmt", -1)), op=f.get("opx") or f.get("op", -1), wave=w.id if w else -1, wg=c.wg,
                      kind=k.get("kind", 0), space=k.get("space", 0), addr=k.get("addr", 0), size=k.get("size", 0), lane=k.get("lane", -1),
                      limit=k.get("limit", 0), msg=k.get("msg", ""), info=k.get("info", ()))
    except EmuError as x: x.op_counts = counts if op_counts else None; raise
  oob = None
  if c.oob[0]:
    addr, n, lane, wid, wg, pc = c.oob[1]
    fi, f, raw = c.cache[pc]
    oob = oob_report(arch, memory, d.code_addr, c.oob[0], addr, n, lane, wid, wg, pc, raw, fi, f.get("opx") or f.get("op", -1))
  wr = watch_report(arch, watch, *c.watched) if watch else None
  return Stats(c.icount, stats[1], stats[0], time.perf_counter() - t0, "python", counts if op_counts else None, c.state, oob_reads=c.oob[0],
               oob_report=oob, lds_read=c.lds_rw[0], lds_written=c.lds_rw[1], watch=wr)

def _init_wave(c: Ctx, w: Wave, nt: int, nw: int):
  d, n = c.d, (c.d.rsrc2 >> 1) & 31
  for k in range(n): w.s[k] = d.user_sgprs[k] if k < len(d.user_sgprs) else 0
  k = n
  if c.arch.tgid_in_ttmp: w.s[SREG_TGID_X], w.s[SREG_TGID_YZ] = c.wg[0], c.wg[1] | c.wg[2] << 16
  else:
    for bit, val in ((7, c.wg[0]), (8, c.wg[1]), (9, c.wg[2]), (10, nw), (0, 0)):
      if d.rsrc2 >> bit & 1: w.s[k] = val; k += 1
  bx, by = d.block[0], d.block[1]
  ex = 0
  for L in range(c.wave_size):
    tid = w.id * c.wave_size + L
    if tid >= nt: continue
    ex |= 1 << L
    w.v[0][L] = (tid % bx) | ((tid // bx) % by) << 10 | (tid // (bx * by)) << 20
  w.exec = ex
