"""DS: LDS stores/loads (offsets, 2addr forms, widths), atomics with return values, bounds per workgroup."""
import numpy as np
from tinygrad.runtime.autogen.amd.rdna3.ins import *
from isa_harness import run, Bufs

def test_store_load_roundtrip_2addr_and_widths():
  out = np.zeros(32 * 4, np.uint32)
  b = Bufs(out)
  run([v_lshlrev_b32_e32(v[1], 3, v[0]), v_add_nc_u32_e32(v[2], 1000, v[0]), v_add_nc_u32_e32(v[3], 2000, v[0]),
            ds_store_2addr_b32(addr=v[1], data0=v[2], data1=v[3], offset0=0, offset1=1),    # LDS[8l] = 1000+l, LDS[8l+4] = 2000+l
            ds_store_b16(addr=v[1], data0=v[0], offset0=0x00, offset1=0x02),                 # 16-bit store at byte 8l+512
            s_waitcnt(simm16=0),
            ds_load_b64(vdst=v[4:5], addr=v[1]), ds_load_u16(vdst=v[6], addr=v[1], offset1=0x02), ds_load_i8(vdst=v[7], addr=v[1], offset0=3),
            s_waitcnt(simm16=0), v_lshlrev_b32_e32(v[8], 4, v[0]),
            global_store_b128(addr=v[8], data=v[4:7], saddr=s[0:1])], b, lds_bytes=1024)
  o = out.reshape(32, 4)
  l = np.arange(32)
  np.testing.assert_array_equal(o[:, 0], 1000 + l); np.testing.assert_array_equal(o[:, 1], 2000 + l)
  np.testing.assert_array_equal(o[:, 2], l)
  np.testing.assert_array_equal(o[:, 3], np.zeros(32))     # byte 3 of 1000+l is 0

def test_atomic_add_returns_old_values():
  out = np.zeros(32, np.uint32)
  b = Bufs(out)
  run([v_mov_b32_e32(v[1], 0), ds_store_b32(addr=v[1], data0=v[1]), s_waitcnt(simm16=0), v_mov_b32_e32(v[2], 1),
       ds_add_rtn_u32(vdst=v[3], addr=v[1], data0=v[2]), s_waitcnt(simm16=0), v_lshlrev_b32_e32(v[4], 2, v[0]),
       global_store_b32(addr=v[4], data=v[3], saddr=s[0:1])], b, lds_bytes=64)
  assert sorted(out.tolist()) == list(range(32))             # every lane saw a distinct old value
