"""The mock NVIDIA driver (mockgpu.mock.nv): RM/UVM ioctls with tinygrad's nv_570 structures, and a GPFIFO channel fed by
hand-built pushbuffers (method headers and QMD fields encoded from tinygrad's autogen tables, the hardware definition)."""
import ctypes, errno, itertools, mmap, struct, time
import numpy as np
import pytest
import tinygrad.runtime.support.hcq  # noqa: F401  (tinygrad's import order: hcq before the mock's file layer)
from tinygrad.runtime.autogen import libc, nv_570 as nv
from mockgpu.mock.errors import PacketError, QueueFault
from mockgpu.mock.device import DeviceThread, host_mmap
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

# *** method headers, encoded from the NVC56F_DMA_* field definitions (the host's pushbuffer format)
def fld(spec, v):
  hi, lo = spec
  assert 0 <= v < 1 << (hi - lo + 1)
  return v << lo
def header(sec, sub, mthd, count):       # SEC_OP 1/3/5: count in 28:16, dword address in 11:0
  return fld(nv.NVC56F_DMA_SEC_OP, sec) | fld(nv.NVC56F_DMA_METHOD_COUNT, count) | fld(nv.NVC56F_DMA_METHOD_SUBCHANNEL, sub) | \
    fld(nv.NVC56F_DMA_METHOD_ADDRESS, mthd >> 2)
def old_header(sec, sub, mthd, count):   # SEC_OP 0/2 with TERT_OP 0: count in 28:18, byte address in 12:2
  return fld(nv.NVC56F_DMA_SEC_OP, sec) | fld(nv.NVC56F_DMA_METHOD_COUNT_OLD, count) | fld(nv.NVC56F_DMA_METHOD_SUBCHANNEL, sub) | \
    fld(nv.NVC56F_DMA_TERT_OP, 0) | fld(nv.NVC56F_DMA_METHOD_ADDRESS_OLD, mthd >> 2)
def immd(sub, mthd, data):
  return fld(nv.NVC56F_DMA_IMMD_OPCODE, nv.NVC56F_DMA_IMMD_OPCODE_VALUE) | fld(nv.NVC56F_DMA_IMMD_DATA, data) | \
    fld(nv.NVC56F_DMA_IMMD_SUBCHANNEL, sub) | fld(nv.NVC56F_DMA_IMMD_ADDRESS, mthd >> 2)
def mask_op(opcode, mask=0): return fld(nv.NVC56F_DMA_SET_SUBDEVICE_MASK_OPCODE, opcode) | fld(nv.NVC56F_DMA_SET_SUBDEVICE_MASK_VALUE, mask)
END = fld(nv.NVC56F_DMA_ENDSEG_OPCODE, nv.NVC56F_DMA_ENDSEG_OPCODE_VALUE)
def hdr(sub, mthd, n): return header(nv.NVC56F_DMA_SEC_OP_INC_METHOD, sub, mthd, n)
def sem_flags(op, wide=True, ts=False):
  return fld(nv.NVC56F_SEM_EXECUTE_OPERATION, op) | fld(nv.NVC56F_SEM_EXECUTE_PAYLOAD_SIZE, int(wide)) | \
    fld(nv.NVC56F_SEM_EXECUTE_RELEASE_TIMESTAMP, int(ts))
def sem(addr, payload, op, wide=True, ts=False):
  return [hdr(0, nv.NVC56F_SEM_ADDR_LO, 5), addr & 0xFFFFFFFF, addr >> 32, payload & 0xFFFFFFFF, payload >> 32, sem_flags(op, wide, ts)]
RELEASE, RELEASE32 = sem_flags(nv.NVC56F_SEM_EXECUTE_OPERATION_RELEASE), sem_flags(nv.NVC56F_SEM_EXECUTE_OPERATION_RELEASE, wide=False)
BIND = [hdr(1, nv.NVC56F_SET_OBJECT, 1), nv.ADA_COMPUTE_A, hdr(4, nv.NVC56F_SET_OBJECT, 1), nv.AMPERE_DMA_COPY_B]   # tinygrad's subchannels

