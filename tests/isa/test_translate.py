"""The kernel translator (mockgpu.emu.translate) against the interpreter, its reference: tinygrad's matmul kernel, a WMMA
GEMM fixture and random ISA programs give bit-identical outputs, registers and instruction counts translated and
interpreted, and a translated kernel that faults or runs out of budget gives the interpreter's report. MOCKGPU_EMU_XLAT=sync
translates a kernel right after its first (interpreted) dispatch, so the second dispatch runs translated."""
import dataclasses
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import *
from isa_harness import Bufs, code
from mockgpu.emu.api import run_code
from mockgpu.emu.bench import LOOP_RSRC1
from mockgpu.emu.errors import GPUFault, WatchdogExpired
from test_backends_differential import program, cdna_program

pytestmark = pytest.mark.engine   # how kernels run (translator / threads): left out of fidelity recording

@pytest.fixture
def xlat(monkeypatch):
  def set_mode(m): monkeypatch.setenv("MOCKGPU_EMU_XLAT", m)
  return set_mode

def _twice(fn, xlat):
  """(interpreted result, translated result): fn() with the translator off, then twice in sync mode (the second translated)."""
  xlat("off"); ref = fn()
  xlat("sync"); fn(); got = fn()   # the first may run translated already, when an earlier test ran the same code
  assert not ref[0].extra.get("translated")
  assert got[0].extra.get("translated"), "the second dispatch did not run translated"
  return ref, got

def _same_stats(a, b):
  assert (a.instructions, a.workgroups, a.waves, a.lds_read, a.lds_written, a.oob_reads) == (b.instructions, b.workgroups, b.waves, b.lds_read, b.lds_written, b.oob_reads)

def test_tinygrad_matmul_kernel(xlat):
  from mockgpu.emu.codeobj import load_elf
  from mockgpu.emu.fixtures import load_fixture
  from mockgpu.emu.launch import prepare
  from mockgpu.emu.memory import MemoryMap
  elf, meta = load_fixture("matmul256_f32_gfx1100_k0")
  rng = np.random.default_rng(1)
  a, b = rng.standard_normal((256, 256)).astype(np.float32), rng.standard_normal((256, 256)).astype(np.float32)
  def fn():
    out = np.zeros((256, 256), np.float32)
    mem = MemoryMap()
    for i, x in enumerate((out, a, b)): mem.add(x.ctypes.data, x.nbytes, f"buf{i}")
    st = prepare(load_elf(elf), "gfx1100", meta["grid"], meta["block"], [x.ctypes.data for x in (out, a, b)], memory=mem).run()
    return st, out
  (rs, ro), (gs, go) = _twice(fn, xlat)
  _same_stats(rs, gs)
  assert (ro.view(np.uint32) == go.view(np.uint32)).all()
  assert np.allclose(go, a @ b, rtol=1e-4, atol=1e-3)

def test_wmma_gemm_fixture(xlat):
  from mockgpu.emu import gemm
  from mockgpu.emu.memory import MemoryMap, PAGE
  k = gemm.load_kernel("wmma_gfx1100")
  M, N, K = (k.shapes[0] if k.fixed_shapes else (64, 64, 64))
  dts = k.dtypes[0]
  a, b = gemm.inputs(M, N, K, dts[0], 0)
  def fn():
    bufs = {"A": np.ascontiguousarray(a), "B": np.ascontiguousarray(b if k.b_layout == "kn" else b.T), "C": np.zeros(M * N, np.uint32)}
    mem = MemoryMap(strict=True)
    for n, x in bufs.items(): mem.add(x.ctypes.data, x.nbytes, n, PAGE)
    r = gemm._prepare(k, k.build(M, N, K, tuple(dts)), mem, {n: x.ctypes.data for n, x in bufs.items()}, M, N, K)
    return r.run(), bufs["C"].copy()
  (rs, ro), (gs, go) = _twice(fn, xlat)
  _same_stats(rs, gs)
  assert (ro == go).all() and ro.any()

def test_vopd_with_the_same_op_in_both_halves(xlat):
  # V_DUAL_FMAC_F32 in both halves (the generated half is one function): translated, the lanes' values are numpy's
  a, b, c = (np.arange(32, dtype=np.float32) + k for k in (1, 2, 3))
  out = np.zeros((2, 32), np.float32)
  prog = code(v_lshlrev_b32_e32(v[1], 2, v[0]), *(global_load_b32(vdst=v[2 + i], addr=v[1], saddr=s[2 + 2 * i:3 + 2 * i]) for i in range(3)),
              s_waitcnt(simm16=0), v_mov_b32_e32(v[5], v[4]),
              VOPD(VOPDOp.V_DUAL_FMAC_F32, VOPDOp.V_DUAL_FMAC_F32, v[4], v[5], v[2], v[3], v[3], v[2]),
              global_store_b32(addr=v[1], data=v[4], saddr=s[0:1]), global_store_b32(addr=v[1], data=v[5], saddr=s[0:1], offset=128))
  def fn():
    bf = Bufs(out, a, b, c)
    return run_code(prog, bf.mem, user_sgprs=bf.sgprs(), rsrc2=8 << 1), out.copy()
  (rs, ro), (gs, go) = _twice(fn, xlat)
  _same_stats(rs, gs)
  want = (a * b + c).astype(np.float32)   # one rounding each (FMA), numpy's float64 product and sum is exact here
  assert (ro == want).all() and (go == ro).all()

