"""FLAT/GLOBAL/SCRATCH: addressing (SGPR base + VGPR offset, 64-bit VGPR address, immediate offsets), widths, D16 halves,
atomics with GLC returns, per-lane private scratch."""
import numpy as np
from tinygrad.runtime.autogen.amd.rdna3.ins import *
from isa_harness import run, Bufs

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