_HINTS = itertools.count()
class Rig:
  """A channel over one registered 1 MiB host region: ring at +0, USERD at +0x1000, pushbuffers from +0x2000, data from +0x10000.
  The region sits below 2^40, as tinygrad's command buffers do (GP entries and PCAS carry 40-bit addresses)."""
  def __init__(self, drv, entries=64):
    self.base = host_mmap(0xC0_0000_0000 + (next(_HINTS) << 24), 1 << 20)
    assert self.base < 1 << 40
    drv.memory.add(self.base, 1 << 20, "rig")
    self.ch, self.put, self.pb = Channel(drv, 0, self.base, entries, self.base + 0x1000, 1), 0, self.base + 0x2000
  def entry(self, value):
    ctypes.c_uint64.from_address(self.base + 8 * self.put).value = value
    self.put += 1
    ctypes.c_uint32.from_address(self.ch.userd + nv.AmpereAControlGPFifo.GPPut.offset).value = self.put
  def submit(self, words):
    ctypes.memmove(self.pb, struct.pack(f"<{len(words)}I", *words), 4 * len(words))
    self.entry(fld(nv.NVC56F_GP_ENTRY0_GET, self.pb >> 2 & 0x3FFFFFFF) | fld(nv.NVC56F_GP_ENTRY1_GET_HI, self.pb >> 32) << 32 |
               fld(nv.NVC56F_GP_ENTRY1_LENGTH, len(words)) << 32)
    self.pb += 4 * len(words)
  def u32(self, off): return ctypes.c_uint32.from_address(self.base + off).value
  def u64(self, off): return ctypes.c_uint64.from_address(self.base + off).value
  def gpget(self): return ctypes.c_uint32.from_address(self.ch.userd + nv.AmpereAControlGPFifo.GPGet.offset).value

def test_semaphores_block_until_the_cpu_writes(drv):
  r = Rig(drv)
  r.submit(sem(r.base + 0x10000, 5, nv.NVC56F_SEM_EXECUTE_OPERATION_ACQ_CIRC_GEQ) +
           sem(r.base + 0x10010, 0x1_0000_0007, nv.NVC56F_SEM_EXECUTE_OPERATION_RELEASE, ts=True))
  assert r.ch.run() is False and r.gpget() == 0 and r.u64(0x10010) == 0        # blocked: 0 < 5
  ctypes.c_uint64.from_address(r.base + 0x10000).value = 5
  assert r.ch.run() is True and r.gpget() == 1
  assert r.u64(0x10010) == 0x1_0000_0007 and r.u64(0x10018) > 0             # 64-bit payload and a ns timestamp

def test_a_long_acquire_is_reported_once(drv, monkeypatch, capsys):
  monkeypatch.setattr("mockgpu.mock.device.wait_report_s", lambda: 0)
  r = Rig(drv)
  r.submit(sem(r.base + 0x10000, 5, nv.NVC56F_SEM_EXECUTE_OPERATION_ACQ_STRICT_GEQ))
  assert r.ch.run() is False and r.ch.run() is False
  err = capsys.readouterr().err
  assert err.count("GPFIFO channel 0 (token 1) has been waiting") == 1 and "RuntimeError with an empty message" in err
  assert f"SEM_EXECUTE acquire at GP entry 0 segment {r.base + 0x2000:#x}+0x14: 64-bit semaphore at {r.base + 0x10000:#x} >= 0x5 (now 0x0)" in err
  ctypes.c_uint64.from_address(r.base + 0x10000).value = 5
  assert r.ch.run() is True and r.ch.blocked_on == "" and capsys.readouterr().err == ""

@pytest.mark.parametrize("op, cur, payload, passes", [
  ("ACQ_CIRC_GEQ", 2**64 - 16, 5, False),    # circular: 2^64-16 is 21 *behind* 5
  ("ACQ_STRICT_GEQ", 2**64 - 16, 5, True),   # strict: plain unsigned >=
  ("ACQUIRE", 7, 7, True), ("ACQUIRE", 8, 7, False),
  ("ACQ_AND", 0b1010, 0b0110, True), ("ACQ_AND", 0b1000, 0b0110, False),
  ("ACQ_NOR", 2**64 - 2, 0, True), ("ACQ_NOR", 2**64 - 2, 1, False)])   # NOR passes while some bit is clear in both
def test_sem_execute_acquires(drv, op, cur, payload, passes):
  r = Rig(drv)
  ctypes.c_uint64.from_address(r.base + 0x10000).value = cur
  r.submit(sem(r.base + 0x10000, payload, getattr(nv, f"NVC56F_SEM_EXECUTE_OPERATION_{op}")))
  assert r.ch.run() is passes and r.ch.error is None and r.gpget() == int(passes)