def test_vopd_halves_reading_each_others_destination(xlat):
  # both halves read their sources before either writes: translated, a full wave's halves write their rows from their loops
  # (gen_c X variants, translate.py D), X only when Y reads none of X's rows; the first VOPD swaps through each other's
  # destination, in the second only X reads Y's destination
  a, b, c = (np.arange(32, dtype=np.float32) * 0.25 + k for k in (1, 2, 3))
  out = np.zeros((4, 32), np.float32)
  prog = code(v_lshlrev_b32_e32(v[1], 2, v[0]), *(global_load_b32(vdst=v[2 + i], addr=v[1], saddr=s[2 + 2 * i:3 + 2 * i]) for i in range(3)),
              s_waitcnt(simm16=0), v_mov_b32_e32(v[6], v[4]),
              VOPD(VOPDOp.V_DUAL_ADD_F32, VOPDOp.V_DUAL_MUL_F32, vdstx=v[2], vdsty=v[3], srcx0=v[3], vsrcx1=v[4], srcy0=v[2], vsrcy1=v[4]),
              VOPD(VOPDOp.V_DUAL_ADD_F32, VOPDOp.V_DUAL_MUL_F32, vdstx=v[5], vdsty=v[6], srcx0=v[6], vsrcx1=v[2], srcy0=v[4], vsrcy1=v[4]),
              *(global_store_b32(addr=v[1], data=v[r], saddr=s[0:1], offset=128 * i) for i, r in enumerate((2, 3, 5, 6))))
  def fn():
    bf = Bufs(out, a, b, c)
    return run_code(prog, bf.mem, user_sgprs=bf.sgprs(), rsrc2=8 << 1, rsrc1=LOOP_RSRC1), out.copy()   # XFAST's float mode
  (rs, ro), (gs, go) = _twice(fn, xlat)
  _same_stats(rs, gs)
  want = np.stack([b + c, a * c, c + (b + c), c * c]).astype(np.float32)   # one rounding each: exact in float32 for these values
  assert (ro == want).all() and (go == ro).all()

@pytest.mark.parametrize("rmode,want,rsrc1", [(0, 1 + 2**-23, None), (3, 1.0, None), (3, 1.0, LOOP_RSRC1)])
def test_float_mode_without_a_fast_loop(xlat, rmode, want, rsrc1):
  # 1 + 0.75 ulp (0x33c00000 = 0.75 * 2**-23): round to nearest even gives 1 + ulp, round toward zero (MODE.FP_ROUND f32 = 3, no
  # fast loop) 1.0; translated, a full-wave VOPD and a VOP2 take their fast paths in the first mode and the interpreter's
  # handler (XHANDLER) in the second. LOOP_RSRC1 starts the block in XFAST's mode, which S_ROUND_MODE ends
  out = np.zeros((3, 32), np.float32)
  prog = code(s_round_mode(simm16=rmode), v_mov_b32_e32(v[2], 1.0), v_mov_b32_e32(v[3], 0x33c00000), v_lshlrev_b32_e32(v[1], 2, v[0]),
              VOPD(VOPDOp.V_DUAL_ADD_F32, VOPDOp.V_DUAL_ADD_F32, v[4], v[5], v[2], v[3], v[3], v[2]), v_add_f32_e32(v[6], v[3], v[2]),
              *(global_store_b32(addr=v[1], data=v[4 + i], saddr=s[0:1], offset=128 * i) for i in range(3)))
  def fn():
    bf = Bufs(out)
    return run_code(prog, bf.mem, user_sgprs=bf.sgprs(), rsrc2=2 << 1, **({"rsrc1": rsrc1} if rsrc1 else {})), out.copy()
  (rs, ro), (gs, go) = _twice(fn, xlat)
  _same_stats(rs, gs)
  assert (ro == np.float32(want)).all() and (go == ro).all()

