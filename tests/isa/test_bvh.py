"""Ray tracing (RDNA3): DS_BVH_STACK_RTN_B32 and IMAGE_BVH[64]_INTERSECT_RAY. Expected values come from the model written
down in docs/emu.md "Ray tracing", re-derived here in numpy (never from the emulator), on both backends."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import *
from mockgpu.emu.errors import GPUFault
from isa_harness import run

INV = 0xffffffff
BACKENDS = ["c", "python"]

# ---- DS_BVH_STACK_RTN_B32 ----
def stack_ref(lds: list, addr: int, last: int, data1: list, size: int) -> tuple[int, int]:
  """The documented stack: a ring of `size` dwords at LDS dword ADDR[31:18], position ADDR[17:0]; pushes DATA1[0..2], returns
  DATA1[3] or pops. Returns (returned node, new ADDR); `lds` (dwords) is updated."""
  base, pos = addr >> 18, addr & 0x3ffff
  valid = lambda d: d != INV and not (last != INV and d == last)
  for d in data1[:3]:
    if valid(d): lds[base + pos % size] = d; pos += 1
    elif d == last: break
  if valid(data1[3]): return data1[3], base << 18 | pos % size
  pos -= 1
  ret, lds[base + pos % size] = lds[base + pos % size], INV
  return ret, base << 18 | pos % size

def _node(k, lane): return INV if k is None else 0x1000 * k + lane   # a node pointer distinct per call slot and lane

# (last_node_ptr, DATA1[0..3]) per call, as slot numbers (None = INVALID_NODE); lanes add their id
CALLS = [(None, (1, 2, 3, 4)),            # push 1 2 3, return 4
         (None, (5, None, 6, None)),      # push 5, the first invalid entry equals last_node_ptr (both invalid): stop; pop -> 5
         (3, (7, 3, 8, None)),            # push 7, entry == last_node_ptr: stop; pop -> 7
         (None, (9, 10, 11, 12)),         # push 3 more (ring of 8: positions 3, 4, 5)
         (None, (13, 14, 15, 16)),        # positions 6, 7, 0: overwrites the oldest entry (1)
         (None, (None, 17, 17, None)),    # nothing pushed (the first entry is invalid and equals last_node_ptr), pop -> 15
         (14, (None, None, None, 14)),    # DATA1[3] == last_node_ptr is not valid: pop -> 14
         (None, (None,) * 4)]             # pop -> 13

@pytest.mark.parametrize("backend", BACKENDS)
def test_ds_bvh_stack_push_pop_wrap(backend):
  size, n = 8, len(CALLS)
  body = [v_lshlrev_b32_e32(v[1], 21, v[0]), v_lshlrev_b32_e32(v[2], 5, v[0]),        # ADDR = (lane * 8) << 18, byte address lane * 32
          v_mov_b32_e32(v[20], INV), v_mov_b32_e32(v[21], INV), v_mov_b32_e32(v[22], INV), v_mov_b32_e32(v[23], INV),
          ds_store_b128(addr=v[2], data0=v[20:23]), ds_store_b128(addr=v[2], data0=v[20:23], offset0=16)]
  for k, (last, d1) in enumerate(CALLS):
    body += [v_add_nc_u32_e32(v[3], _node(last, 0), v[0]) if last is not None else v_mov_b32_e32(v[3], INV)]
    body += [v_add_nc_u32_e32(v[4 + i], _node(s, 0), v[0]) if s is not None else v_mov_b32_e32(v[4 + i], INV) for i, s in enumerate(d1)]
    body += [ds_bvh_stack_rtn_b32(vdst=v[30 + k], addr=v[1], data0=v[3], data1=v[4:7]), s_waitcnt(simm16=0), v_mov_b32_e32(v[50 + k], v[1])]
  body += [ds_load_b128(vdst=v[70:73], addr=v[2]), ds_load_b128(vdst=v[74:77], addr=v[2], offset0=16), s_waitcnt(simm16=0)]
  vg = run(body, lds_bytes=32 * size * 4, sgprs=(), backend=backend).state.vgprs
  for lane in range(32):
    lds, addr = [INV] * (32 * size), lane * size << 18
    for k, (last, d1) in enumerate(CALLS):
      ret, addr = stack_ref(lds, addr, _node(last, lane), [_node(s, lane) for s in d1], size)
      assert (vg[30 + k][lane], vg[50 + k][lane]) == (ret, addr), (lane, k)
    assert [vg[70 + i][lane] for i in range(8)] == lds[lane * size:(lane + 1) * size], lane
  # the ISA-level story, written out for lane 5: returns 4, 5, 7, 12, 16, 15, 14, 13; the ring ends at position 6 of 8
  assert [vg[30 + k][5] for k in range(n)] == [_node(s, 5) for s in (4, 5, 7, 12, 16, 15, 14, 13)]
  assert vg[50 + n - 1][5] == (40 << 18 | 6)
  assert [vg[70 + i][5] for i in range(8)] == [INV if s is None else _node(s, 5) for s in (None, 2, 3, 9, 10, 11, None, None)]

@pytest.mark.parametrize("backend", BACKENDS)
def test_ds_bvh_stack_size_from_offset1_and_lds_fault(backend):
  # OFFSET1[5:4] = 3: a ring of 64 entries; 21 calls push 3 each (positions 0..62, no wrap) and return DATA1[3]; a pop returns the last push
  body = [v_mov_b32_e32(v[1], 4 << 18), v_mov_b32_e32(v[3], INV), v_mov_b32_e32(v[7], 1000)]
  for k in range(21): body += [v_mov_b32_e32(v[4], 3 * k), v_mov_b32_e32(v[5], 3 * k + 1), v_mov_b32_e32(v[6], 3 * k + 2),
                               ds_bvh_stack_rtn_b32(vdst=v[10], addr=v[1], data0=v[3], data1=v[4:7], offset1=0x30)]
  body += [v_mov_b32_e32(v[4], INV), v_mov_b32_e32(v[7], INV), ds_bvh_stack_rtn_b32(vdst=v[11], addr=v[1], data0=v[3], data1=v[4:7], offset1=0x30),
           v_mov_b32_e32(v[12], 16 + 4 * 62), ds_load_b32(vdst=v[13], addr=v[12]), s_waitcnt(simm16=0)]
  vg = run(body, lds_bytes=4 * 68, sgprs=(), block=(1, 1, 1), backend=backend).state.vgprs
  assert (vg[10][0], vg[11][0], vg[1][0], vg[13][0]) == (1000, 62, 4 << 18 | 62, INV)   # 0..62 pushed at 0..62; 62 popped, invalidated
  with pytest.raises(GPUFault) as ei:   # a ring outside the workgroup's LDS: the first push faults like any DS write
    run([v_mov_b32_e32(v[1], 16 << 18), v_mov_b32_e32(v[3], INV), v_mov_b32_e32(v[4], 1),
         ds_bvh_stack_rtn_b32(vdst=v[10], addr=v[1], data0=v[3], data1=v[4:7])], lds_bytes=64, sgprs=(), block=(1, 1, 1), backend=backend)
  r = ei.value.report
  assert (r.space, r.address, r.limit) == ("lds", 64, 64) and "DS_BVH_STACK_RTN_B32" in r.disasm