def test_header_forms(drv):
  """Every method-header form delivers its data where the encoding says; releases make the deliveries visible."""
  r, a = Rig(drv), lambda i: r.base + 0x10000 + 16 * i
  lo, hi = lambda i: a(i) & 0xFFFFFFFF, lambda i: a(i) >> 32
  r.submit([old_header(nv.NVC56F_DMA_SEC_OP_GRP0_USE_TERT, 0, nv.NVC56F_SEM_ADDR_LO, 5), lo(0), hi(0), 0x11, 0x22, RELEASE,   # old incrementing
            header(nv.NVC56F_DMA_SEC_OP_NON_INC_METHOD, 0, nv.NVC56F_SEM_PAYLOAD_LO, 3), 5, 6, 0x33,   # incrementing would reach SEM_EXECUTE
            hdr(0, nv.NVC56F_SEM_ADDR_LO, 2), lo(1), hi(1), hdr(0, nv.NVC56F_SEM_EXECUTE, 1), RELEASE,
            old_header(nv.NVC56F_DMA_SEC_OP_GRP2_USE_TERT, 0, nv.NVC56F_SEM_PAYLOAD_HI, 2), 9, 0x44,        # old non-incrementing
            hdr(0, nv.NVC56F_SEM_ADDR_LO, 2), lo(2), hi(2), hdr(0, nv.NVC56F_SEM_EXECUTE, 1), RELEASE,
            header(nv.NVC56F_DMA_SEC_OP_ONE_INC, 0, nv.NVC56F_SEM_PAYLOAD_LO, 3), 0x55, 1, 0x66,           # LO, then HI twice
            hdr(0, nv.NVC56F_SEM_ADDR_LO, 2), lo(3), hi(3), hdr(0, nv.NVC56F_SEM_EXECUTE, 1), RELEASE,
            0, 0, hdr(0, nv.NVC56F_SEM_ADDR_LO, 2), lo(4), hi(4), 0,                                        # header 0: NOP
            immd(0, nv.NVC56F_SEM_PAYLOAD_LO, 0x1ABC), immd(0, nv.NVC56F_SEM_PAYLOAD_HI, 0), immd(0, nv.NVC56F_SEM_EXECUTE, RELEASE32)])
  assert r.ch.run() and r.ch.error is None and r.gpget() == 1
  assert [r.u64(0x10000 + 16 * i) for i in range(5)] == [0x22_00000011, 0x22_00000033, 0x44_00000033, 0x66_00000055, 0x1ABC]

def test_end_segment_and_zero_padding(drv):
  r = Rig(drv)
  rel = lambda off, v: sem(r.base + off, v, nv.NVC56F_SEM_EXECUTE_OPERATION_RELEASE)
  r.submit(rel(0x10000, 1) + [END] + rel(0x10010, 2))
  r.submit(rel(0x10020, 3) + [0] * 1000)    # tinygrad submits whole zero-padded pages
  assert r.ch.run() and r.ch.error is None and r.gpget() == 2
  assert (r.u64(0x10000), r.u64(0x10010), r.u64(0x10020)) == (1, 0, 3)

def test_method_data_continues_in_the_next_segment(drv):
  r = Rig(drv)
  words = sem(r.base + 0x10000, 0x77, nv.NVC56F_SEM_EXECUTE_OPERATION_RELEASE)
  r.submit(words[:3]); r.submit(words[3:])
  assert r.ch.run() and r.ch.error is None and r.u64(0x10000) == 0x77

def test_subdevice_masks(drv):
  """This GPU is subdevice 0: methods run while bit 0 of the current mask is set."""
  r, rel = Rig(drv), lambda i, v: sem(r.base + 0x10000 + 16 * i, v, nv.NVC56F_SEM_EXECUTE_OPERATION_RELEASE)
  r.submit([mask_op(nv.NVC56F_DMA_STORE_SUBDEVICE_MASK_OPCODE_VALUE, 0b1), mask_op(nv.NVC56F_DMA_SET_SUBDEVICE_MASK_OPCODE_VALUE, 0b10), *rel(0, 1),
            mask_op(nv.NVC56F_DMA_USE_SUBDEVICE_MASK_OPCODE_VALUE), *rel(1, 2),
            mask_op(nv.NVC56F_DMA_SET_SUBDEVICE_MASK_OPCODE_VALUE, 0xFFE), *rel(2, 3)])
  assert r.ch.run() and r.ch.error is None and (r.u64(0x10000), r.u64(0x10010), r.u64(0x10020)) == (0, 2, 0)

@pytest.mark.parametrize("word, msg", [(fld(nv.NVC56F_DMA_SEC_OP, nv.NVC56F_DMA_SEC_OP_RESERVED6), "RESERVED6"),
                                       (fld(nv.NVC56F_DMA_SEC_OP, 2) | fld(nv.NVC56F_DMA_TERT_OP, 1), "SEC_OP 2 with TERT_OP 1 is a reserved")])
def test_reserved_header_stops_the_channel(drv, capsys, word, msg):
  r = Rig(drv)
  r.submit([word])
  assert r.ch.run() is False and isinstance(r.ch.error, PacketError) and msg in str(r.ch.error) and f"header=0x{word:08X}" in str(r.ch.error)
  assert drv.fault is not None and "stopped at GPGet=0" in capsys.readouterr().err
  assert r.ch.run() is False                                                  # stays stopped