@pytest.mark.parametrize("rsrc1,exec_lo", [(None, 0xffff), (LOOP_RSRC1, 0xffff), (LOOP_RSRC1, 0x0ff0)])
def test_exec_change_inside_a_block(xlat, rsrc1, exec_lo):
  # S_MOV_B32 EXEC_LO is a straight step: the block checks XFAST again after it, so the VOPD and VOP2 after it leave the
  # inactive lanes alone (run unchecked on every lane they would write 3.0 there too): lanes 0-15 active run the variants'
  # loops over 16 lanes, lanes 4-11 (not from lane 0) the handlers
  out = np.zeros(32, np.float32)
  prog = code(v_mov_b32_e32(v[2], 1.0), v_lshlrev_b32_e32(v[1], 2, v[0]), s_mov_b32(EXEC_LO, exec_lo),
              VOPD(VOPDOp.V_DUAL_ADD_F32, VOPDOp.V_DUAL_MOV_B32, vdstx=v[2], vdsty=v[3], srcx0=v[2], vsrcx1=v[2], srcy0=v[2], vsrcy1=v[2]),
              v_mul_f32_e32(v[2], 1.5, v[2]), s_mov_b32(EXEC_LO, -1), global_store_b32(addr=v[1], data=v[2], saddr=s[0:1]))
  def fn():
    bf = Bufs(out)
    return run_code(prog, bf.mem, user_sgprs=bf.sgprs(), rsrc2=2 << 1, **({"rsrc1": rsrc1} if rsrc1 else {})), out.copy()
  (rs, ro), (gs, go) = _twice(fn, xlat)
  _same_stats(rs, gs)
  assert (ro == np.where(exec_lo >> np.arange(32) & 1, 3.0, 1.0).astype(np.float32)).all() and (go == ro).all()

def test_jump_into_the_middle_of_a_block(xlat):
  # S_SETPC lands on the second of three straight VALU steps (one block): that entry runs them one at a time through the
  # interpreter's handlers, then the kernel continues; v1 = 0 + 2 + 3 (the V_MOV before the target is skipped)
  out = np.zeros(32, np.uint32)
  prog = code(s_getpc_b64(s[4:5]), s_add_u32(s[4], s[4], 16), s_addc_u32(s[5], s[5], 0), s_setpc_b64(ssrc0=s[4:5]),
              v_mov_b32_e32(v[1], 7), v_add_nc_u32_e32(v[1], 2, v[1]), v_add_nc_u32_e32(v[1], 3, v[1]), v_lshlrev_b32_e32(v[2], 2, v[0]),
              global_store_b32(addr=v[2], data=v[1], saddr=s[0:1]))
  def fn():
    b = Bufs(out)
    return run_code(prog, b.mem, user_sgprs=b.sgprs(), rsrc2=2 << 1, capture=True), out.copy()
  (rs, ro), (gs, go) = _twice(fn, xlat)
  _same_stats(rs, gs)
  assert rs.instructions == 9 and (ro == 5).all() and (go == 5).all()

# the translated fast paths (gen_c XV_ / VOPD X variants) run in blocks while XFAST holds (the active lanes are lanes 0..n-1, the
# first fast float mode) for instructions without modifiers, the interpreter's handlers elsewhere: in the arch's default float
# mode (f32 denormals flushed) the handlers; in XFAST's (LOOP_RSRC1) the variants over 8 lanes (24 inactive) or the full wave,
# until the program changes the mode or EXEC
@pytest.mark.parametrize("seed,lanes,rsrc1", [(s, n, r) for s in range(4) for n in (8, 32) for r in (None, LOOP_RSRC1)])
def test_random_programs(xlat, seed, lanes, rsrc1):
  prog = program(seed)
  def fn(): st = run_code(prog, block=(lanes, 1, 1), lds_bytes=512, capture=True, **({"rsrc1": rsrc1} if rsrc1 else {})); return st, st.state
  (rs, r), (gs, g) = _twice(fn, xlat)
  _same_stats(rs, gs)
  assert r == g

def test_poisoned_dispatch_runs_the_handlers(xlat, monkeypatch):
  # a translated step's fast path never poisons its state (it stays in registers): in a poisoned dispatch (MOCKGPU_EMU_POISON)
  # every VALU step hands over to the interpreter's handler, whose state is poisoned, with the unpoisoned results
  prog = program(0)
  def fn(): st = run_code(prog, block=(32, 1, 1), lds_bytes=512, capture=True); return st, st.state
  xlat("off"); rs, r = fn()
  monkeypatch.setenv("MOCKGPU_EMU_POISON", "0xa5")
  (_, rp), (gs, g) = _twice(fn, xlat)
  _same_stats(rs, gs)
  assert r == rp == g

@pytest.mark.parametrize("seed,rsrc1", [(s, r) for s in range(3) for r in (None, LOOP_RSRC1)])
def test_random_cdna_programs_full_wave64(xlat, seed, rsrc1):
  prog = cdna_program(seed)   # LOOP_RSRC1: XFAST's float mode, so blocks run the 64-lane translator variants
  def fn():
    st = run_code(prog, arch="gfx950", wave64=True, block=(64, 1, 1), lds_bytes=1024, rsrc3=0, capture=True, **({"rsrc1": rsrc1} if rsrc1 else {}))
    return st, st.state
  (rs, r), (gs, g) = _twice(fn, xlat)
  _same_stats(rs, gs)
  assert r == g

