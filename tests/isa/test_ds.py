"""DS: LDS stores/loads (offsets, 2addr forms, widths), atomics with return values, bounds per workgroup."""
import numpy as np
from tinygrad.runtime.autogen.amd.rdna3.ins import *
from isa_harness import run, Bufs
from mockgpu.emu.errors import InvalidInstruction

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

# ---- DS_SWIZZLE_B32, DS_APPEND / DS_CONSUME (hand-written: the wheel's pseudocode is prose) ----
import pytest
from mockgpu.emu.errors import GPUFault

def _rev5(i): return int(f"{i:05b}"[::-1], 2)
# offset -> the source lane of lane i, written out per mode from the ISA guide's definition of DS_SWIZZLE_B32
SWIZZLES = {0x801b: lambda i: (i & ~3) | (3 - (i & 3)),                  # quad permute [3, 2, 1, 0]
            0x041f: lambda i: i ^ 1,                                      # bit masks: and 0x1f, or 0, xor 1 (swap pairs)
            0x0070: lambda i: (i & 0x10) | 3,                             # and 0x10, or 3: broadcast lane 3 of each 16
            0xc060: lambda i: (i + 3) % 32,                               # rotate by 3
            0xc460: lambda i: (i - 3) % 32,                               # rotate by 3, other direction
            0xc043: lambda i: (i & 3) | ((i + 2) & 0x1c),                 # rotate by 2 with lanes bits [1:0] fixed
            0xe000: lambda i: _rev5(i),                                   # FFT, mask 0: bit reversal
            0xe003: lambda i: (_rev5(i) >> 2) | (i & 3)}                  # FFT, mask 3

@pytest.mark.parametrize("backend", ["c", "python"])
def test_swizzle_modes(backend):
  out = np.zeros(32 * len(SWIZZLES), np.uint32)
  b = Bufs(out)
  ex = 0xfffffffe ^ (1 << 13)                                             # lanes 0 and 13 inactive: they read as 0 and keep v[dst]
  body = [v_add_nc_u32_e32(v[2], 1000, v[0]), v_lshlrev_b32_e32(v[1], 2, v[0])]
  body += [v_mov_b32_e32(v[10 + k], 0xdead) for k in range(len(SWIZZLES))] + [s_mov_b32(EXEC_LO, ex)]
  body += [ds_swizzle_b32(vdst=v[10 + k], addr=v[0], data0=v[2], offset0=off & 0xff, offset1=off >> 8) for k, off in enumerate(SWIZZLES)]
  body += [s_mov_b32(EXEC_LO, -1), s_waitcnt(simm16=0)] + [global_store_b32(addr=v[1], data=v[10 + k], saddr=s[0:1], offset=128 * k) for k in range(len(SWIZZLES))]
  run(body, b, backend=backend)
  for k, (off, f) in enumerate(SWIZZLES.items()):
    want = [0xdead if not ex >> i & 1 else (1000 + f(i) if ex >> f(i) & 1 else 0) for i in range(32)]
    np.testing.assert_array_equal(out[32 * k:32 * (k + 1)], want, err_msg=hex(off))

@pytest.mark.parametrize("backend", ["c", "python"])
def test_append_consume_count_active_lanes(backend):
  out = np.zeros(96, np.uint32)
  b = Bufs(out)
  # RDNA3: the counter is the LDS dword at M0[15:0] + offset = 16 + 8; 16 lanes append (+16), then 3 lanes consume (-3)
  run([v_mov_b32_e32(v[1], 24), v_mov_b32_e32(v[2], 100), ds_store_b32(addr=v[1], data0=v[2]), s_mov_b32(M0, 16), v_mov_b32_e32(v[3], 7),
       v_mov_b32_e32(v[4], 7), s_mov_b32(EXEC_LO, 0xffff), ds_append(vdst=v[3], offset0=8), s_mov_b32(EXEC_LO, 0x7 << 20),
       ds_consume(vdst=v[4], offset0=8), s_mov_b32(EXEC_LO, -1), ds_load_b32(vdst=v[5], addr=v[1]), s_waitcnt(simm16=0),
       v_lshlrev_b32_e32(v[6], 2, v[0]), global_store_b32(addr=v[6], data=v[3], saddr=s[0:1]),
       global_store_b32(addr=v[6], data=v[4], saddr=s[0:1], offset=128), global_store_b32(addr=v[6], data=v[5], saddr=s[0:1], offset=256)],
      b, lds_bytes=64, backend=backend)
  l = np.arange(32)
  np.testing.assert_array_equal(out[:32], np.where(l < 16, 100, 7))
  np.testing.assert_array_equal(out[32:64], np.where((l >= 20) & (l < 23), 116, 7))
  np.testing.assert_array_equal(out[64:], 113)
  with pytest.raises(GPUFault) as ei:
    run([s_mov_b32(M0, 60), s_mov_b32(EXEC_LO, 0xf0), ds_append(vdst=v[3], offset0=4)], sgprs=(), lds_bytes=64, backend=backend)
  r = ei.value.report
  assert (r.kind, r.space, r.address, r.lane, r.limit) == ("atomic", "lds", 64, 4, 64) and "DS_APPEND" in r.disasm

