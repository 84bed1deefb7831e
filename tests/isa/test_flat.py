"""FLAT/GLOBAL/SCRATCH: addressing (SGPR base + VGPR offset, 64-bit VGPR address, immediate offsets), widths, D16 halves,
atomics with GLC returns, per-lane private scratch."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import *
from isa_harness import run, Bufs
from mockgpu.emu.errors import GPUFault

def test_global_saddr_and_vaddr64():
  src, dst = np.arange(64, dtype=np.uint32) * 3, np.zeros(64, np.uint32)
  b = Bufs(src, dst)
  run([v_lshlrev_b32_e32(v[1], 2, v[0]), global_load_b32(vdst=v[2], addr=v[1], saddr=s[0:1], offset=128),
       v_mov_b32_e32(v[4], s[3]), v_add_co_u32(v[3], VCC_LO, s[2], v[1]), v_add_co_ci_u32_e32(v[4], 0, v[4]),
       s_waitcnt(simm16=0), global_store_b32(addr=v[3:4], data=v[2], saddr=NULL, offset=4)], b)
  # lane l loads src[32 + l] (immediate offset 128) and stores it 4 bytes past dst[l] through a 64-bit VGPR address
  np.testing.assert_array_equal(dst[1:33], src[32:64])

def test_widths_and_d16_hi():
  src = np.arange(32 * 4, dtype=np.uint32) | 0x80808000
  dst = np.zeros(32 * 4, np.uint32)
  b = Bufs(src, dst)
  run([v_lshlrev_b32_e32(v[1], 4, v[0]), global_load_b128(vdst=v[4:7], addr=v[1], saddr=s[0:1]),
       global_load_i8(vdst=v[8], addr=v[1], saddr=s[0:1], offset=1), v_mov_b32_e32(v[9], 0x5555),
       global_load_d16_hi_b16(vdst=v[9], addr=v[1], saddr=s[0:1]), s_waitcnt(simm16=0),
       v_mov_b32_e32(v[5], v[8]), v_mov_b32_e32(v[6], v[9]), global_store_b96(addr=v[1], data=v[4:6], saddr=s[2:3])], b)
  o, si = dst.reshape(32, 4), src.reshape(32, 4)
  np.testing.assert_array_equal(o[:, 0], si[:, 0])
  np.testing.assert_array_equal(o[:, 1], ((si[:, 0] >> 8) & 0xff).astype(np.int8).astype(np.int32).view(np.uint32))
  np.testing.assert_array_equal(o[:, 2], ((si[:, 0] & 0xffff) << 16) | 0x5555)
  np.testing.assert_array_equal(o[:, 3], 0)

def test_global_atomics():
  ctr, old = np.zeros(4, np.uint32), np.zeros(32, np.uint32)
  b = Bufs(ctr, old)
  run([v_mov_b32_e32(v[1], 0), v_mov_b32_e32(v[2], 1), global_atomic_add_u32(vdst=v[3], addr=v[1], data=v[2], saddr=s[0:1], glc=1),
       v_mov_b32_e32(v[5], 4), global_atomic_max_u32(addr=v[5], data=v[0], saddr=s[0:1]), s_waitcnt(simm16=0),
       v_lshlrev_b32_e32(v[4], 2, v[0]), global_store_b32(addr=v[4], data=v[3], saddr=s[2:3])], b)
  assert ctr[0] == 32 and ctr[1] == 31 and sorted(old.tolist()) == list(range(32))

def test_scratch_is_private_per_lane():
  out = np.zeros(64, np.uint32)
  b = Bufs(out)
  run([v_mov_b32_e32(v[1], 8), v_add_nc_u32_e32(v[2], 500, v[0]), scratch_store_b32(addr=v[1], data=v[2], saddr=NULL, sve=1),
       scratch_store_b32(addr=v[0], data=v[0], saddr=NULL, offset=4), s_waitcnt(simm16=0),
       scratch_load_b32(vdst=v[3], addr=v[1], saddr=NULL, sve=1), scratch_load_b32(vdst=v[4], addr=v[0], saddr=NULL, offset=4),
       s_waitcnt(simm16=0), v_lshlrev_b32_e32(v[5], 2, v[0]), global_store_b32(addr=v[5], data=v[3], saddr=s[0:1]),
       global_store_b32(addr=v[5], data=v[4], saddr=s[0:1], offset=128)], b, block=(32, 1, 1), scratch_bytes_per_lane=16)
  np.testing.assert_array_equal(out[:32], 500 + np.arange(32)); np.testing.assert_array_equal(out[32:], np.arange(32))

# ---- FLAT addresses in the shared (LDS) and private (scratch) apertures ----
# The apertures: SH_MEM_BASES shared_base = 1, private_base = 2 in 64-bit mode, i.e. base = value << 48, 4 GiB each (what
# amdgpu's KFD and tinygrad's AM driver program); a flat address base + x reaches LDS byte x / the lane's scratch byte x.
SHARED, PRIVATE = 1 << 48, 2 << 48

@pytest.mark.parametrize("backend", ["c", "python"])
def test_aperture_registers(backend):
  st = run([s_mov_b64(s[4:5], src[235:236]), s_mov_b64(s[6:7], src[236:237]), s_mov_b32(s[8], src[237]), s_mov_b32(s[9], src[238]),
            s_getreg_b32(s[10], simm16=15 | 31 << 11)], sgprs=(), backend=backend)   # HW_REG_SH_MEM_BASES, 32 bits
  g = st.state.sgprs
  assert g[4] | g[5] << 32 == SHARED and g[6] | g[7] << 32 == SHARED + 0xffffffff
  assert (g[8], g[9]) == (PRIVATE >> 32, (PRIVATE + 0xffffffff) >> 32)
  assert g[10] == (SHARED >> 48) << 16 | PRIVATE >> 48   # SH_MEM_BASES: private_base [15:0], shared_base [31:16]

@pytest.mark.parametrize("backend", ["c", "python"])
def test_flat_lds_aperture_load_store_atomic(backend):
  out = np.zeros(3 * 32, np.uint32)
  b = Bufs(out)
  # lane l: LDS[4l] = 100 + l via DS; flat-load it back through the shared aperture, flat-store 7l to LDS[128 + 4l] and
  # read that with DS; every lane flat-atomically adds 1 to LDS[256] returning the old value (0..31 in lane order)
  run([v_lshlrev_b32_e32(v[1], 2, v[0]), v_add_nc_u32_e32(v[2], 100, v[0]), ds_store_b32(addr=v[1], data0=v[2]),
       s_mov_b32(s[4], src[235]), v_mov_b32_e32(v[5], s[4]), v_mov_b32_e32(v[4], v[1]), s_waitcnt(simm16=0),
       flat_load_b32(vdst=v[3], addr=v[4:5]),
       v_mul_u32_u24_e32(v[6], 7, v[0]), flat_store_b32(addr=v[4:5], data=v[6], offset=128),
       v_mov_b32_e32(v[7], 256), v_mov_b32_e32(v[8], s[4]), v_mov_b32_e32(v[9], 1), flat_atomic_add_u32(vdst=v[10], addr=v[7:8], data=v[9], glc=1),
       s_waitcnt(simm16=0), ds_load_b32(vdst=v[11], addr=v[1], offset0=128), s_waitcnt(simm16=0),
       global_store_b32(addr=v[1], data=v[3], saddr=s[0:1]), global_store_b32(addr=v[1], data=v[11], saddr=s[0:1], offset=128),
       global_store_b32(addr=v[1], data=v[10], saddr=s[0:1], offset=256)], b, lds_bytes=512, backend=backend)
  np.testing.assert_array_equal(out[:32], 100 + np.arange(32))
  np.testing.assert_array_equal(out[32:64], 7 * np.arange(32))
  np.testing.assert_array_equal(out[64:], np.arange(32))

@pytest.mark.parametrize("backend", ["c", "python"])
def test_flat_private_aperture_is_the_lanes_scratch(backend):
  out = np.zeros(32, np.uint32)
  b = Bufs(out)
  # each lane writes 5l + 1 to its scratch offset 12 with SCRATCH, reads it back through the private aperture with FLAT
  run([v_mul_u32_u24_e32(v[2], 5, v[0]), v_add_nc_u32_e32(v[2], 1, v[2]), v_mov_b32_e32(v[1], 12),
       scratch_store_b32(addr=v[1], data=v[2], saddr=NULL, sve=1), s_mov_b32(s[4], src[237]), v_mov_b32_e32(v[4], 4),
       v_mov_b32_e32(v[5], s[4]), s_waitcnt(simm16=0), flat_load_b32(vdst=v[3], addr=v[4:5], offset=8), s_waitcnt(simm16=0),
       v_lshlrev_b32_e32(v[6], 2, v[0]), global_store_b32(addr=v[6], data=v[3], saddr=s[0:1])], b, scratch_bytes_per_lane=16, backend=backend)
  np.testing.assert_array_equal(out, 5 * np.arange(32) + 1)

@pytest.mark.parametrize("backend", ["c", "python"])
def test_flat_aperture_faults(backend):
  from mockgpu.emu.errors import GPUFault
  lds = [s_mov_b32(s[4], src[235]), v_lshlrev_b32_e32(v[1], 4, v[0]), v_mov_b32_e32(v[2], s[4]), flat_store_b32(addr=v[1:2], data=v[0])]
  with pytest.raises(GPUFault) as ei: run(lds, sgprs=(), lds_bytes=256, backend=backend)
  r = ei.value.report
  assert (r.kind, r.space, r.address, r.size, r.lane, r.limit, r.pc) == ("write", "lds", 256, 4, 16, 256, 12) and "FLAT_STORE_B32" in r.disasm
  prv = [s_mov_b32(s[4], src[237]), v_mov_b32_e32(v[1], 16), v_mov_b32_e32(v[2], s[4]), flat_atomic_add_u32(addr=v[1:2], data=v[0])]
  with pytest.raises(GPUFault) as ei: run(prv, sgprs=(), scratch_bytes_per_lane=16, backend=backend)
  r = ei.value.report
  assert (r.kind, r.space, r.address, r.lane, r.limit) == ("atomic", "scratch", 16, 0, 16)
  # just above the shared aperture's high dword is an ordinary (unmapped) global address
  with pytest.raises(GPUFault) as ei: run([s_mov_b32(s[4], src[235]), v_mov_b32_e32(v[1], 0), v_mov_b32_e32(v[2], s[4]),
                                            v_add_nc_u32_e32(v[2], 2, v[2]), flat_load_b32(vdst=v[3], addr=v[1:2])], sgprs=(), lds_bytes=256, backend=backend)
  assert (ei.value.report.space, ei.value.report.address) == ("global", SHARED + (2 << 32))

@pytest.mark.parametrize("backend", ["c", "python"])
def test_rdna4_flat_lds_aperture(backend):
  from tinygrad.runtime.autogen.amd.rdna4 import ins as R4
  from mockgpu.emu.api import run_code
  out = np.zeros(32, np.uint32)
  b = Bufs(out)
  p = [R4.v_lshlrev_b32_e32(R4.v[1], 2, R4.v[0]), R4.v_add_nc_u32_e32(R4.v[2], 9, R4.v[0]),
       R4.s_mov_b32(R4.s[4], R4.src[235]), R4.v_mov_b32_e32(R4.v[5], R4.s[4]), R4.v_mov_b32_e32(R4.v[4], R4.v[1]),
       R4.flat_store_b32(vaddr=R4.v[4:5], vsrc=R4.v[2], ioffset=64), R4.s_wait_storecnt(simm16=0),
       R4.ds_load_b32(vdst=R4.v[3], addr=R4.v[1], offset0=64), R4.s_wait_dscnt(simm16=0),
       R4.global_store_b32(vaddr=R4.v[1:2], vsrc=R4.v[3], saddr=R4.s[0:1], ioffset=0), R4.s_endpgm()]
  run_code(b"".join(i.to_bytes() for i in p), b.mem, arch="gfx1201", user_sgprs=b.sgprs(), rsrc2=2 << 1, lds_bytes=256, backend=backend)
  np.testing.assert_array_equal(out, 9 + np.arange(32))

# ---- wave-level and per-lane paths of plain dword loads/stores agree (the C handler checks a whole wave at once when it can) ----
@pytest.mark.parametrize("backend", ["c", "python"])
def test_b128_lanes_across_two_allocations_and_overlapping_stores(backend):
  a, b = np.arange(64, dtype=np.uint32), np.arange(64, dtype=np.uint32) + 1000
  out, same = np.zeros(32 * 4, np.uint32), np.zeros(4, np.uint32)
  bufs = Bufs(a, b, out, same)
  # lanes 0-15 read a[4l..4l+3], lanes 16-31 read b[4(l-16)..]: two registered ranges in one instruction
  run([v_lshlrev_b32_e32(v[1], 4, v[0]), v_and_b32_e32(v[2], 0xff, v[1]), v_mov_b32_e32(v[3], s[0]), v_mov_b32_e32(v[4], s[1]),
       v_cmp_gt_u32_e32(16, v[0]), v_cndmask_b32_e32(v[3], s[2], v[3]), v_cndmask_b32_e32(v[4], s[3], v[4]),
       v_add_co_u32(v[3], VCC_LO, v[3], v[2]), v_add_co_ci_u32_e32(v[4], 0, v[4]),
       global_load_b128(vdst=v[8:11], addr=v[3:4], saddr=NULL), s_waitcnt(simm16=0),
       global_store_b128(addr=v[1], data=v[8:11], saddr=s[4:5]),
       v_mov_b32_e32(v[12], 0), v_mov_b32_e32(v[13], v[0]), v_mov_b32_e32(v[14], v[0]), v_mov_b32_e32(v[15], v[0]),
       global_store_b128(addr=v[12], data=v[12:15], saddr=s[6:7])], bufs, backend=backend)
  o = out.reshape(32, 4)
  np.testing.assert_array_equal(o[:16], a.reshape(16, 4)); np.testing.assert_array_equal(o[16:], b.reshape(16, 4))
  np.testing.assert_array_equal(same, [0, 31, 31, 31])   # every lane stores to the same 16 bytes: lanes in order, the last wins

@pytest.mark.parametrize("backend", ["c", "python"])
def test_b128_load_straddling_the_end_faults_on_the_first_missing_dword(backend):
  buf = np.arange(40, dtype=np.uint32)
  bufs = Bufs(); bufs.mem.add(buf.ctypes.data, 32 * 4 + 8, "short")   # lane 8's third dword is the first outside
  with pytest.raises(GPUFault) as ei:
    run([v_lshlrev_b32_e32(v[1], 4, v[0]), global_load_b128(vdst=v[4:7], addr=v[1], saddr=s[0:1])], bufs,
        sgprs=(buf.ctypes.data & 0xffffffff, buf.ctypes.data >> 32), backend=backend)
  r = ei.value.report
  assert (r.kind, r.lane, r.size, r.offset) == ("read", 8, 4, 32 * 4 + 8)

@pytest.mark.parametrize("backend", ["c", "python"])
@pytest.mark.parametrize("width", [2, 3, 4])
@pytest.mark.parametrize("enc", ["global", "flat"])
def test_store_straddling_the_end_writes_none_of_the_faulting_access(enc, width, backend):
  """A b64/b96/b128 store of lane 8 whose first dword is in range and the next is not faults on that dword without writing
  any of the lane's access (the faulting access is not performed); lanes 0..7 stored theirs."""
  lim, name = 8 * 4 * width + 4, {2: "b64", 3: "b96", 4: "b128"}[width]
  buf = np.zeros(40 * width, np.uint32)
  bufs = Bufs(); bufs.mem.add(buf.ctypes.data, lim, "short")
  insts = [v_mul_u32_u24_e32(v[1], 4 * width, v[0]), *(v_add_nc_u32_e32(v[4 + k], 100 * (k + 1), v[0]) for k in range(width))]
  if enc == "global": insts.append(globals()[f"global_store_{name}"](addr=v[1], data=v[4:3 + width], saddr=s[0:1]))
  else: insts += [v_mov_b32_e32(v[2], s[1]), v_add_co_u32(v[1], VCC_LO, s[0], v[1]), v_add_co_ci_u32_e32(v[2], 0, v[2]),
                  globals()[f"flat_store_{name}"](addr=v[1:2], data=v[4:3 + width])]
  with pytest.raises(GPUFault) as ei: run(insts, bufs, sgprs=(buf.ctypes.data & 0xffffffff, buf.ctypes.data >> 32), backend=backend)
  r = ei.value.report
  assert (r.kind, r.space, r.lane, r.size, r.offset) == ("write", "global", 8, 4, lim)
  want = np.zeros_like(buf)
  for l in range(8): want[width * l:width * (l + 1)] = [100 * (k + 1) + l for k in range(width)]
  np.testing.assert_array_equal(buf, want)   # lane 8's in-range dword (at lim - 4) is untouched

