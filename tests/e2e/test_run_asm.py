"""`test.mockgpu.amd.emu.run_asm` through the activation hook, in a fresh interpreter with DEV=MOCKKFD+AMD as tinygrad's
test/amd runs it: kernels assembled here with the wheel's DSL read and write plain ctypes buffers reached only through the
kernel arguments. Expected values come from numpy and the ISA definition; faults must return non-zero with a report."""
import textwrap
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3 import ins as R3
from tinygrad.runtime.autogen.amd.rdna4 import ins as R4
from tinygrad.runtime.autogen.amd.cdna import ins as C

B, G = 64, 3   # threads per workgroup (two waves on RDNA, one wave64 on CDNA), workgroups

def square_plus_wg(arch:str) -> tuple[bytes, int]:
  """out[i] = a[i]*a[i] + workgroup id, with (a, out) pointers at the kernel argument address in s[0:1]. Returns (code, rsrc2)."""
  if arch == "rdna3":
    p = [R3.s_load_b128(sdata=R3.s[4:7], sbase=R3.s[0:1], offset=0, soffset=R3.NULL), R3.s_waitcnt(simm16=0), R3.s_mul_i32(R3.s[8], R3.s[2], B * 4),
         R3.v_lshlrev_b32_e32(R3.v[1], 2, R3.v[0]), R3.v_add_nc_u32_e32(R3.v[1], R3.s[8], R3.v[1]),
         R3.global_load_b32(vdst=R3.v[2], addr=R3.v[1], saddr=R3.s[4:5]), R3.s_waitcnt(simm16=0), R3.v_mul_lo_u32(R3.v[2], R3.v[2], R3.v[2]),
         R3.v_add_nc_u32_e32(R3.v[2], R3.s[2], R3.v[2]), R3.global_store_b32(addr=R3.v[1], data=R3.v[2], saddr=R3.s[6:7]), R3.s_endpgm()]
  elif arch == "rdna4":   # gfx12: the workgroup id is in TTMP9, not after the user SGPRs
    p = [R4.s_load_b128(sdata=R4.s[4:7], sbase=R4.s[0:1], ioffset=0, soffset=R4.NULL), R4.s_wait_kmcnt(simm16=0),
         R4.s_mul_i32(R4.s[8], R4.ttmp[9], B * 4), R4.v_lshlrev_b32_e32(R4.v[1], 2, R4.v[0]), R4.v_add_nc_u32_e32(R4.v[1], R4.s[8], R4.v[1]),
         R4.global_load_b32(vdst=R4.v[2], vaddr=R4.v[1:2], saddr=R4.s[4:5], ioffset=0), R4.s_wait_loadcnt(simm16=0),
         R4.v_mul_lo_u32(R4.v[2], R4.v[2], R4.v[2]), R4.v_add_nc_u32_e32(R4.v[2], R4.ttmp[9], R4.v[2]),
         R4.global_store_b32(vaddr=R4.v[1:2], vsrc=R4.v[2], saddr=R4.s[6:7], ioffset=0), R4.s_endpgm()]
  else:
    p = [C.s_load_dwordx4(sdata=C.s[4:7], sbase=C.s[0:1], offset=0, imm=1), C.s_waitcnt(simm16=0), C.s_mul_i32(C.s[8], C.s[2], B * 4),
         C.v_lshlrev_b32_e32(C.v[1], 2, C.v[0]), C.v_add_u32_e32(C.v[1], C.s[8], C.v[1]),
         C.global_load_dword(vdst=C.v[2], addr=C.v[1], saddr=C.s[4:5]), C.s_waitcnt(simm16=0), C.v_mul_lo_u32(C.v[2], C.v[2], C.v[2]),
         C.v_add_u32_e32(C.v[2], C.s[2], C.v[2]), C.global_store_dword(addr=C.v[1], data=C.v[2], saddr=C.s[6:7]), C.s_endpgm()]
  return b"".join(i.to_bytes() for i in p), 2 << 1 | 1 << 7   # two user SGPRs, TGID_X_EN