def _faulting(addr_ok: bool, out: np.ndarray, **kw):
  """out[lane] = lane, through an address taken from s[0:1] (a bad one when not addr_ok), after a loop of 40 iterations."""
  prog = code(s_mov_b32(s[4], 40), v_add_nc_u32_e32(v[1], 1, v[1]), s_add_u32(s[4], s[4], -1), s_cmp_lg_u32(s[4], 0),
              s_cbranch_scc1(simm16=(-4) & 0xffff), v_lshlrev_b32_e32(v[2], 2, v[0]), global_store_b32(addr=v[2], data=v[0], saddr=s[0:1]))
  bf = Bufs(out)
  us = bf.sgprs() if addr_ok else (0x1000, 0)
  return run_code(prog, bf.mem, block=(32, 1, 1), grid=(2, 1, 1), user_sgprs=us, rsrc2=2 << 1, **kw)

def test_fault_and_watchdog_reports(xlat):
  out = np.zeros(32, np.uint32)
  reps = {}
  for m in ("off", "sync"):
    xlat(m)
    _faulting(True, out); st = _faulting(True, out)
    assert st.extra.get("translated") == (m == "sync") and (out == np.arange(32)).all()
    with pytest.raises(GPUFault) as ef: _faulting(False, out)
    loop = code(s_mov_b32(s[4], 1000), s_add_u32(s[4], s[4], -1), s_cmp_lg_u32(s[4], 0), s_cbranch_scc1(simm16=(-3) & 0xffff))
    assert run_code(loop).instructions == 3002
    with pytest.raises(WatchdogExpired) as ew: run_code(loop, budget=500)
    reps[m] = [dataclasses.replace(e.value.report, pc_addr=0) for e in (ef, ew)], [e.value.op_counts for e in (ef, ew)]
  assert reps["off"] == reps["sync"]

@pytest.mark.parametrize("seed,lanes", [(0, 8), (1, 32)])
def test_op_counts_translated_are_the_interpreters(xlat, seed, lanes):
  # run(op_counts=True) runs translated too (`mockgpu gemm` counts every run's opcodes): blocks count their steps once, XSTEP
  # each step; per opcode the interpreter's counts, also for a fault inside a block and a watchdog stop (up to and including
  # the instruction that stopped)
  prog = program(seed)
  def fn(): st = run_code(prog, block=(lanes, 1, 1), lds_bytes=512, op_counts=True); return st, st.op_counts
  (rs, r), (gs, g) = _twice(fn, xlat)
  _same_stats(rs, gs)
  assert r == g and sum(r.values()) == rs.instructions
  out, stops = np.zeros(32, np.uint32), {}
  loop = code(s_mov_b32(s[4], 1000), s_add_u32(s[4], s[4], -1), s_cmp_lg_u32(s[4], 0), s_cbranch_scc1(simm16=(-3) & 0xffff))
  for m in ("off", "sync"):
    xlat(m)
    _faulting(True, out); assert _faulting(True, out).extra["translated"] == (m == "sync")
    run_code(loop)
    stops[m] = []
    for call in (lambda: _faulting(False, out, op_counts=True), lambda: run_code(loop, budget=500, op_counts=True)):
      with pytest.raises((GPUFault, WatchdogExpired)) as e: call()
      stops[m].append(e.value.op_counts)
  assert stops["off"] == stops["sync"] and all(stops["off"])

def test_dispatch_hooks_see_each_dispatch(xlat):
  # api.DISPATCH_HOOKS (mockgpu bench's per-kernel figures): called once per completed dispatch with its Dispatch and Stats
  from mockgpu.emu import api
  seen = []
  api.DISPATCH_HOOKS.append(lambda d, st: seen.append((d.grid, st.instructions, st.extra.get("translated"))))
  try:
    xlat("off")
    run_code(code(s_mov_b32(s[4], 1), s_add_u32(s[4], s[4], 1)), grid=(3, 1, 1), block=(64, 1, 1))
  finally: api.DISPATCH_HOOKS.pop()
  assert seen == [((3, 1, 1), 3 * 2 * 3, False)]   # 3 workgroups x 2 waves x (2 instructions + s_endpgm)

def _unseen_loop() -> bytes:
  """The loop kernel (200 iterations) behind an S_MOV of a random value: code no earlier run has left a translation of."""
  import secrets
  from mockgpu.emu.bench import loop_kernel
  return s_mov_b32(s[5], secrets.randbits(31)).to_bytes() + loop_kernel(200)