@pytest.mark.parametrize("words, msg", [
  ([hdr(1, nv.NVC6C0_SEND_PCAS_A, 1), 0], "subchannel 1, which has no object"),
  ([hdr(2, nv.NVC56F_SET_OBJECT, 1), 0xBEEF], "SET_OBJECT class 0xbeef"),
  ([*BIND, hdr(1, nv.NVC6C0_SET_REPORT_SEMAPHORE_D, 1), 0], "NVC6C0_SET_REPORT_SEMAPHORE_D of ADA_COMPUTE_A is not modelled"),
  ([*BIND, hdr(4, nv.NVC6B5_SET_SRC_DEPTH, 1), 0], "NVC6B5_SET_SRC_DEPTH of AMPERE_DMA_COPY_B is not modelled"),
  ([hdr(0, nv.NVC56F_ILLEGAL, 1), 0], "ILLEGAL"),
  ([*BIND, hdr(4, nv.NVC6B5_LAUNCH_DMA, 1), fld(nv.NVC6B5_LAUNCH_DMA_DATA_TRANSFER_TYPE, 2)], "block-linear source layout")])
def test_unmodelled_methods_are_named(drv, words, msg):
  r = Rig(drv)
  r.submit(words)
  assert r.ch.run() is False and isinstance(r.ch.error, PacketError) and msg in str(r.ch.error), r.ch.error

def test_gp_entries_control_nop_bad_put_and_empty_ring(drv, capsys):
  r = Rig(drv)
  r.entry(fld(nv.NVC56F_GP_ENTRY1_OPCODE, nv.NVC56F_GP_ENTRY1_OPCODE_NOP) << 32)              # length 0: a control entry
  assert r.ch.run() and r.ch.error is None and r.gpget() == 1
  r.entry(fld(nv.NVC56F_GP_ENTRY1_OPCODE, nv.NVC56F_GP_ENTRY1_OPCODE_ILLEGAL) << 32)
  assert r.ch.run() is False and "control entry opcode 1" in str(r.ch.error)
  empty = Rig(drv, entries=0)
  empty.submit([0])                                                           # GPPut=1 on a ring without entries
  assert empty.ch.run() is False and "GPPut=1 is outside the ring of 0 entries" in str(empty.ch.error)
  assert capsys.readouterr().err.count("stopped at") == 2

def test_a_guest_fault_is_reported_like_on_amd(drv, capsys):
  """A GP entry pointing at memory no UVM_MAP_EXTERNAL_ALLOCATION mapped: the channel stops with the KFD queues' stop line
  (mock/device.report_stop: where, what tinygrad sees, the error) and the driver keeps the MMU fault for on_device_hang."""
  r, bad = Rig(drv), 0xDEAD_0000
  r.entry(fld(nv.NVC56F_GP_ENTRY0_GET, bad >> 2) | fld(nv.NVC56F_GP_ENTRY1_LENGTH, 4) << 32)
  assert r.ch.run() is False and isinstance(r.ch.error, QueueFault)
  assert capsys.readouterr().err == (f"mockgpu: GPFIFO channel 0 (token 1) stopped at GPGet=0 (tinygrad sees: MMU fault: 0x{bad:X}, once its signal "
    f"wait times out: HCQDEV_WAIT_TIMEOUT_MS shortens that): QueueFault: GPFIFO channel 0 (token 1): pushbuffer segment addr=0x{bad:X} "
    "size=16 is not mapped to this GPU (MMU fault)\n")
  assert (drv.fault["address"], drv.fault["write"], drv.fault["error"]) == (bad, False, r.ch.error)