def trap(arch:str) -> bytes:
  m = {"rdna3": R3, "rdna4": R4, "cdna": C}[arch]
  return m.s_trap(simm16=5).to_bytes() + m.s_endpgm().to_bytes()

PRELUDE = """
import ctypes, mmap
from test.mockgpu.amd.emu import run_asm, last_error
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype, libc.mmap.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
def readonly(data:bytes, size:int=1 << 16) -> int:
  p = libc.mmap(None, size, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
  ctypes.memmove(p, data, len(data))
  assert libc.mprotect(p, size, mmap.PROT_READ) == 0
  return p
def buf(code:bytes):
  b = ctypes.create_string_buffer(code, len(code))
  return b, ctypes.addressof(b)
"""

@pytest.mark.parametrize("arch", ["rdna3", "rdna4", "cdna"])
def test_run_asm_reads_and_writes_ctypes_buffers(run, arch):
  code, rsrc2 = square_plus_wg(arch)
  a = np.random.default_rng(3).integers(0, 2**32, B * G, dtype=np.uint32)
  p = run(PRELUDE + textwrap.dedent(f"""
    CODE, RSRC2, A, N = {code!r}, {rsrc2}, {a.tolist()!r}, {B * G}
    a, dst = (ctypes.c_uint32 * N)(*A), (ctypes.c_uint32 * N)()
    args = (ctypes.c_uint64 * 2)(ctypes.addressof(a), ctypes.addressof(dst))
    keep, lib = buf(CODE)
    res = {{"ret": run_asm(lib, len(CODE), {G}, 1, 1, {B}, 1, 1, ctypes.addressof(args), rsrc2=RSRC2, arch="{arch}"), "out": list(dst)}}
    ctypes.memset(dst, 0, N * 4)   # user_data instead of args_ptr (args_ptr 0 would fault)
    lo, hi = ctypes.addressof(args) & 0xffffffff, ctypes.addressof(args) >> 32
    res["ud"] = run_asm(lib, len(CODE), {G}, 1, 1, {B}, 1, 1, 0, rsrc2=RSRC2, arch="{arch}", user_data=[lo, hi]), list(dst)
    ctypes.memset(dst, 0, N * 4)   # code in a read-only mapping runs too
    res["ro_code"] = run_asm(readonly(CODE), len(CODE), {G}, 1, 1, {B}, 1, 1, ctypes.addressof(args), rsrc2=RSRC2, arch="{arch}"), list(dst)
    wild = (ctypes.c_uint64 * 2)(0xdead00000000, ctypes.addressof(dst))
    res["wild"] = run_asm(lib, len(CODE), {G}, 1, 1, {B}, 1, 1, ctypes.addressof(wild), rsrc2=RSRC2, arch="{arch}")
    res["wild_report"] = [last_error().report.kind, last_error().report.space, last_error().report.address]
    ro = readonly(b"")
    bad = (ctypes.c_uint64 * 2)(ctypes.addressof(a), ro)
    res["ro_store"] = run_asm(lib, len(CODE), {G}, 1, 1, {B}, 1, 1, ctypes.addressof(bad), rsrc2=RSRC2, arch="{arch}")
    res["ro_report"] = [last_error().report.kind, last_error().report.address - ro, ctypes.string_at(ro, N * 4) == bytes(N * 4)]
    res["no_code"] = run_asm(0x1000, len(CODE), 1, 1, 1, {B}, 1, 1, ctypes.addressof(args), rsrc2=RSRC2, arch="{arch}")
    TRAP = {trap(arch)!r}
    keep2, tlib = buf(TRAP)
    res["trap"] = run_asm(tlib, len(TRAP), 1, 1, 1, {B}, 1, 1, 0, arch="{arch}"), last_error().report.extra.get("trap_id")
    out(res)"""))
  r = p.result
  want = (a * a + np.repeat(np.arange(G, dtype=np.uint32), B)).tolist()   # numpy's uint32 arithmetic wraps like V_MUL_LO_U32
  assert r["ret"] == 0 and r["out"] == want
  assert r["ud"] == [0, want] and r["ro_code"] == [0, want]
  assert r["wild"] == 1 and r["wild_report"] == ["read", "global", 0xdead00000000]
  assert "read fault in global: addr=0xdead00000000" in p.stderr and "lies in none" in p.stderr
  assert r["ro_store"] == 1 and r["ro_report"] == ["write", 0, True]   # the first store of wave 0 lane 0; nothing written
  assert r["no_code"] == 1 and "fetch fault in code: addr=0x1000" in p.stderr
  assert r["trap"] == [3, 5] and "S_TRAP 0x5" in p.stderr