# the same paths when every lane of the wave is active (straight address loop, four lanes moved at a time) and when not
_LD = {1: global_load_b32, 2: global_load_b64, 3: global_load_b96, 4: global_load_b128}
_ST = {1: global_store_b32, 2: global_store_b64, 3: global_store_b96, 4: global_store_b128}

def _lane_tables(n, width, seed):
  """Per-lane byte offsets: loads from rows 1 KiB apart in a shuffled lane order, stores that overlap each other (a dword
  several lanes write ends with the value of the last of them in lane order)."""
  rng = np.random.default_rng(seed)
  sto = 4 * rng.integers(0, 2 * n, n)
  sto[1::4] = sto[0::4] + 4; sto[3::4] = sto[2::4]   # and in every group of four lanes: one dword apart, the same address
  return (rng.permutation(n) * 1024 + 4 * rng.integers(0, 200, n)).astype(np.uint32), sto.astype(np.uint32)

def _plain_prog(width, addr64, exec_lo=None):
  """v2 = load offset, v3 = store offset (from tables s[4:5], s[6:7]); load `width` dwords at src + v2 into v[2..] (the
  destination overlaps the address register), store them at dst + v3. exec_lo: EXEC for the load and store (wave32 only)."""
  vd = v[2:1 + width] if width > 1 else v[2]
  pre = [v_lshlrev_b32_e32(v[1], 2, v[0]), global_load_b32(vdst=v[2], addr=v[1], saddr=s[4:5]), global_load_b32(vdst=v[3], addr=v[1], saddr=s[6:7]),
         s_waitcnt(simm16=0), v_mov_b32_e32(v[10], v[3])]
  if exec_lo is not None: pre += [s_mov_b32(EXEC_LO, exec_lo)]
  if addr64: ld = [v_mov_b32_e32(v[9], s[1]), v_add_co_u32(v[8], VCC_LO, s[0], v[2]), v_add_co_ci_u32_e32(v[9], 0, v[9]),
                   v_mov_b32_e32(v[2], v[8]), v_mov_b32_e32(v[3], v[9]), _LD[width](vdst=vd, addr=v[2:3], saddr=NULL)]
  else: ld = [_LD[width](vdst=vd, addr=v[2], saddr=s[0:1])]
  return pre + ld + [s_waitcnt(simm16=0), _ST[width](addr=v[10], data=vd, saddr=s[2:3])]

