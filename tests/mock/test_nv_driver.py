"""The mock NVIDIA driver (mockgpu.mock.nv): RM/UVM ioctls with tinygrad's nv_570 structures, and a GPFIFO channel fed by
hand-built pushbuffers (method headers and QMD fields encoded from tinygrad's autogen tables, the hardware definition)."""
import ctypes, errno, itertools, struct
import numpy as np
import pytest
import tinygrad.runtime.support.hcq  # noqa: F401  (tinygrad's import order: hcq before the mock's file layer)
from tinygrad.runtime.autogen import nv_570 as nv
from mockgpu.mock.errors import PacketError
from mockgpu.mock.gpu import host_mmap
from mockgpu.mock.nv.gpfifo import Channel, QMD_FIELDS
from mockgpu.mock.nv.rm import NVDriver

def esc(nr, arg): return (3 << 30) | (ctypes.sizeof(arg) & 0x1FFF) << 16 | ord("F") << 8 | nr

@pytest.fixture
def drv():
  d = NVDriver()
  d._start = lambda: None            # tests drive channels by hand
  return d

def test_rm_alloc_errors_and_unknown_requests(drv, capsys):
  ctl = drv.open("/dev/nvidiactl")
  drv.ioctl(ctl, esc(nv.NV_ESC_RM_ALLOC, p:=nv.NVOS21_PARAMETERS(hClass=nv.NV01_ROOT_CLIENT)), p)
  root = p.hObjectNew
  drv.ioctl(ctl, esc(nv.NV_ESC_RM_ALLOC, p:=nv.NVOS21_PARAMETERS(hRoot=root, hObjectParent=root, hClass=0xBEEF)), p)
  assert p.status == nv.NV_ERR_INVALID_CLASS and "RM_ALLOC class 0xbeef is not modelled" in capsys.readouterr().err
  drv.ioctl(ctl, esc(nv.NV_ESC_RM_ALLOC, p:=nv.NVOS21_PARAMETERS(hRoot=root, hObjectParent=0x1234, hClass=nv.NV01_DEVICE_0)), p)
  assert p.status == nv.NV_ERR_INVALID_OBJECT_PARENT
  drv.ioctl(ctl, esc(nv.NV_ESC_RM_CONTROL, c:=nv.NVOS54_PARAMETERS(hClient=root, hObject=root, cmd=0x12345678)), c)
  assert c.status == nv.NV_ERR_NOT_SUPPORTED and "RM_CONTROL cmd 0x12345678 is not modelled" in capsys.readouterr().err
  with pytest.raises(OSError) as ei: drv.ioctl(ctl, esc(0x77, p), p)
  assert ei.value.errno == errno.ENOTTY and "escape 0x77" in str(ei.value)
  uvm = drv.open("/dev/nvidia-uvm")
  with pytest.raises(OSError, match="nvidia-uvm ioctl 0x999"): drv.ioctl(uvm, 0x999, nv.UVM_FREE_PARAMS())

def test_build_version_classlist_and_gr_info(drv):
  ctl = drv.open("/dev/nvidiactl")
  drv.ioctl(ctl, esc(nv.NV_ESC_RM_ALLOC, p:=nv.NVOS21_PARAMETERS(hClass=nv.NV01_ROOT_CLIENT)), p)
  root = p.hObjectNew
  def control(cmd, params):
    drv.ioctl(ctl, esc(nv.NV_ESC_RM_CONTROL, c:=nv.NVOS54_PARAMETERS(hClient=root, hObject=root, cmd=cmd, params=ctypes.addressof(params),
                                                                       paramsSize=ctypes.sizeof(params))), c)
    assert c.status == 0
    return params
  assert control(nv.NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2, nv.NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS()).driverVersionBuffer.startswith(b"570.")
  n = control(nv.NV0080_CTRL_CMD_GPU_GET_CLASSLIST, nv.NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS()).numClasses
  arr = (ctypes.c_uint32 * n)()
  control(nv.NV0080_CTRL_CMD_GPU_GET_CLASSLIST, nv.NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS(numClasses=n, classList=ctypes.addressof(arr)))
  assert {nv.TURING_USERMODE_A, nv.AMPERE_CHANNEL_GPFIFO_A, nv.ADA_COMPUTE_A, nv.AMPERE_DMA_COPY_B} == set(arr)
  infos = (nv.NV2080_CTRL_GR_INFO * 2)(nv.NV2080_CTRL_GR_INFO(index=nv.NV2080_CTRL_GR_INFO_INDEX_SM_VERSION),
                                       nv.NV2080_CTRL_GR_INFO(index=nv.NV2080_CTRL_GR_INFO_INDEX_MAX_WARPS_PER_SM))
  control(nv.NV2080_CTRL_CMD_GR_GET_INFO, nv.NV2080_CTRL_GR_GET_INFO_PARAMS(grInfoListSize=2, grInfoList=ctypes.addressof(infos)))
  assert [infos[0].data, infos[1].data] == [0x700, 1]      # sm_70: (major << 8) | minor, as tinygrad decodes it

