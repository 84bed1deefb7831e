"""SMEM: scalar loads of 1..16 dwords with immediate and SGPR offsets."""
import numpy as np
from tinygrad.runtime.autogen.amd.rdna3.ins import *
from isa_harness import run, Bufs

def test_s_load_widths_and_offsets():
  data = np.arange(64, dtype=np.uint32) * 7 + 1
  b = Bufs(data)
  st = run([s_load_b32(sdata=s[4], sbase=s[0:1], offset=8, soffset=NULL), s_load_b64(sdata=s[6:7], sbase=s[0:1], offset=0, soffset=NULL),
            s_mov_b32(s[3], 0), s_mov_b32(s[20], 16), s_load_b128(sdata=s[8:11], sbase=s[0:1], offset=4, soffset=s[20]),
            s_load_b512(sdata=s[24:39], sbase=s[0:1], offset=64, soffset=NULL), s_waitcnt(simm16=0)], b)
  sg = st.state.sgprs
  assert sg[4] == data[2] and (sg[6], sg[7]) == (data[0], data[1])
  assert list(sg[8:12]) == list(data[5:9])              # byte offset 4 + 16
  assert list(sg[24:40]) == list(data[16:32])