def test_run_asm_default_rsrc2_lds_and_scratch(run):
  # rsrc2=0x19c: 14 user SGPRs (s0:s1 = args_ptr), LDS_SIZE 0 -> the whole LDS; scratch_size bytes of private memory per lane
  I = R3
  p = [I.s_load_b64(sdata=I.s[6:7], sbase=I.s[0:1], offset=8, soffset=I.NULL), I.s_waitcnt(simm16=0),
       I.v_lshlrev_b32_e32(I.v[1], 2, I.v[0]), I.v_mul_lo_u32(I.v[2], I.v[0], 3), I.v_add_nc_u32_e32(I.v[3], 0x8000, I.v[1]),
       I.v_sub_nc_u32_e32(I.v[4], 31, I.v[0]), I.v_lshlrev_b32_e32(I.v[4], 2, I.v[4]), I.v_add_nc_u32_e32(I.v[4], 0x8000, I.v[4]),
       I.ds_store_b32(addr=I.v[3], data0=I.v[2]), I.s_waitcnt(simm16=0), I.ds_load_b32(vdst=I.v[5], addr=I.v[4]), I.s_waitcnt(simm16=0),
       I.v_mov_b32_e32(I.v[6], 8), I.scratch_store_b32(addr=I.v[6], data=I.v[0], saddr=I.NULL, sve=1), I.s_waitcnt(simm16=0),
       I.scratch_load_b32(vdst=I.v[7], addr=I.v[6], saddr=I.NULL, sve=1), I.s_waitcnt(simm16=0), I.v_add_nc_u32_e32(I.v[5], I.v[5], I.v[7]),
       I.global_store_b32(addr=I.v[1], data=I.v[5], saddr=I.s[6:7]), I.s_endpgm()]
  code = b"".join(i.to_bytes() for i in p)
  r = run(PRELUDE + textwrap.dedent(f"""
    CODE = {code!r}
    dst = (ctypes.c_uint32 * 32)()
    args = (ctypes.c_uint64 * 2)(0, ctypes.addressof(dst))
    keep, lib = buf(CODE)
    out({{"ret": run_asm(lib, len(CODE), 1, 1, 1, 32, 1, 1, ctypes.addressof(args), scratch_size=16), "out": list(dst)}})""")).result
  lane = np.arange(32)
  assert r == {"ret": 0, "out": ((31 - lane) * 3 + lane).tolist()}   # lane l reads LDS written by lane 31-l, plus its private l

def test_run_asm_rejects_bad_arguments(run):
  r = run("""
    from test.mockgpu.amd.emu import run_asm
    from mockgpu.tinygrad.errors import RunAsmError
    res = []
    for kw in ({"arch": "gfx1100"}, {"arch": "rdna3", "lib_sz": 0}, {"arch": "rdna3", "lx": 2048}):
      try: run_asm(0x1000, kw.get("lib_sz", 4), 1, 1, 1, kw.get("lx", 32), 1, 1, 0, arch=kw["arch"]); res.append("returned")
      except RunAsmError as e: res.append(str(e))
    out(res)""").result
  assert "arch='gfx1100': choose one of rdna3, rdna4, cdna" in r[0]
  assert "lib_sz=0" in r[1] and "block=(2048, 1, 1) has 2048 threads" in r[2]
