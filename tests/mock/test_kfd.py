"""The KFD driver model: virtual files, the ioctl table with kernel-like errno, mmaps, doorbells and events."""
import ctypes, errno, mmap
import pytest
from tinygrad.runtime.autogen import kfd
from tinygrad.runtime.autogen.am import am
from mockgpu.mock.errors import UnknownArchError
from mockgpu.mock.kfd import KFD, MMAP_TYPE_DOORBELL
from mockgpu.mock.profiles import PROFILES, profile_for
from mockgpu.mock.sysfs import TOPOLOGY, Device
from kfd_driver import USERPTR, request

def test_topology_has_a_cpu_node_and_six_gpus():
  k = KFD(profile_for("gfx1100"), autorun=False)
  nodes = k.lookup(TOPOLOGY).entries
  assert nodes == ("0", "1", "2", "3", "4", "5", "6")
  assert k.lookup(f"{TOPOLOGY}/0/gpu_id").strip() == "0"
  ids = [int(k.lookup(f"{TOPOLOGY}/{n}/gpu_id")) for n in nodes[1:]]
  assert len(set(ids)) == 6 and 0 not in ids

@pytest.mark.parametrize("arch,target,gc", [("gfx1100", 110000, (11, 0, 0)), ("gfx1201", 120001, (12, 0, 1)), ("gfx950", 90500, (9, 5, 0)),
                                            ("gfx942", 90402, (9, 4, 3))])
def test_properties_and_ip_discovery(arch, target, gc):
  k = KFD(profile_for(arch), autorun=False)
  props = {(p:=l.split())[0]: int(p[1]) for l in k.lookup(f"{TOPOLOGY}/1/properties").splitlines()}   # tinygrad's parser
  assert props["gfx_target_version"] == target and props.get("num_xcc", 1) == 1
  for key in ("array_count", "simd_arrays_per_engine", "simd_count", "simd_per_cu", "max_waves_per_simd", "lds_size_in_kb", "max_slots_scratch_cu"):
    assert props[key] > 0
  die = f"/sys/class/drm/renderD{props['drm_render_minor']}/device/ip_discovery/die/0"
  assert {str(am.GC_HWID), str(am.SDMA0_HWID), str(am.NBIF_HWID)} <= set(k.lookup(die).entries)
  assert tuple(int(k.lookup(f"{die}/{am.GC_HWID}/0/{p}")) for p in ("major", "minor", "revision")) == gc
  assert isinstance(k.lookup(f"/dev/dri/renderD{props['drm_render_minor']}"), Device)

def test_unknown_arch_names_the_known_ones():
  with pytest.raises(UnknownArchError, match="gfx1030.*gfx1100"): profile_for("gfx1030")
  assert set(PROFILES) == {"gfx1100", "gfx1201", "gfx950", "gfx942"}

def test_paths_inside_the_model_are_enoent_and_outside_are_real():
  k = KFD(profile_for("gfx1100"), autorun=False)
  with pytest.raises(FileNotFoundError): k.lookup(f"{TOPOLOGY}/9/gpu_id")
  with pytest.raises(FileNotFoundError): k.lookup("/dev/dri/renderD128/x")
  assert k.lookup("/proc/self/status") is None and k.lookup("/dev/nvidiactl") is None

def test_mock_fileio_interface_serves_model_and_real_paths(tmp_path):
  from mockgpu.tinygrad.compat.fileio import MockFileIOInterface
  assert MockFileIOInterface(TOPOLOGY).listdir()[0] == "0"
  assert int(MockFileIOInterface(f"{TOPOLOGY}/1/gpu_id").read()) != 0
  with pytest.raises(FileNotFoundError): MockFileIOInterface(f"{TOPOLOGY}/42/gpu_id")
  with pytest.raises(FileNotFoundError): MockFileIOInterface("/dev/nvidiactl-does-not-exist")
  (tmp_path / "f").write_text("real\n")
  assert MockFileIOInterface(str(tmp_path / "f")).read() == "real\n"
  with pytest.raises(PermissionError): MockFileIOInterface(f"{TOPOLOGY}/1/gpu_id").write("1")
  assert MockFileIOInterface("/dev/kfd", 2).fd >= 0