def test_auto_translates_a_kernel_once_it_has_run_as_long_as_its_compile(xlat, monkeypatch):
  # ski rental: with TIER at a million times the estimated compile time the kernel stays interpreted; at 0 its first
  # dispatch starts the background compile and a later dispatch runs translated (the counts the interpreter's)
  import time
  from mockgpu.emu import translate
  xlat("auto")
  prog = _unseen_loop()
  def stats(): return run_code(prog, block=(64, 1, 1))
  monkeypatch.setattr(translate, "TIER", 1e6)
  sts = [stats() for _ in range(3)]
  assert not any(st.extra["translated"] for st in sts)
  monkeypatch.setattr(translate, "TIER", 0.0)
  t0, sts = time.monotonic(), [stats()]
  while not sts[-1].extra["translated"] and time.monotonic() - t0 < 120: time.sleep(0.05); sts.append(stats())
  assert not sts[0].extra["translated"] and sts[-1].extra["translated"]
  assert {st.instructions for st in sts} == {2 * (2 + 200 * 7 + 1)}   # 2 waves x (2 S_MOV, 200 x 7 loop instructions, S_ENDPGM)

@pytest.mark.parametrize("threads", [1, 2])
def test_a_long_dispatch_adopts_its_translation_while_it_runs(xlat, threads):
  # one dispatch, 4 workgroups x 2 waves x 80k loop iterations (~4.5M wave-instructions): in sync mode the first time check
  # (2^20 wave-instructions) translates the pcs decoded so far and every thread runs translated from its next wave step;
  # counts and registers are the interpreter's. One workgroup alone passes a time check (1.12M), so the calling thread adopts
  # whatever share of the workgroups the other thread leaves it
  from mockgpu.emu.bench import loop_kernel
  import secrets
  prog = s_mov_b32(s[5], secrets.randbits(31)).to_bytes() + loop_kernel(80_000)   # code no earlier run has translated
  def fn(): st = run_code(prog, grid=(4, 1, 1), block=(64, 1, 1), capture=True, threads=threads); return st, st.state
  xlat("off"); rs, r = fn()
  xlat("sync"); gs, g = fn()
  assert not rs.extra["adopted"] and gs.extra["adopted"] and not gs.extra["translated"]
  _same_stats(rs, gs)
  assert r == g and rs.instructions == 4 * 2 * (2 + 80_000 * 7 + 1)

def test_a_cached_translation_is_used_from_the_second_dispatch():
  # a fresh process in auto mode whose tier is out of reach interprets a kernel no run has met until a process that translated
  # it (sync) leaves it in the library cache; then it finds it after its first dispatch, before compiling anything
  import os, subprocess, sys
  script = (f"from mockgpu.emu.api import run_code; p = {_unseen_loop()!r}\n"
            "print([run_code(p, block=(64, 1, 1)).extra['translated'] for _ in range(3)])")
  env = {k: v for k, v in os.environ.items() if not k.startswith("MOCKGPU_EMU_XLAT")}
  def run(mode, tier="1e9"):
    r = subprocess.run([sys.executable, "-c", script], env={**env, "MOCKGPU_EMU_XLAT": mode, "MOCKGPU_EMU_XLAT_TIER": tier}, capture_output=True,
                       text=True, timeout=600)
    return r.stdout.strip() or r.stderr[-2000:]
  assert run("auto") == "[False, False, False]"
  assert run("sync") == "[False, True, True]"
  assert run("auto") == "[False, True, True]"

def test_many_kernels_with_one_prologue_keep_lookups_bounded(monkeypatch):
  # tinygrad's kernels share their first instructions: the translator remembers the last CANDIDATES kernels per 64-byte prefix
  # (and the last ADDRS addresses), so a lookup compares a bounded number of codes; a kernel met again at another address is
  # still the same kernel (its interpreted time adds up)
  from mockgpu.emu import cbackend, translate
  from mockgpu.emu.arch import get_arch
  monkeypatch.setattr(translate, "TIER", 1e9)
  dll, lib = cbackend.load(get_arch("gfx1100"))
  tr = translate.Translator(get_arch("gfx1100"), dll, lib.path.stem)
  pro = code(*(s_mov_b32(s[i], i) for i in range(16)), end=False)   # 64 bytes shared by every kernel
  progs = [np.frombuffer(pro + code(s_mov_b32(s[20], k), s_endpgm()), np.uint8).copy() for k in range(3 * translate.CANDIDATES)]
  for p in progs: tr.observe(p.ctypes.data, p.ctypes.data + p.nbytes, [0, 64, 68], 0.5, 0, False)
  assert len(tr.kernels[pro]) == translate.CANDIDATES
  moved, first = progs[-1].copy(), progs[0].copy()   # elsewhere: the last met is known by its code, the first is forgotten
  k = tr._find(moved.ctypes.data, moved.ctypes.data + moved.nbytes)
  assert k is not None and k.seconds == 0.5 and tr._find(first.ctypes.data, first.ctypes.data + first.nbytes) is None
  tr.observe(moved.ctypes.data, moved.ctypes.data + moved.nbytes, [0, 64, 68], 0.5, 0, False)
  assert k.seconds == 1.0