def hdr(sub, mthd, n): return (2 << 28) | (n << 16) | (sub << 13) | (mthd >> 2)
def sem(addr, payload, op, wide=True, ts=False):
  flags = op | (wide << 24) | (ts << 25)
  return [hdr(0, nv.NVC56F_SEM_ADDR_LO, 5), addr & 0xFFFFFFFF, addr >> 32, payload & 0xFFFFFFFF, payload >> 32, flags]

_HINTS = itertools.count()
class Rig:
  """A channel over one registered 1 MiB host region: ring at +0, USERD at +0x1000, pushbuffers from +0x2000, data from +0x10000.
  The region sits below 2^40, as tinygrad's command buffers do (GP entries and PCAS carry 40-bit addresses)."""
  def __init__(self, drv):
    self.base = host_mmap(0xC0_0000_0000 + (next(_HINTS) << 24), 1 << 20)
    assert self.base < 1 << 40
    drv.memory.add(self.base, 1 << 20, "rig")
    self.ch, self.put, self.pb = Channel(drv, 0, self.base, 64, self.base + 0x1000, 1), 0, self.base + 0x2000
  def submit(self, words):
    ctypes.memmove(self.pb, struct.pack(f"<{len(words)}I", *words), 4 * len(words))
    ctypes.c_uint64.from_address(self.base + 8 * self.put).value = self.pb | (1 << 41) | (len(words) << 42)
    self.pb += 4 * len(words)
    self.put += 1
    ctypes.c_uint32.from_address(self.ch.userd + nv.AmpereAControlGPFifo.GPPut.offset).value = self.put
  def u64(self, off): return ctypes.c_uint64.from_address(self.base + off).value
  def gpget(self): return ctypes.c_uint32.from_address(self.ch.userd + nv.AmpereAControlGPFifo.GPGet.offset).value

def test_semaphores_block_until_the_cpu_writes(drv):
  r = Rig(drv)
  r.submit(sem(r.base + 0x10000, 5, nv.NVC56F_SEM_EXECUTE_OPERATION_ACQ_CIRC_GEQ) + sem(r.base + 0x10010, 0x1_0000_0007, nv.NVC56F_SEM_EXECUTE_OPERATION_RELEASE, ts=True))
  assert r.ch.run() is False and r.gpget() == 0 and r.u64(0x10010) == 0        # blocked: 0 < 5
  ctypes.c_uint64.from_address(r.base + 0x10000).value = 5
  assert r.ch.run() is True and r.gpget() == 1
  assert r.u64(0x10010) == 0x1_0000_0007 and r.u64(0x10018) > 0             # 64-bit payload and a ns timestamp

def test_copy_engine_and_four_word_semaphore(drv):
  r = Rig(drv)
  src, dst = r.base + 0x20000, r.base + 0x30000
  ctypes.memmove(src, bytes(range(200)), 200)
  dma = lambda flags: [hdr(4, nv.NVC6B5_LAUNCH_DMA, 1), flags]
  r.submit([hdr(4, nv.NVC6B5_OFFSET_IN_UPPER, 4), src >> 32, src & 0xFFFFFFFF, dst >> 32, dst & 0xFFFFFFFF, hdr(4, nv.NVC6B5_LINE_LENGTH_IN, 1), 200,
            *dma(nv.NVC6B5_LAUNCH_DMA_DATA_TRANSFER_TYPE_NON_PIPELINED),
            hdr(4, nv.NVC6B5_SET_SEMAPHORE_A, 3), (r.base + 0x10000) >> 32, (r.base + 0x10000) & 0xFFFFFFFF, 42,
            *dma(nv.NVC6B5_LAUNCH_DMA_SEMAPHORE_TYPE_RELEASE_FOUR_WORD_SEMAPHORE << nv.NVC6B5_LAUNCH_DMA_SEMAPHORE_TYPE[1])])
  assert r.ch.run() and ctypes.string_at(dst, 200) == bytes(range(200)) and r.u64(0x10000) == 42 and r.u64(0x10008) > 0