def test_a_model_bug_in_a_channel_prints_its_traceback(drv, capsys, monkeypatch):
  r = Rig(drv)
  monkeypatch.setattr(Channel, "_segment", lambda self, addr, words: 1 // 0)
  r.submit([0])
  assert r.ch.run() is False and isinstance(r.ch.error, ZeroDivisionError)
  err = capsys.readouterr().err
  assert err.startswith("mockgpu: GPFIFO channel 0 (token 1) stopped at GPGet=0 (tinygrad sees: SM 0 fault: esr=1 warp_esr=0x20, once")
  assert "ZeroDivisionError: integer division or modulo by zero\nTraceback (most recent call last):" in err

def test_device_thread_survives_a_broken_channel(capsys):
  """Errors stop only their channel; the thread keeps running the others and reports once."""
  d = NVDriver()
  bad, good = Rig(d, entries=0), Rig(d)
  good.ch.idx = 1
  bad.submit([0])
  d.channels += [bad.ch, good.ch]
  t = DeviceThread(d, name="mockgpu-nv-device")
  good.submit(sem(good.base + 0x10000, 42, nv.NVC56F_SEM_EXECUTE_OPERATION_RELEASE))
  for _ in range(2000):
    if good.u64(0x10000) == 42 and bad.ch.error is not None: break
    time.sleep(0.005)
  good.submit(sem(good.base + 0x10010, 43, nv.NVC56F_SEM_EXECUTE_OPERATION_RELEASE))
  for _ in range(2000):
    if good.u64(0x10010) == 43: break
    time.sleep(0.005)
  assert t.thread.is_alive() and bad.ch.error is not None and (good.u64(0x10000), good.u64(0x10010)) == (42, 43)
  assert capsys.readouterr().err.count("stopped at") == 1

def test_set_reference_and_semaphore_d(drv):
  r = Rig(drv)
  sa = r.base + 0x10000
  semd = lambda op, **f: [hdr(0, nv.NVC56F_SEMAPHOREA, 4), sa >> 32, sa & 0xFFFFFFFF, 0x99,
                          fld(nv.NVC56F_SEMAPHORED_OPERATION, op) | sum(fld(getattr(nv, f"NVC56F_SEMAPHORED_{k}"), v) for k, v in f.items())]
  r.submit([hdr(0, nv.NVC56F_SET_REFERENCE, 1), 0xABCD, *semd(nv.NVC56F_SEMAPHORED_OPERATION_RELEASE)])
  assert r.ch.run() and r.ch.error is None
  assert ctypes.c_uint32.from_address(r.ch.userd + nv.AmpereAControlGPFifo.Reference.offset).value == 0xABCD
  assert (r.u32(0x10000), r.u32(0x10004)) == (0x99, 0) and r.u64(0x10008) > 0      # 16-byte release: payload, 0, timestamp
  ctypes.c_uint64.from_address(sa + 8).value = 0
  r.submit(semd(nv.NVC56F_SEMAPHORED_OPERATION_RELEASE, RELEASE_SIZE=nv.NVC56F_SEMAPHORED_RELEASE_SIZE_4BYTE))
  assert r.ch.run() and r.u64(0x10008) == 0                                   # 4-byte release: no timestamp
  ctypes.c_uint32.from_address(sa).value = 0x98
  r.submit(semd(nv.NVC56F_SEMAPHORED_OPERATION_ACQ_GEQ))
  assert r.ch.run() is False                                                  # 0x98 - 0x99 < 0
  ctypes.c_uint32.from_address(sa).value = 0x99
  assert r.ch.run() and r.ch.error is None

def test_copy_engine_and_semaphores(drv):
  r = Rig(drv)
  src, dst = r.base + 0x20000, r.base + 0x30000
  ctypes.memmove(src, bytes(range(200)), 200)
  pitch = fld(nv.NVC6B5_LAUNCH_DMA_SRC_MEMORY_LAYOUT, nv.NVC6B5_LAUNCH_DMA_SRC_MEMORY_LAYOUT_PITCH) | \
          fld(nv.NVC6B5_LAUNCH_DMA_DST_MEMORY_LAYOUT, nv.NVC6B5_LAUNCH_DMA_DST_MEMORY_LAYOUT_PITCH)
  dma = lambda flags: [hdr(4, nv.NVC6B5_LAUNCH_DMA, 1), flags]
  sema = [hdr(4, nv.NVC6B5_SET_SEMAPHORE_A, 3), (r.base + 0x10000) >> 32, (r.base + 0x10000) & 0xFFFFFFFF, 42]
  r.submit([*BIND, hdr(4, nv.NVC6B5_OFFSET_IN_UPPER, 4), src >> 32, src & 0xFFFFFFFF, dst >> 32, dst & 0xFFFFFFFF,
            hdr(4, nv.NVC6B5_LINE_LENGTH_IN, 1), 200,
            *dma(fld(nv.NVC6B5_LAUNCH_DMA_DATA_TRANSFER_TYPE, nv.NVC6B5_LAUNCH_DMA_DATA_TRANSFER_TYPE_NON_PIPELINED) | pitch), *sema,
            *dma(fld(nv.NVC6B5_LAUNCH_DMA_SEMAPHORE_TYPE, nv.NVC6B5_LAUNCH_DMA_SEMAPHORE_TYPE_RELEASE_FOUR_WORD_SEMAPHORE))])
  assert r.ch.run() and ctypes.string_at(dst, 200) == bytes(range(200)) and r.u64(0x10000) == 42 and r.u64(0x10008) > 0
  # three lines of 8 bytes, source pitch 16, destination pitch 10; then a one-word release (4 bytes, no timestamp)
  ctypes.memset(dst, 0xEE, 64)
  ctypes.memmove(r.base + 0x10000, bytes(16), 16)
  r.submit([hdr(4, nv.NVC6B5_PITCH_IN, 2), 16, 10, hdr(4, nv.NVC6B5_LINE_LENGTH_IN, 2), 8, 3,
            *dma(fld(nv.NVC6B5_LAUNCH_DMA_DATA_TRANSFER_TYPE, nv.NVC6B5_LAUNCH_DMA_DATA_TRANSFER_TYPE_PIPELINED) | pitch |
                 fld(nv.NVC6B5_LAUNCH_DMA_MULTI_LINE_ENABLE, 1)), *sema,
            *dma(fld(nv.NVC6B5_LAUNCH_DMA_SEMAPHORE_TYPE, nv.NVC6B5_LAUNCH_DMA_SEMAPHORE_TYPE_RELEASE_ONE_WORD_SEMAPHORE))])
  assert r.ch.run() and r.ch.error is None
  want = bytearray(b"\xEE" * 30)
  for line in range(3): want[10 * line:10 * line + 8] = bytes(range(16 * line, 16 * line + 8))
  assert ctypes.string_at(dst, 30) == bytes(want) and r.u64(0x10000) == 42 and r.u64(0x10008) == 0

PTX = b""".version 7.5\n.target sm_70\n.address_size 64\n.visible .entry k (.param .u64 out, .param .s32 v)\n{ .reg .u64 %o, %a; .reg .u32 %t;
.reg .s32 %v, %w; ld.param.u64 %o, [out+0]; ld.param.s32 %v, [v+0]; mov.u32 %t, %ctaid.x; mov.u32 %w, %tid.y; mad.lo.s32 %w, %t, 10, %w;
add.s32 %w, %w, %v; mov.u32 %t, %ctaid.x; shl.b32 %t, %t, 1; mov.u32 %v, %tid.y; add.u32 %t, %t, %v; cvt.u64.u32 %a, %t;
mad.lo.u64 %a, %a, 4, %o; st.global.s32 [%a+0], %w; ret; }\0"""
def qmd_at(r, qmd, cbuf, prog, **extra):
  raw = 0
  def put(spec, v):
    nonlocal raw
    raw |= fld(QMD_FIELDS[spec] if isinstance(spec, str) else spec, v)
  for name, v in (("QMD_MAJOR_VERSION", 3), ("CTA_RASTER_WIDTH", 3), ("CTA_RASTER_HEIGHT", 1), ("CTA_RASTER_DEPTH", 1), ("CTA_THREAD_DIMENSION0", 1),
                  ("CTA_THREAD_DIMENSION1", 2), ("CTA_THREAD_DIMENSION2", 1), ("PROGRAM_ADDRESS_LOWER", prog & 0xFFFFFFFF),
                  ("PROGRAM_ADDRESS_UPPER", prog >> 32), *extra.items()): put(name, v)
  put(nv.NVC6C0_QMDV03_00_CONSTANT_BUFFER_ADDR_LOWER(0), cbuf & 0xFFFFFFFF); put(nv.NVC6C0_QMDV03_00_CONSTANT_BUFFER_ADDR_UPPER(0), cbuf >> 32)
  ctypes.memmove(qmd, raw.to_bytes(0x100, "little"), 0x100)

def test_qmd_launch_runs_ptx_and_writes_the_release(drv):
  r = Rig(drv)
  prog, cbuf, qmd, out = r.base + 0x40000, r.base + 0x50000, r.base + 0x60000, r.base + 0x70000
  ctypes.memmove(prog, PTX, len(PTX))
  words = [0] * 88
  words[80], words[81] = 1, 1                                                 # one buffer, one value (NVArgsState, mock mode)
  ctypes.memmove(cbuf, struct.pack("<88I", *words) + struct.pack("<Qq", out, 100), 0x160 + 16)
  sig = r.base + 0x10000
  qmd_at(r, qmd, cbuf, prog, RELEASE0_ENABLE=1, RELEASE0_ADDRESS_LOWER=sig & 0xFFFFFFFF, RELEASE0_ADDRESS_UPPER=sig >> 32, RELEASE0_PAYLOAD_LOWER=9)
  schedule = fld(nv.NVC6C0_SEND_SIGNALING_PCAS2_B_PCAS_ACTION, nv.NVC6C0_SEND_SIGNALING_PCAS2_B_PCAS_ACTION_PREFETCH_SCHEDULE)
  r.submit([*BIND, hdr(1, nv.NVC6C0_SEND_PCAS_A, 1), qmd >> 8, hdr(1, nv.NVC6C0_SEND_SIGNALING_PCAS2_B, 1), schedule])
  assert r.ch.run() and r.ch.error is None
  assert np.frombuffer(ctypes.string_at(out, 24), np.int32).tolist() == [100, 101, 110, 111, 120, 121] and r.u64(0x10000) == 9
  # a dependent-QMD chain that points back at itself would run forever on the GPU: the channel stops instead
  qmd_at(r, qmd, cbuf, prog, DEPENDENT_QMD0_ENABLE=1, DEPENDENT_QMD0_ACTION=nv.NVC6C0_QMDV03_00_DEPENDENT_QMD0_ACTION_QMD_SCHEDULE,
         DEPENDENT_QMD0_POINTER=qmd >> 8)
  r.submit([hdr(1, nv.NVC6C0_SEND_SIGNALING_PCAS2_B, 1), schedule])
  assert r.ch.run() is False and "loops back" in str(r.ch.error) and r.ch.launches == 2

def test_gpfifo_with_zero_entries_is_refused(drv, capsys):
  ctl = drv.open("/dev/nvidiactl")
  drv.ioctl(ctl, esc(nv.NV_ESC_RM_ALLOC, p:=nv.NVOS21_PARAMETERS(hClass=nv.NV01_ROOT_CLIENT)), p)
  root, base = p.hObjectNew, host_mmap(0, 0x10000)
  mem = drv._new(nv.NV1_MEMORY_USER, {"size": 0x10000, "va": base})
  g = nv.NV_CHANNELGPFIFO_ALLOCATION_PARAMETERS(gpFifoOffset=base, gpFifoEntries=0, hUserdMemory=(ctypes.c_uint32*8)(mem))
  drv.ioctl(ctl, esc(nv.NV_ESC_RM_ALLOC, p:=nv.NVOS21_PARAMETERS(hRoot=root, hObjectParent=root, hClass=nv.AMPERE_CHANNEL_GPFIFO_A,
                                                                  pAllocParms=ctypes.addressof(g))), p)
  assert p.status == nv.NV_ERR_INVALID_ARGUMENT and "gpFifoEntries=0" in capsys.readouterr().err and drv.channels == []

def test_uvm_ranges_are_checked_and_never_replace_memory(drv, capsys):
  """UVM_CREATE_EXTERNAL_RANGE backs a range with fresh memory only where the process has none (it used to MAP_FIXED over
  anything, e.g. the interpreter's heap); ranges must be page aligned, non-empty and end at or below 2^64."""
  uvm = drv.open("/dev/nvidia-uvm")
  def uvm_io(cmd, p): drv.ioctl(uvm, cmd, p); return p.rmStatus
  live = host_mmap(0, 0x2000)
  ctypes.memmove(live, b"keep", 4)
  assert uvm_io(nv.UVM_CREATE_EXTERNAL_RANGE, nv.UVM_CREATE_EXTERNAL_RANGE_PARAMS(base=live, length=0x2000)) == nv.NV_ERR_UVM_ADDRESS_IN_USE
  assert ctypes.string_at(live, 4) == b"keep" and "overlaps memory of the process" in capsys.readouterr().err
  for base, length in ((live + 1, 0x1000), (live, 0), (2**64 - 0x1000, 0x2000)):
    assert uvm_io(nv.UVM_CREATE_EXTERNAL_RANGE, nv.UVM_CREATE_EXTERNAL_RANGE_PARAMS(base=base, length=length)) == nv.NV_ERR_INVALID_ADDRESS
    assert uvm_io(nv.UVM_MAP_EXTERNAL_ALLOCATION, nv.UVM_MAP_EXTERNAL_ALLOCATION_PARAMS(base=base, length=length)) == nv.NV_ERR_INVALID_ADDRESS
  # mapping to the GPU needs an external range (or host memory the driver pinned); the live page is neither
  assert uvm_io(nv.UVM_MAP_EXTERNAL_ALLOCATION, nv.UVM_MAP_EXTERNAL_ALLOCATION_PARAMS(base=live, length=0x1000)) == nv.NV_ERR_INVALID_ADDRESS
  assert "UVM_CREATE_EXTERNAL_RANGE first" in capsys.readouterr().err and len(drv.memory) == 0
  hole = host_mmap(0, 0x4000)
  libc.munmap(hole, 0x4000)
  assert uvm_io(nv.UVM_CREATE_EXTERNAL_RANGE, nv.UVM_CREATE_EXTERNAL_RANGE_PARAMS(base=hole, length=0x4000)) == 0 and drv.ours[hole] == 0x4000
  assert uvm_io(nv.UVM_MAP_EXTERNAL_ALLOCATION, nv.UVM_MAP_EXTERNAL_ALLOCATION_PARAMS(base=hole, length=0x4000)) == 0
  assert uvm_io(nv.UVM_MAP_EXTERNAL_ALLOCATION, nv.UVM_MAP_EXTERNAL_ALLOCATION_PARAMS(base=hole + 0x1000, length=0x1000)) == 0   # mapped already
  assert drv.memory.find(hole, 0x4000) is not None and len(drv.memory) == 1
  assert uvm_io(nv.UVM_FREE, nv.UVM_FREE_PARAMS(base=hole, length=0x4000)) == 0 and len(drv.memory) == 0 and hole not in drv.ours

def test_os_descriptor_memory_must_be_memory_of_the_process(drv, capsys):
  """The driver pins an OS descriptor's pages, so it refuses memory the process does not have (the GPU would access it)."""
  gpu, live = drv.open("/dev/nvidia0"), host_mmap(0, 0x2000)
  libc.munmap(live + 0x1000, 0x1000)   # a hole after the page: a neighbouring mapping would make "past the page" readable
  def alloc_os(va, size, handle):
    w = nv.nv_ioctl_nvos02_parameters_with_fd(params=nv.NVOS02_PARAMETERS(hClass=nv.NV01_MEMORY_SYSTEM_OS_DESCRIPTOR, hObjectNew=handle, pMemory=va,
                                                                            limit=size - 1), fd=-1)
    drv.ioctl(gpu, esc(nv.NV_ESC_RM_ALLOC_MEMORY, w), w)
    return w.params.status
  assert alloc_os(live, 0x2000, 0x10) == nv.NV_ERR_INVALID_ADDRESS and 0x10 not in drv.objects   # runs past the page
  assert "pMemory=" in capsys.readouterr().err and alloc_os(0, 0x1000, 0x11) == nv.NV_ERR_INVALID_ADDRESS
  assert alloc_os(2**64 - 0x1000, 0x2000, 0x13) == nv.NV_ERR_INVALID_ADDRESS and alloc_os(live, 2**64, 0x14) == nv.NV_ERR_INVALID_ADDRESS   # wraps
  assert alloc_os(live, 0x1000, 0x12) == 0 and drv.objects[0x12][1] == {"size": 0x1000, "va": live} and drv.backed[live] == 0x1000

def test_rm_control_params_size_and_gr_info_bounds(drv, capsys):
  ctl = drv.open("/dev/nvidiactl")
  drv.ioctl(ctl, esc(nv.NV_ESC_RM_ALLOC, p:=nv.NVOS21_PARAMETERS(hClass=nv.NV01_ROOT_CLIENT)), p)
  def control(cmd, params, size=None):
    drv.ioctl(ctl, esc(nv.NV_ESC_RM_CONTROL, c:=nv.NVOS54_PARAMETERS(hClient=p.hObjectNew, hObject=p.hObjectNew, cmd=cmd,
              params=ctypes.addressof(params), paramsSize=ctypes.sizeof(params) if size is None else size)), c)
    return c.status
  v = nv.NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS()
  assert control(nv.NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2, v, 16) == nv.NV_ERR_INVALID_PARAM_STRUCT and bytes(v) == bytes(ctypes.sizeof(v))
  assert "paramsSize=16 != sizeof(" in capsys.readouterr().err
  infos = (nv.NV2080_CTRL_GR_INFO * 2)()
  for n in (0, nv.NV2080_CTRL_GR_INFO_MAX_SIZE + 1, 2**32 - 1):   # the count bounds the copy: never a 32 GiB allocation
    assert control(nv.NV2080_CTRL_CMD_GR_GET_INFO, nv.NV2080_CTRL_GR_GET_INFO_PARAMS(grInfoListSize=n, grInfoList=ctypes.addressof(infos))) == \
      nv.NV_ERR_INVALID_ARGUMENT
  assert f"grInfoListSize={2**32 - 1}" in capsys.readouterr().err

def test_cpu_mmap_honours_map_fixed(drv):
  """mmap(2): without MAP_FIXED the address is a hint; the mock used to map over it anyway."""
  ctl, live = drv.open("/dev/nvidiactl"), host_mmap(0, 0x1000)
  ctypes.memmove(live, b"keep", 4)
  mem = drv._new(nv.NV1_MEMORY_SYSTEM, {"size": 0x1000, "va": None})
  w = nv.nv_ioctl_nvos33_parameters_with_fd(fd=ctl.fd, params=nv.NVOS33_PARAMETERS(hMemory=mem, length=0x1000))
  drv.ioctl(ctl, esc(nv.NV_ESC_RM_MAP_MEMORY, w), w)
  addr = drv.mmap(ctl, live, 0x1000, 3, mmap.MAP_SHARED, 0)
  assert addr != live and ctypes.string_at(live, 4) == b"keep" and drv.backed[addr] == 0x1000