def test_unknown_ioctl_is_enotty_naming_it(drv):
  s = kfd.struct_kfd_ioctl_destroy_queue_args(queue_id=0)
  with pytest.raises(OSError, match="DESTROY_QUEUE") as e: drv.kfd.ioctl(drv.dev, request(kfd.AMDKFD_IOC_DESTROY_QUEUE, s), s)
  assert e.value.errno == errno.ENOTTY
  with pytest.raises(OSError) as e: drv.kfd.ioctl(drv.dev, 0xC0DE4201, s)
  assert e.value.errno == errno.ENOTTY

def test_wrong_argument_size_is_einval(drv):
  s = kfd.struct_kfd_ioctl_get_version_args()
  with pytest.raises(OSError, match="GET_VERSION") as e: drv.kfd.ioctl(drv.dev, request(kfd.AMDKFD_IOC_GET_VERSION, s) + (1 << 16), s)
  assert e.value.errno == errno.EINVAL

def test_version_and_vm(drv):
  v = drv.io(kfd.AMDKFD_IOC_GET_VERSION)
  assert (v.major_version, v.minor_version) >= (1, 14)
  with pytest.raises(OSError) as e: drv.io(kfd.AMDKFD_IOC_ACQUIRE_VM, drm_fd=12345, gpu_id=drv.gpu_ids[0])
  assert e.value.errno == errno.EBADF
  with pytest.raises(OSError, match="gpu_id") as e: drv.io(kfd.AMDKFD_IOC_ACQUIRE_VM, drm_fd=0, gpu_id=7)
  assert e.value.errno == errno.EINVAL

@pytest.mark.parametrize("kw,code", [(dict(gpu_id=1), errno.EINVAL), (dict(size=0), errno.EINVAL), (dict(va_addr=0), errno.EINVAL),
                                     (dict(flags=USERPTR | kfd.KFD_IOC_ALLOC_MEM_FLAGS_VRAM), errno.EINVAL),
                                     (dict(flags=kfd.KFD_IOC_ALLOC_MEM_FLAGS_VRAM, size=1 << 45), errno.ENOMEM),
                                     (dict(mmap_offset=0x1000), errno.EINVAL),
                                     (dict(va_addr=2**64 - 0x1000, mmap_offset=2**64 - 0x1000, size=0x2000), errno.EINVAL),   # wraps past 2^64
                                     (dict(va_addr=2**64 - 0x1000, size=0x2000, flags=kfd.KFD_IOC_ALLOC_MEM_FLAGS_GTT), errno.EINVAL)])
def test_alloc_errors(drv, kw, code):
  args = dict(va_addr=0x7F0000000000, size=0x1000, gpu_id=drv.gpu_ids[0], flags=USERPTR, mmap_offset=0x7F0000000000) | kw
  with pytest.raises(OSError, match="ALLOC_MEMORY_OF_GPU") as e: drv.io(kfd.AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, **args)
  assert e.value.errno == code