@pytest.mark.parametrize("backend", ["c", "python"])
def test_rdna4_append_ignores_m0(backend):
  from tinygrad.runtime.autogen.amd.rdna4 import ins as R4
  from mockgpu.emu.api import run_code
  # RDNA4: addr = offset (no M0 base)
  p = [R4.v_mov_b32_e32(R4.v[1], 8), R4.v_mov_b32_e32(R4.v[2], 40), R4.ds_store_b32(addr=R4.v[1], data0=R4.v[2]), R4.s_mov_b32(R4.M0, 16),
       R4.s_mov_b32(R4.EXEC_LO, 0x1f), R4.ds_append(vdst=R4.v[3], offset0=8), R4.s_mov_b32(R4.EXEC_LO, -1), R4.ds_load_b32(vdst=R4.v[4], addr=R4.v[1]),
       R4.s_wait_dscnt(simm16=0), R4.s_endpgm()]
  st = run_code(b"".join(i.to_bytes() for i in p), arch="gfx1201", lds_bytes=64, capture=True, backend=backend)
  assert st.state.vgprs[3][:5] == (40,) * 5 and st.state.vgprs[4][0] == 45


@pytest.mark.parametrize("backend", ["c", "python"])
def test_condxchg32_rtn_b64(backend):
  """DS_CONDXCHG32_RTN_B64: both dwords at (ADDR + offset) & 0xfff8 and +4 return their old value; each is replaced by the
  low 31 bits of its half of DATA when that half's bit 31 is set"""
  old = (np.arange(64, dtype=np.uint32) * 0x01010101 + 0x11).astype(np.uint32)
  lo = (np.arange(32, dtype=np.uint32) * 3 + 0x100).astype(np.uint32) | np.where(np.arange(32) % 2 == 0, 0x80000000, 0).astype(np.uint32)
  hi = (np.arange(32, dtype=np.uint32) * 5 + 0x900).astype(np.uint32) | np.where(np.arange(32) % 3 == 0, 0x80000000, 0).astype(np.uint32)
  out = np.zeros(32 * 4, np.uint32)
  b = Bufs(old, lo, hi, out)
  prog = [v_lshlrev_b32_e32(v[1], 3, v[0]), v_lshlrev_b32_e32(v[2], 2, v[0]), global_load_b32(vdst=v[3], addr=v[2], saddr=s[2:3]),
          global_load_b32(vdst=v[4], addr=v[2], saddr=s[4:5]), global_load_b64(vdst=v[6:7], addr=v[1], saddr=s[0:1]), s_waitcnt(simm16=0),
          ds_store_b64(addr=v[1], data0=v[6:7]), v_add_nc_u32_e32(v[8], 3, v[1]),                                  # +3 +offset 0: masked to 8l
          ds_condxchg32_rtn_b64(vdst=v[10:11], addr=v[8], data0=v[3:4]), s_waitcnt(simm16=0),
          ds_load_b64(vdst=v[12:13], addr=v[1]), s_waitcnt(simm16=0), v_lshlrev_b32_e32(v[9], 4, v[0]),
          global_store_b64(addr=v[9], data=v[10:11], saddr=s[6:7]), global_store_b64(addr=v[9], data=v[12:13], saddr=s[6:7], offset=8)]
  run(prog, b, lds_bytes=256, backend=backend)
  o, ol, oh = out.reshape(32, 4), old[0::2], old[1::2]
  np.testing.assert_array_equal(o[:, 0], ol)
  np.testing.assert_array_equal(o[:, 1], oh)
  np.testing.assert_array_equal(o[:, 2], np.where(lo >> 31, lo & 0x7fffffff, ol))
  np.testing.assert_array_equal(o[:, 3], np.where(hi >> 31, hi & 0x7fffffff, oh))

@pytest.mark.parametrize("backend", ["c", "python"])
@pytest.mark.parametrize("op", ["ds_add_gs_reg_rtn", "ds_sub_gs_reg_rtn"])
def test_gs_reg_ops_are_graphics_only(backend, op):
  with pytest.raises(InvalidInstruction, match="geometry-shader stream-out registers") as ei:
    run([v_mov_b32_e32(v[1], 1), globals()[op](vdst=v[2:3], addr=v[0], data0=v[1], offset0=4)], sgprs=(), backend=backend)
  assert ei.value.report.pc == 4 and op.upper() in ei.value.report.disasm