def test_interpreted_seconds_add_up_across_processes(tmp_path, monkeypatch):
  # each process leaves the interpreted seconds of the kernels it did not translate in the hot file (at exit: save_hot); a
  # later process's tier counts them, so two runs of 0.6 x the tier translate the kernel in the second, and the translated
  # kernel leaves the file (the library cache holds it). Translators stand in for processes: a fresh one reads the file anew
  import ctypes, json, time
  from mockgpu.emu import translate, cbackend
  from mockgpu.emu.arch import get_arch
  arch = get_arch("gfx1100")
  dll, lib = cbackend.load(arch)
  buf = ctypes.create_string_buffer(_unseen_loop())
  addr, end = ctypes.addressof(buf), ctypes.addressof(buf) + len(buf.raw)
  monkeypatch.setattr(translate, "TIER", 1.0)
  def process():
    t = translate.Translator(arch, dll, lib.path.stem)
    t.hot_path, t.rate, compiled = tmp_path / "hot.json", 1.0, []
    t._compile = lambda k: (compiled.append(k), setattr(k, "state", "ready"))   # the compile is not what this test is about
    return t, compiled
  for n in range(2):
    t, compiled = process()
    t.observe(addr, end, [0], 0.6, 0, sync=False)   # one decoded instruction: the tier is 1.0 x its 1 s estimate
    for _ in range(100):
      if compiled or n == 0: break
      time.sleep(0.05)   # the background thread that calls _compile
    (k,) = [k for c in t.kernels.values() for k in c]
    assert (k.prior, k.seconds, bool(compiled)) == (0.6 * n, 0.6, n == 1)
    t.save_hot()
    assert json.loads((tmp_path / "hot.json").read_text()) == ({k.key: 0.6} if n == 0 else {})

def test_a_translation_is_found_again_whatever_follows_its_code(xlat):
  """The translator keeps the 16 bytes from each pc it saw; after the last instruction those may belong to another buffer in
  the same mapped span (a kernel's arguments: tinygrad's, or a GEMM harness's), which differ from one load of the same code to
  the next. A ready translation is matched on its instructions' bytes alone, so the second load runs translated (it did
  not when those bytes changed: test_wmma_gemm_fixture failed now and then)."""
  import ctypes, secrets
  from mockgpu.emu.api import Dispatch, run
  from mockgpu.emu.memory import MemoryMap
  prog = b"".join(s_mov_b32(s[i % 8], secrets.randbits(31)).to_bytes() for i in range(20)) + s_endpgm().to_bytes()   # 84 bytes, new code
  def load(tail: bytes):
    buf = ctypes.create_string_buffer(len(prog) + len(tail) + 256)
    addr = (ctypes.addressof(buf) + 255) & ~255
    ctypes.memmove(addr, prog + tail, len(prog) + len(tail))
    mem = MemoryMap()
    mem.add(addr, len(prog) + len(tail), "code and the buffer after it")
    return run(Dispatch(arch="gfx1100", code_addr=addr), mem)
  xlat("sync")
  first = load(b"\x11" * 16)
  assert not first.extra["translated"] and load(b"\x22" * 16).extra["translated"]

def test_a_translation_key_is_its_instructions_bytes_alone():
  # the library cache is keyed by the decoded instructions' bytes: two processes (translators) loading the same code with other
  # bytes after it (the 12 after its 4-byte S_ENDPGM are within the 16 a decode reads) find the same translation; another
  # instruction byte is another key
  import ctypes
  from mockgpu.emu import translate, cbackend
  from mockgpu.emu.arch import get_arch
  arch = get_arch("gfx1100")
  dll, lib = cbackend.load(arch)
  def key(code: bytes) -> str:
    buf = ctypes.create_string_buffer(code)
    t = translate.Translator(arch, dll, lib.path.stem)
    t.observe(ctypes.addressof(buf), ctypes.addressof(buf) + len(code), [0, 4, 8], 0.0, 0, sync=False)   # 0 s: below the tier
    (k,) = [k for c in t.kernels.values() for k in c]
    assert k.state == "cold" and len(k.decoded) == 3
    return k.key
  prog, other = (code(s_mov_b32(s[4], 1), s_add_u32(s[4], s[4], n)) for n in (2, 3))   # 12 bytes, S_ENDPGM at 8
  assert key(prog + b"\x11" * 16) == key(prog + b"\x22" * 16) != key(other + b"\x11" * 16)