def _want(src, ldo, sto, width, active, size):
  out = np.zeros(size, np.uint32)
  for l in np.flatnonzero(active):   # lanes in order
    out[sto[l] // 4:sto[l] // 4 + width] = src[ldo[l] // 4:ldo[l] // 4 + width]
  return out

@pytest.mark.parametrize("backend", ["c", "python"])
@pytest.mark.parametrize("addr64", [False, True])
@pytest.mark.parametrize("wave64", [False, True])
@pytest.mark.parametrize("width", [1, 2, 3, 4])
def test_full_wave_loads_and_stores(width, wave64, addr64, backend):
  n = 64 if wave64 else 32
  ldo, sto = _lane_tables(n, width, seed=width + 8 * wave64)
  src, dst = np.arange(n * 256 + 256, dtype=np.uint32) * 7 + 3, np.zeros(4 * n + 8, np.uint32)
  bufs = Bufs(src, dst, ldo, sto)
  run(_plain_prog(width, addr64), bufs, block=(n, 1, 1), wave64=wave64, backend=backend)
  np.testing.assert_array_equal(dst, _want(src, ldo, sto, width, np.ones(n, bool), dst.size))

@pytest.mark.parametrize("backend", ["c", "python"])
@pytest.mark.parametrize("exec_lo", [0x5f3c_a0f7, 0xffff, 0xfff, 0x3f])
@pytest.mark.parametrize("width", [1, 2, 3, 4])
def test_partial_exec_loads_and_stores(width, exec_lo, backend):
  """Inactive lanes neither load nor store (their addresses point nowhere) and keep their registers: scattered lanes, and
  lanes 0..n-1 (a workgroup of n threads; the wave-level copy takes n a multiple of four, 0x3f the per-lane one)."""
  active = np.array([(exec_lo >> l) & 1 for l in range(32)], bool)
  ldo, sto = _lane_tables(32, width, seed=3)
  ldo[~active] = 0xfff00000; sto[~active] = 0xfff00000
  src, dst = np.arange(32 * 256 + 256, dtype=np.uint32) * 5 + 1, np.zeros(4 * 32 + 8, np.uint32)
  bufs = Bufs(src, dst, ldo, sto)
  st = run(_plain_prog(width, False, exec_lo), bufs, backend=backend)
  np.testing.assert_array_equal(dst, _want(src, ldo, sto, width, active, dst.size))
  got = np.array([st.state.vgprs[2][l] for l in range(32)], np.uint32)
  np.testing.assert_array_equal(got[~active], ldo[~active])   # v2 (the first destination dword) keeps the load offset

@pytest.mark.parametrize("backend", ["c", "python"])
@pytest.mark.parametrize("store", [False, True])
@pytest.mark.parametrize("lanes,bad", [(64, 40), (16, 9)])
def test_lane_faulting_in_the_middle(lanes, bad, store, backend):
  """Every lane of a wave64, or a workgroup of 16 threads (lanes 0..15 of a wave32), active; lane `bad`'s b128 access crosses
  the end of the buffer: the fault names that lane and the first missing dword; the lanes before it did their accesses,
  it none of its store."""
  lim = bad * 16 + 8
  buf, out = np.arange(lanes * 4, dtype=np.uint32) + 100, np.zeros(lanes * 4, np.uint32)
  bufs = Bufs(out); bufs.mem.add(buf.ctypes.data, lim, "short")
  us = (buf.ctypes.data & 0xffffffff, buf.ctypes.data >> 32, out.ctypes.data & 0xffffffff, out.ctypes.data >> 32)
  p = [v_lshlrev_b32_e32(v[1], 4, v[0])]
  if store: p += [*(v_add_nc_u32_e32(v[4 + k], 1000 * (k + 1), v[0]) for k in range(4)), global_store_b128(addr=v[1], data=v[4:7], saddr=s[0:1])]
  else: p += [global_load_b128(vdst=v[4:7], addr=v[1], saddr=s[0:1])]
  with pytest.raises(GPUFault) as ei: run(p, bufs, sgprs=us, block=(lanes, 1, 1), wave64=lanes == 64, backend=backend)
  r = ei.value.report
  assert (r.kind, r.lane, r.size, r.offset) == ("write" if store else "read", bad, 4, lim)
  if store:
    want = np.arange(lanes * 4, dtype=np.uint32) + 100
    want[:4 * bad] = (np.arange(bad)[:, None] + 1000 * np.arange(1, 5)[None, :]).reshape(-1)
    np.testing.assert_array_equal(buf, want)

@pytest.mark.parametrize("backend", ["c", "python"])
def test_strict_mode_full_wave_b128_overread(backend):
  """Strict mode, every lane active: lanes 30 and 31 read past the allocation (inside its page): performed with the memory's
  bytes, each dword counted, lane 30 reported."""
  from mockgpu.emu.memory import MemoryMap, PAGE
  import mmap, ctypes
  m = mmap.mmap(-1, PAGE)
  arr = np.frombuffer(m, np.uint32); arr[:] = np.arange(arr.size, dtype=np.uint32) * 3 + 1
  base = ctypes.addressof(ctypes.c_char.from_buffer(m))
  out = np.zeros(32 * 4, np.uint32)
  bufs = Bufs(); bufs.mem = MemoryMap(strict=True)
  bufs.mem.add(out.ctypes.data, out.nbytes, "out"); bufs.mem.add(base, 30 * 16, "small", granule=PAGE)
  st = run([v_lshlrev_b32_e32(v[1], 4, v[0]), global_load_b128(vdst=v[4:7], addr=v[1], saddr=s[0:1]), s_waitcnt(simm16=0),
            global_store_b128(addr=v[1], data=v[4:7], saddr=s[2:3])], bufs,
           sgprs=(base & 0xffffffff, base >> 32, out.ctypes.data & 0xffffffff, out.ctypes.data >> 32), backend=backend)
  np.testing.assert_array_equal(out, arr[:32 * 4])
  assert st.oob_reads == 8 and (st.oob_report.address, st.oob_report.lane, st.oob_report.size) == (base + 30 * 16, 30, 4)
  del arr

@pytest.mark.parametrize("backend", ["c", "python"])
def test_flat_atomic_csub_u32(backend):
  """FLAT_ATOMIC_CSUB_U32 (RDNA3 FLAT encoding): old - data, clamped at 0 when data > old; GLC returns the old value"""
  mem = (np.arange(32, dtype=np.uint32) * 10).astype(np.uint32)
  data = (np.arange(32, dtype=np.uint32) * 7 + 40).astype(np.uint32)
  out = np.zeros(32, np.uint32)
  b = Bufs(mem, data, out)
  want = np.where(data > mem, 0, mem - data).astype(np.uint32)
  prog = [v_lshlrev_b32_e32(v[1], 2, v[0]), global_load_b32(vdst=v[2], addr=v[1], saddr=s[2:3]), s_waitcnt(simm16=0),
          v_mov_b32_e32(v[4], s[1]), v_add_co_u32(v[3], VCC_LO, s[0], v[1]), v_add_co_ci_u32_e32(v[4], 0, v[4]),
          flat_atomic_csub_u32(vdst=v[5], addr=v[3:4], data=v[2], glc=1), s_waitcnt(simm16=0),
          global_store_b32(addr=v[1], data=v[5], saddr=s[4:5])]
  old = mem.copy()
  run(prog, b, backend=backend)
  np.testing.assert_array_equal(mem, want)
  np.testing.assert_array_equal(out, old)

@pytest.mark.parametrize("backend", ["c", "python"])
@pytest.mark.parametrize("case", ["high", "wrap"])
def test_full_wave_addresses_not_sharing_a_high_dword(case, backend):
  """The full-wave fast path bounds a wave's addresses by their low dwords when the lanes share the high one; lane 17 with
  another high dword (high), or addresses wrapping past 2^64 through the offset (wrap), take the per-lane path: the first
  lane in order that faults is reported, with its address (lane 0 when wrapping: 2^64 - 1; lane 17: buf + 68 + 2^32)."""
  buf = np.arange(64, dtype=np.uint32)
  bufs = Bufs(buf)
  lo, hi = (buf.ctypes.data & 0xffffffff, buf.ctypes.data >> 32) if case == "high" else (0xfffff800, 0xffffffff)
  p = [v_lshlrev_b32_e32(v[1], 2 if case == "high" else 3, v[0]), v_add_co_u32(v[2], VCC_LO, lo, v[1]), v_add_co_ci_u32_e32(v[3], 0, v[9]),
       v_add_nc_u32_e32(v[3], hi, v[3]), v_cmp_eq_u32_e32(17, v[0]), v_cndmask_b32_e64(v[4], 0, 1, VCC_LO),
       *([v_add_nc_u32_e32(v[3], v[4], v[3])] if case == "high" else []), global_load_b32(vdst=v[5], addr=v[2:3], saddr=NULL, offset=0 if case == "high" else 2047)]
  with pytest.raises(GPUFault) as ei: run(p, bufs, block=(32, 1, 1), backend=backend)
  r = ei.value.report
  assert (r.lane, r.address) == ((17, buf.ctypes.data + 68 + (1 << 32)) if case == "high" else (0, (1 << 64) - 1))