def test_qmd_launch_runs_ptx_and_writes_the_release(drv):
  r = Rig(drv)
  ptx = b""".version 7.5\n.target sm_70\n.address_size 64\n.visible .entry k (.param .u64 out, .param .s32 v)\n{ .reg .u64 %o, %a; .reg .u32 %t;
.reg .s32 %v, %w; ld.param.u64 %o, [out+0]; ld.param.s32 %v, [v+0]; mov.u32 %t, %ctaid.x; mov.u32 %w, %tid.y; mad.lo.s32 %w, %t, 10, %w;
add.s32 %w, %w, %v; mov.u32 %t, %ctaid.x; shl.b32 %t, %t, 1; mov.u32 %v, %tid.y; add.u32 %t, %t, %v; cvt.u64.u32 %a, %t;
mad.lo.u64 %a, %a, 4, %o; st.global.s32 [%a+0], %w; ret; }\0"""
  prog, cbuf, qmd, out = r.base + 0x40000, r.base + 0x50000, r.base + 0x60000, r.base + 0x70000
  ctypes.memmove(prog, ptx, len(ptx))
  words = [0] * 88
  words[80], words[81] = 1, 1                                                 # one buffer, one value (NVArgsState, mock mode)
  ctypes.memmove(cbuf, struct.pack("<88I", *words) + struct.pack("<Qq", out, 100), 0x160 + 16)
  raw = 0
  def put(name, v):
    nonlocal raw
    hi, lo = QMD_FIELDS[name] if isinstance(name, str) else name
    raw |= v << lo
  for name, v in (("CTA_RASTER_WIDTH", 3), ("CTA_RASTER_HEIGHT", 1), ("CTA_RASTER_DEPTH", 1), ("CTA_THREAD_DIMENSION0", 1),
                  ("CTA_THREAD_DIMENSION1", 2), ("CTA_THREAD_DIMENSION2", 1), ("PROGRAM_ADDRESS_LOWER", prog & 0xFFFFFFFF),
                  ("PROGRAM_ADDRESS_UPPER", prog >> 32), ("RELEASE0_ENABLE", 1), ("RELEASE0_ADDRESS_LOWER", (r.base + 0x10000) & 0xFFFFFFFF),
                  ("RELEASE0_ADDRESS_UPPER", (r.base + 0x10000) >> 32), ("RELEASE0_PAYLOAD_LOWER", 9)): put(name, v)
  put(nv.NVC6C0_QMDV03_00_CONSTANT_BUFFER_ADDR_LOWER(0), cbuf & 0xFFFFFFFF); put(nv.NVC6C0_QMDV03_00_CONSTANT_BUFFER_ADDR_UPPER(0), cbuf >> 32)
  ctypes.memmove(qmd, raw.to_bytes(0x100, "little"), 0x100)
  r.submit([hdr(1, nv.NVC6C0_SEND_PCAS_A, 1), qmd >> 8, hdr(1, nv.NVC6C0_SEND_SIGNALING_PCAS2_B, 1), 9])
  assert r.ch.run() and r.ch.error is None
  assert np.frombuffer(ctypes.string_at(out, 24), np.int32).tolist() == [100, 101, 110, 111, 120, 121] and r.u64(0x10000) == 9

def test_bad_header_stops_the_channel(drv, capsys):
  r = Rig(drv)
  r.submit([(1 << 28) | 5])
  r.ch.run()
  assert isinstance(r.ch.error, PacketError) and "only incrementing method headers" in str(r.ch.error)
  assert drv.fault is not None and "stopped at GPGet=0" in capsys.readouterr().err
  assert r.ch.run() is False                                                  # stays stopped