def test_a_fused_run_is_exact(xlat):
  # seven lane-local VALU steps in one block run fused on a full wave (translate.py: the lanes XCHUNK at a time through every
  # step, lane lb + L being row lane L of V + lb): a lane id (V_MBCNT reads laneId), a VCC lane bit (V_CNDMASK), a 64-bit
  # shift writing two rows that a later step reads, a VOPD whose halves read each other's destination (read before the step
  # writes them: the shift's sources too), and a chain of float ops; values exact in float32, so numpy is the oracle
  a, b = np.arange(32, dtype=np.float32) * 0.25 + 1, np.arange(32, dtype=np.float32) * 0.5 - 3
  out = np.zeros((6, 32), np.uint32)
  prog = code(v_lshlrev_b32_e32(v[1], 2, v[0]), global_load_b32(vdst=v[2], addr=v[1], saddr=s[2:3]), global_load_b32(vdst=v[3], addr=v[1], saddr=s[4:5]),
              s_mov_b32(VCC_LO, 0x5a5a1234), s_waitcnt(simm16=0),
              v_mbcnt_lo_u32_b32(v[4], -1, 0), v_cndmask_b32_e32(v[5], v[2], v[3]), v_fmac_f32_e32(v[5], v[2], v[3]), v_lshlrev_b64(v[6:7], 4, v[2:3]),
              VOPD(VOPDOp.V_DUAL_ADD_F32, VOPDOp.V_DUAL_MUL_F32, vdstx=v[2], vdsty=v[3], srcx0=v[3], vsrcx1=v[5], srcy0=v[2], vsrcy1=v[5]),
              v_add_nc_u32_e32(v[4], v[4], v[7]), v_mul_f32_e32(v[5], v[5], v[2]),
              *(global_store_b32(addr=v[1], data=v[2 + i], saddr=s[0:1], offset=128 * i) for i in range(6)))
  def fn():
    bf = Bufs(out, a, b)
    return run_code(prog, bf.mem, user_sgprs=bf.sgprs(), rsrc2=6 << 1, rsrc1=LOOP_RSRC1), out.copy()   # XFAST's float mode
  (rs, ro), (gs, go) = _twice(fn, xlat)
  _same_stats(rs, gs)
  c = np.where(0x5a5a1234 >> np.arange(32) & 1, b, a) + a * b
  x, y = b + c, a * c
  ab = a.view(np.uint32).astype(np.uint64) | b.view(np.uint32).astype(np.uint64) << 32
  want = [x.view(np.uint32), y.view(np.uint32), np.arange(32, dtype=np.uint32) + (ab << 4 >> 32).astype(np.uint32), (c * x).view(np.uint32),
          (ab << 4).astype(np.uint32), (ab << 4 >> 32).astype(np.uint32)]
  assert (ro == np.stack(want)).all() and (go == ro).all()
  assert [ln.count("V + c0, ") for ln in _source("gfx1100", prog).splitlines() if "c0 += XCHUNK" in ln] == [7], "the seven steps did not run as one fused run"

def _source(arch: str, prog: bytes) -> str:
  """The C of `prog`'s ready translation on `arch`."""
  from mockgpu.emu import translate
  tr = next(t for t in translate._TRANSLATORS.values() if t.arch.name == arch)
  return tr.source(next(k for k in tr.kernels[prog[:64]] if k.state == "ready"))

def _load_groups(xlat, fn, arch: str, prog: bytes, handler: str, fault):
  """fn(fault) interpreted and translated (a dispatch that faults leaves no translation: fn(False) gets it translated), each
  (Stats, output, None) or (None, None, its fault report without the absolute pc), and the number of loads in each load
  group of `prog`'s translation (`handler`'s G_ calls after a GC_ check)."""
  def once():
    try: return (*fn(fault), None)
    except GPUFault as e: return None, None, dataclasses.replace(e.report, pc_addr=0)
  xlat("off"); ref = once()
  xlat("sync"); fn(False); got = once()
  return ref, got, [ln.count(f"G_{handler}(w, &X") for ln in _source(arch, prog).splitlines() if "if (GC_" in ln]