def test_vram_budget_is_per_gpu_and_freed_bytes_return(drv):
  # ENOMEM once a GPU's live VRAM objects would exceed its size; another GPU's budget is its own; FREE gives the bytes back
  vram, budget = kfd.KFD_IOC_ALLOC_MEM_FLAGS_VRAM, drv.kfd.profile.vram_bytes
  big = lambda va, gpu: drv.io(kfd.AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, va_addr=va, size=budget * 3 // 4, gpu_id=drv.gpu_ids[gpu], flags=vram)
  first = big(0x100000000000, 0)
  with pytest.raises(OSError, match="ALLOC_MEMORY_OF_GPU") as e: big(0x200000000000, 0)
  assert e.value.errno == errno.ENOMEM
  other = big(0x300000000000, 1)
  drv.io(kfd.AMDKFD_IOC_FREE_MEMORY_OF_GPU, handle=first.handle)
  second = big(0x200000000000, 0)
  for h in (second.handle, other.handle): drv.io(kfd.AMDKFD_IOC_FREE_MEMORY_OF_GPU, handle=h)

def test_handles_are_unique_across_gpus_and_mapping_is_per_gpu(drv):
  a, ha = drv.userptr(0x1000, (0,))
  b, hb = drv.userptr(0x1000, (1,))
  assert ha != hb
  g0, g1 = (drv.kfd.gpus[i].memory for i in drv.gpu_ids)
  assert g0.find(a) and not g1.find(a)
  assert drv.map(ha, 1).n_success == 1 and g1.find(a, 0x1000)
  ids = (ctypes.c_uint32 * 1)(drv.gpu_ids[1])
  drv.io(kfd.AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, handle=ha, device_ids_array_ptr=ctypes.addressof(ids), n_devices=1)
  assert not g1.find(a)
  with pytest.raises(OSError, match="not mapped") as e:
    drv.io(kfd.AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, handle=ha, device_ids_array_ptr=ctypes.addressof(ids), n_devices=1)
  assert e.value.errno == errno.EINVAL
  drv.io(kfd.AMDKFD_IOC_FREE_MEMORY_OF_GPU, handle=ha)
  assert not g0.find(a)
  with pytest.raises(OSError) as e: drv.io(kfd.AMDKFD_IOC_FREE_MEMORY_OF_GPU, handle=ha)
  assert e.value.errno == errno.EINVAL

def test_render_mmap_maps_gpu_va_equal_cpu_va(drv):
  from tinygrad.runtime.autogen import libc
  va = libc.mmap(0, 0x3000, 0, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x400, -1, 0)
  flags = kfd.KFD_IOC_ALLOC_MEM_FLAGS_VRAM | kfd.KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE
  m = drv.io(kfd.AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, va_addr=va, size=0x3000, gpu_id=drv.gpu_ids[0], flags=flags)
  render = Device("render", drv.gpu_ids[0])
  with pytest.raises(OSError) as e: drv.kfd.mmap(render, va, 0x3000, 3, 0x11, m.mmap_offset + 0x1000)
  assert e.value.errno == errno.EINVAL
  with pytest.raises(OSError, match="MAP_FIXED"): drv.kfd.mmap(render, va + 0x1000, 0x3000, 3, 0x11, m.mmap_offset)
  assert drv.kfd.mmap(render, va, 0x3000, 3, 0x11, m.mmap_offset) == va
  ctypes.c_uint32.from_address(va + 0x2FFC).value = 0xDEADBEEF
  assert drv.u32(va + 0x2FFC) == 0xDEADBEEF
  with pytest.raises(OSError): drv.kfd.mmap(Device("render", drv.gpu_ids[1]), va, 0x3000, 3, 0x11, m.mmap_offset)

def test_events_slots_and_wait(drv):
  sig, mem, hw = drv.events()
  sig2 = drv.io(kfd.AMDKFD_IOC_CREATE_EVENT, event_type=kfd.KFD_IOC_EVENT_SIGNAL, auto_reset=1)
  assert sig.event_slot_index != sig2.event_slot_index and max(sig.event_slot_index, sig2.event_slot_index) < kfd.KFD_SIGNAL_EVENT_LIMIT
  assert len({sig.event_id, mem.event_id, hw.event_id, sig2.event_id}) == 4
  r, _ = drv.wait([sig, mem, hw], timeout=1)
  assert r.wait_result == kfd.KFD_IOC_WAIT_RESULT_TIMEOUT
  drv.kfd.interrupt(drv.kfd.gpu(drv.gpu_ids[0], "test"), sig.event_id)
  r, arr = drv.wait([sig, mem, hw])
  assert r.wait_result == kfd.KFD_IOC_WAIT_RESULT_COMPLETE and arr[1].memory_exception_data.gpu_id == 0
  assert drv.wait([sig], timeout=0)[0].wait_result == kfd.KFD_IOC_WAIT_RESULT_TIMEOUT   # auto reset
  with pytest.raises(OSError) as e: drv.io(kfd.AMDKFD_IOC_CREATE_EVENT, event_type=42)
  assert e.value.errno == errno.EINVAL
  with pytest.raises(OSError, match="event_id=999") as e: drv.wait([kfd.struct_kfd_ioctl_create_event_args(event_id=999)])

def test_fault_address_env_reports_an_mmu_fault(drv, monkeypatch):
  sig, mem, hw = drv.events()
  drv.kfd.gpu(drv.gpu_ids[0], "test")
  monkeypatch.setenv("MOCKGPU_EMU_FAULTADDR", "0xdead000")
  _, arr = drv.wait([sig, mem, hw])
  assert arr[1].memory_exception_data.gpu_id == drv.gpu_ids[0] and arr[1].memory_exception_data.va == 0xDEAD000
  assert arr[1].memory_exception_data.failure.NotPresent == 1 and arr[2].hw_exception_data.gpu_id == 0

def test_injected_fault_belongs_to_the_wait_during_which_it_is_set(drv, monkeypatch):
  sig, mem, hw = drv.events()
  drv.kfd.gpu(drv.gpu_ids[0], "test")
  arr = (kfd.struct_kfd_event_data * 3)(*[kfd.struct_kfd_event_data(event_id=e.event_id) for e in (sig, mem, hw)])   # one array, reused as tinygrad does
  def wait(): return drv.io(kfd.AMDKFD_IOC_WAIT_EVENTS, events_ptr=ctypes.addressof(arr), num_events=3, wait_for_all=0, timeout=0)
  monkeypatch.setenv("MOCKGPU_EMU_FAULTADDR", "0xDEADBEE1")
  assert wait().wait_result == kfd.KFD_IOC_WAIT_RESULT_COMPLETE and arr[1].memory_exception_data.va == 0xDEADBEE1
  monkeypatch.delenv("MOCKGPU_EMU_FAULTADDR")
  assert wait().wait_result == kfd.KFD_IOC_WAIT_RESULT_TIMEOUT          # nothing fired: the memory event was never signalled
  assert arr[1].memory_exception_data.gpu_id == 0 and arr[1].memory_exception_data.va == 0   # and the injected data is taken back
  drv.kfd.interrupt(drv.kfd.gpu(drv.gpu_ids[0], "test"), sig.event_id)
  assert wait().wait_result == kfd.KFD_IOC_WAIT_RESULT_COMPLETE and arr[1].memory_exception_data.gpu_id == 0

def test_bad_injected_fault_address_is_einval(drv, monkeypatch):
  sig, mem, hw = drv.events()
  monkeypatch.setenv("MOCKGPU_EMU_FAULTADDR", "deadbeef?")
  with pytest.raises(OSError, match="MOCKGPU_EMU_FAULTADDR='deadbeef\\?' is not an integer") as e: drv.wait([sig, mem, hw])
  assert e.value.errno == errno.EINVAL

def test_create_queue_checks_and_doorbells(drv):
  ring, _ = drv.userptr(0x1000)
  base = dict(ring_base_address=ring, ring_size=0x1000, gpu_id=drv.gpu_ids[0], queue_percentage=100, queue_priority=7,
              write_pointer_address=ring, read_pointer_address=ring + 8)
  for bad, msg in ((dict(queue_type=7), "queue_type=7"), (dict(ring_size=0x1800), "power of two"),
                   (dict(ring_base_address=0x1000), "not mapped"), (dict(queue_priority=99), "priority")):
    with pytest.raises(OSError, match=msg) as e: drv.io(kfd.AMDKFD_IOC_CREATE_QUEUE, **(base | bad))
    assert e.value.errno == errno.EINVAL
  q1, q2 = drv.queue(0), drv.queue(0, kfd.KFD_IOC_QUEUE_TYPE_SDMA)
  assert q1.doorbell is not q2.doorbell and abs(ctypes.addressof(q1.doorbell) - ctypes.addressof(q2.doorbell)) < 0x2000
  with pytest.raises(OSError): drv.kfd.mmap(drv.dev, 0, 0x2000, 3, 1, MMAP_TYPE_DOORBELL | 0x77 << 46)

def test_drm_info_reports_active_wgps(drv):
  from tinygrad.runtime.autogen import amdgpu_drm
  info = amdgpu_drm.struct_drm_amdgpu_info_device()
  drv.io(amdgpu_drm.DRM_IOCTL_AMDGPU_INFO, dev=Device("render", drv.gpu_ids[0]), query=amdgpu_drm.AMDGPU_INFO_DEV_INFO,
         return_pointer=ctypes.addressof(info), return_size=ctypes.sizeof(info))
  assert info.num_shader_engines == 6 and (info.cu_bitmap[0][0] & 3) == 3

def test_a_forked_child_cannot_use_the_parents_kfd(drv):
  import os
  r, w = os.pipe()
  if (pid:=os.fork()) == 0:
    try:
      drv.io(kfd.AMDKFD_IOC_GET_VERSION)
      os.write(w, b"no error")
    except OSError as e: os.write(w, f"{e.errno} {e}".encode())
    os._exit(0)
  os.waitpid(pid, 0)
  msg = os.read(r, 1000).decode()
  assert msg.startswith(f"{errno.EBADF} ") and "forked child" in msg
  assert drv.io(kfd.AMDKFD_IOC_GET_VERSION).major_version == 1