@pytest.mark.parametrize("case", ["ok", "fault_after_the_group", "fault_in_the_group"])
def test_a_load_group_is_exact(xlat, case):
  # consecutive B128 loads off one address VGPR pair (or one SGPR base) are checked once as a group (translate.py, gen_c
  # _load_group); the group's last load may overwrite the address rows, and a load off the rows it loaded starts anew (its
  # addresses point into an unregistered gap of the same allocation in one case: a load wrongly grouped would read it
  # unchecked); a group reaching past its buffer falls back to each load's own check, so the fault reports match
  arena, out = np.zeros(1 << 16, np.uint32), np.zeros((24, 32), np.uint32)
  a, b = arena[:1024], arena[2048:2048 + 128]
  a[:] = np.arange(1024, dtype=np.uint32) * 7 + 3; b[:] = np.arange(128, dtype=np.uint32) * 5 + 1
  lanes = np.arange(32, dtype=np.uint64)
  ld = lambda d, off, **k: global_load_b128(vdst=v[d:d + 3], offset=off, **({"addr": v[2:3], "saddr": NULL} | k))
  prog = code(v_lshlrev_b32_e32(v[1], 4, v[0]), v_mov_b32_e32(v[3], s[3]), v_add_co_u32(v[2], VCC_LO, s[2], v[1]), v_add_co_ci_u32_e32(v[3], 0, v[3]),
              ld(8, 1024), ld(12, 0), ld(2, 512), ld(16, 0), ld(20, 1536, addr=v[1], saddr=s[2:3]), ld(24, 2048, addr=v[1], saddr=s[2:3]),
              s_waitcnt(simm16=0), v_lshlrev_b32_e32(v[30], 2, v[0]),
              *(global_store_b32(addr=v[30], data=v[r], saddr=s[0:1], offset=128 * i) for i, r in enumerate([*range(8, 28), *range(2, 6)])))
  def fn(bad):
    p = (arena.ctypes.data + 4 * 8192 if bad == "fault_after_the_group" else b.ctypes.data) + 16 * lanes
    a[128:256].reshape(32, 4)[:, 0], a[128:256].reshape(32, 4)[:, 1] = p & 0xffffffff, p >> 32
    bf = Bufs(out, a[:600] if bad == "fault_in_the_group" else a, b)   # 2400 bytes: the second SGPR-based load passes the end
    return run_code(prog, bf.mem, user_sgprs=bf.sgprs(), rsrc2=6 << 1), out.copy()
  ref, got, groups = _load_groups(xlat, fn, "gfx1100", prog, "H_GLOBAL_GLOBAL_LOAD_B128", case)
  assert groups == [3, 2]
  if case != "ok":
    assert ref[0] is None and ref[2] == got[2] and (ref[2].kind, ref[2].pc) == ("read", 44 if case == "fault_after_the_group" else 60), (ref[2], got[2])
    return
  assert got[0].extra.get("translated") and (ref[1] == got[1]).all()
  rows = lambda x, base: x[base + 4 * np.arange(32)[None, :] + np.arange(4)[:, None]]
  want = np.concatenate([rows(a, 256), rows(a, 0), rows(b, 0), rows(a, 384), rows(a, 512), rows(a, 128)])
  assert (ref[1] == want).all()

@pytest.mark.parametrize("fault", [False, True])
def test_a_load_group_is_exact_wave64(xlat, fault):
  # gfx950's DWORDX4 loads as groups of a full wave64 (64-bit address, then SGPR base): numpy's values, or the interpreter's
  # fault report for a group whose last load passes its buffer's end (lanes 58-63)
  from tinygrad.runtime.autogen.amd.cdna import ins as C
  a, out = np.arange(1024, dtype=np.uint32) * 3 + 5, np.zeros((16, 64), np.uint32)
  ld = lambda d, off, **k: C.global_load_dwordx4(vdst=C.v[d:d + 3], offset=off, **({"addr": C.v[2], "saddr": C.EXEC_HI} | k))   # 0x7f: "off"
  prog = code(C.v_lshlrev_b32_e32(C.v[1], 4, C.v[0]), C.v_mov_b32_e32(C.v[3], C.s[3]), C.v_add_co_u32_e32(C.v[2], C.s[2], C.v[1]),
              C.v_addc_co_u32_e32(C.v[3], 0, C.v[3]), ld(8, 1024), ld(12, 0), ld(16, 2048, addr=C.v[1], saddr=C.s[2:3]),
              ld(20, 3072, addr=C.v[1], saddr=C.s[2:3]), C.s_waitcnt(simm16=0), C.v_lshlrev_b32_e32(C.v[30], 2, C.v[0]),
              *(C.global_store_dword(addr=C.v[30], data=C.v[8 + i], saddr=C.s[0:1], offset=256 * i) for i in range(16)), end=False) + C.s_endpgm().to_bytes()
  def fn(bad):
    bf = Bufs(out, a[:1000] if bad else a)
    return run_code(prog, bf.mem, arch="gfx950", wave64=True, block=(64, 1, 1), user_sgprs=bf.sgprs(), rsrc2=4 << 1, rsrc3=0), out.copy()
  ref, got, groups = _load_groups(xlat, fn, "gfx950", prog, "H_GLOBAL_GLOBAL_LOAD_DWORDX4", fault)
  assert groups == [2, 2]
  if fault:
    assert ref[0] is None and ref[2] == got[2] and (ref[2].kind, ref[2].pc) == ("read", 40), (ref[2], got[2])
    return
  assert got[0].extra.get("translated") and (ref[1] == got[1]).all()
  rows = lambda base: a[base + 4 * np.arange(64)[None, :] + np.arange(4)[:, None]]
  assert (ref[1] == np.concatenate([rows(256), rows(0), rows(512), rows(768)])).all()
