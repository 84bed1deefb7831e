"""Bad pointers never crash the host (mock/uaccess.py): each case that used to kill the process with SIGSEGV runs in a
subprocess and must end with the kernel's answer (EFAULT) or a stopped queue naming the access."""
import ctypes, errno, mmap, os, subprocess, sys, textwrap
import pytest
import tinygrad.runtime.support.hcq  # noqa: F401  (tinygrad's import order: hcq before the mock's file layer)
from tinygrad.runtime.autogen import kfd, nv_570 as nv
from mockgpu.mock import uaccess

libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype, libc.mmap.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]

def anon(size, prot): return libc.mmap(None, size, prot, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)

@pytest.fixture
def pages():
  rw, ro, none = anon(0x3000, 3), anon(0x1000, 1), anon(0x1000, 0)
  libc.munmap(rw + 0x2000, 0x1000)   # rw is followed by a hole
  hole = anon(0x1000, 0)
  libc.munmap(hole, 0x1000)
  yield rw, ro, none, hole
  for a, n in ((rw, 0x2000), (ro, 0x1000), (none, 0x1000)): libc.munmap(a, n)

def test_copies_and_probes(pages):
  rw, ro, none, hole = pages
  uaccess.copy_to_user(rw + 0xFFE, b"abcd", "T: f")   # across a page boundary
  assert ctypes.string_at(rw + 0xFFE, 4) == b"abcd" and uaccess.copy_from_user(rw + 0xFFE, 4, "T: f") == b"abcd"
  assert uaccess.struct_in(ctypes.c_uint16 * 2, rw + 0xFFE, "T: f")[1] == int.from_bytes(b"cd", "little")
  assert uaccess.move(rw + 0x100, rw + 0xFFE, 4) == 4 and ctypes.string_at(rw + 0x100, 4) == b"abcd"
  assert [uaccess.readable(a, 8) for a in (rw, ro, none, hole, 0, rw + 0x1FFC)] == [True, True, False, False, False, False]
  assert [uaccess.writable(a, 8) for a in (rw, ro, none, hole)] == [True, False, False, False]
  assert uaccess.move(hole, rw, 4) == 0 and uaccess.move(rw, none, 4) == 0
  for addr, call in ((none, lambda a: uaccess.copy_from_user(a, 4, "T: field")), (ro, lambda a: uaccess.copy_to_user(a, b"x", "T: field")),
                     ((1 << 64) - 2, lambda a: uaccess.copy_from_user(a, 4, "T: field")), (-8, lambda a: uaccess.copy_from_user(a, 4, "T: field"))):
    with pytest.raises(OSError) as e: call(addr)
    assert e.value.errno == errno.EFAULT and "T: field=" in str(e.value)

def test_writable_file_pages_past_the_end(tmp_path):
  # maps grants rw on all of a file mapping, but its pages past the file's end fault (SIGBUS): only those make it not writable
  (f := tmp_path / "one-page").write_bytes(b"x" * 0x1000)
  fd = os.open(f, os.O_RDWR)
  try:
    m = libc.mmap(None, 0x2000, 3, mmap.MAP_SHARED, fd, 0)
    assert [uaccess.writable(m, 0x1000), uaccess.writable(m, 0x2000), uaccess.writable(m + 0x1000, 8)] == [True, False, False]
    assert [uaccess.readable(m, 0x1000), uaccess.readable(m, 0x2000)] == [True, False]
    libc.munmap(m, 0x2000)
  finally: os.close(fd)
  a = anon(0x2000, 3)   # two anonymous mappings back to back (different permissions keep them apart), then one read-only
  assert libc.mprotect(a + 0x1000, 0x1000, 7) == 0 and uaccess.writable(a, 0x2000) and uaccess.writable(a, 0)
  assert libc.mprotect(a + 0x1000, 0x1000, 1) == 0 and not uaccess.writable(a, 0x2000) and uaccess.writable(a, 0x1000)
  libc.munmap(a, 0x2000)

def test_large_ranges_are_checked_on_the_maps():
  # more than PROBE_PAGES pages: /proc/self/maps answers; a PROT_NONE or unmapped page anywhere in the range fails it
  n = (uaccess.PROBE_PAGES + 8) * 0x1000
  a = anon(n, 3)
  assert uaccess.readable(a, n) and uaccess.writable(a, n) and uaccess.readable(a + 5, n - 10)
  assert libc.mprotect(a + n // 2, 0x1000, 1) == 0 and uaccess.readable(a, n) and not uaccess.writable(a, n)
  assert libc.mprotect(a + n // 2, 0x1000, 0) == 0 and not uaccess.readable(a, n)
  libc.munmap(a + n // 2, 0x1000)
  assert not uaccess.readable(a, n) and not uaccess.writable(a, n) and uaccess.readable(a + n // 2 + 0x1000, n // 2 - 0x1000)
  libc.munmap(a, n)

def _resident(addr, n) -> int:
  vec = (ctypes.c_ubyte * (n // 0x1000))()
  libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
  assert libc.mincore(addr, n, vec) == 0
  return sum(v & 1 for v in vec)

def test_pin_faults_the_pages_in():
  # a driver pinning user memory (USERPTR, RM OS descriptors) populates it: tinygrad's first copy into a staging buffer then
  # takes no page faults; a range that is not memory is refused
  n = 64 * 0x1000
  a = libc.mmap(None, n, 3, mmap.MAP_SHARED | mmap.MAP_ANONYMOUS, -1, 0)
  assert _resident(a, n) == 0 and uaccess.pin(a, n, True) and _resident(a, n) == 64
  libc.munmap(a + n // 2, 0x1000)
  assert not uaccess.pin(a, n, False) and not uaccess.pin(a, 0, True)
  libc.munmap(a, n)

def _segv_handler() -> int:
  """The address of this process's SIGSEGV handler (sigaction's first member; pytest's faulthandler has installed one)."""
  sa = ctypes.create_string_buffer(256)
  assert libc.sigaction(11, None, sa) == 0
  return int.from_bytes(sa.raw[:8], "little")

def test_bulk_moves_run_in_c_survive_faults_and_count_like_the_syscalls():
  # 192 KiB (over FAST_MIN): mock/copy.c's memcpy; an unmapped source page or a read-only destination page stops it, and the
  # syscalls then count the bytes before that page exactly; the crash handler in place before (faulthandler) is again after
  assert uaccess._copier() is not None, "the C copy did not build (a C compiler is part of the set-up)"
  n, before = 0x30000, _segv_handler()
  src, dst = anon(n, 3), anon(n, 3)
  ctypes.memmove(src, bytes(range(256)) * (n // 256), n)
  try:
    assert uaccess.move(dst, src, n) == n and ctypes.string_at(dst, n) == ctypes.string_at(src, n)
    ctypes.memset(dst, 0, n)
    assert libc.mprotect(dst + 0x10000, 0x1000, 1) == 0   # read-only from 64 KiB on
    assert uaccess.move(dst, src, n) == 0x10000 and ctypes.string_at(dst, 0x10000) == ctypes.string_at(src, 0x10000)
    assert libc.mprotect(dst + 0x10000, 0x1000, 3) == 0
    libc.munmap(src + 0x20000, 0x1000)   # a hole at 128 KiB
    assert uaccess.move(dst, src, n) == 0x20000 and ctypes.string_at(dst, 0x20000) == ctypes.string_at(src, 0x20000)
    assert _segv_handler() == before != 0
  finally:
    libc.munmap(src, n); libc.munmap(dst, n)   # the hole is no error

def test_ioctl_arg_struct_address_or_error(pages):
  rw, _, _, hole = pages
  s = kfd.struct_kfd_ioctl_get_version_args(major_version=1)
  assert uaccess.ioctl_arg(kfd.struct_kfd_ioctl_get_version_args, s, "T: argument") == (s, None)
  big = (ctypes.c_uint32 * 4)(7, 8)   # a larger ctypes object: a view of it, as fcntl.ioctl passes a mutable buffer
  v, user = uaccess.ioctl_arg(kfd.struct_kfd_ioctl_get_version_args, big, "T: argument")
  assert (v.major_version, v.minor_version, user) == (7, 8, None)
  v.minor_version = 9
  assert big[1] == 9
  ctypes.memmove(rw, bytes((ctypes.c_uint32 * 2)(3, 4)), 8)   # an address: a private copy, copied back by the caller
  v, user = uaccess.ioctl_arg(kfd.struct_kfd_ioctl_get_version_args, rw, "T: argument")
  v.major_version = 5
  assert (ctypes.c_uint32.from_address(rw).value, v.minor_version, user) == (3, 4, rw)
  assert bytes(uaccess.ioctl_arg(kfd.struct_kfd_ioctl_get_version_args, rw, "T: argument", copy_in=False)[0]) == bytes(8)
  with pytest.raises(OSError) as e: uaccess.ioctl_arg(kfd.struct_kfd_ioctl_get_version_args, hole, "T: argument")
  assert e.value.errno == errno.EFAULT and "T: argument=" in str(e.value)
  with pytest.raises(OSError) as e: uaccess.ioctl_arg(kfd.struct_kfd_ioctl_get_version_args, ctypes.c_uint32(), "T: argument")
  assert e.value.errno == errno.EINVAL and "c_uint of 4 bytes" in str(e.value)
  with pytest.raises(TypeError, match="T: argument must be a struct_kfd_ioctl_get_version_args"):
    uaccess.ioctl_arg(kfd.struct_kfd_ioctl_get_version_args, "x", "T: argument")

PRELUDE = """
import ctypes, errno, mmap, sys
from tinygrad.runtime.autogen import kfd, amdgpu_drm
from tinygrad.runtime.autogen.am import pm4_nv, sdma_6_0_0 as sd
from kfd_driver import Driver, USERPTR, request
from mockgpu.mock.sysfs import Device
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype, libc.mmap.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
def anon(size, prot): return libc.mmap(None, size, prot, mmap.MAP_SHARED | mmap.MAP_ANONYMOUS, -1, 0)
def hole():
  a = anon(0x4000, 0); libc.munmap(a, 0x4000); return a
def efault(fn):
  try: fn()
  except OSError as e: print("errno", errno.errorcode[e.errno], e.strerror)
  else: print("no error")
d = Driver()
"""

def run_case(body:str, prelude:str="") -> str:
  """Run PRELUDE + prelude + body in a fresh interpreter; assert it was not killed by a signal; return its stdout."""
  p = subprocess.run([sys.executable, "-c", PRELUDE + prelude + textwrap.dedent(body)], capture_output=True, text=True, timeout=300,
                     cwd=os.path.dirname(__file__))
  assert p.returncode == 0, f"rc={p.returncode} (-11 is SIGSEGV)\n{p.stdout}\n{p.stderr[-3000:]}"
  return p.stdout

@pytest.mark.parametrize("arg", ["0", "hole()"])
def test_ioctl_argument_pointer_zero_or_unmapped_is_efault(arg):
  out = run_case(f"""
    efault(lambda: d.kfd.ioctl(d.dev, request(kfd.AMDKFD_IOC_GET_VERSION, kfd.struct_kfd_ioctl_get_version_args), {arg}))
    efault(lambda: d.kfd.ioctl(d.dev, request(kfd.AMDKFD_IOC_CREATE_EVENT, kfd.struct_kfd_ioctl_create_event_args), {arg}))
    buf = (ctypes.c_uint32 * 2)(0xFFFFFFFF, 0xFFFFFFFF)   # a valid address: the struct is copied out there
    d.kfd.ioctl(d.dev, request(kfd.AMDKFD_IOC_GET_VERSION, kfd.struct_kfd_ioctl_get_version_args), ctypes.addressof(buf))
    print("version", buf[0], buf[1])""")
  assert out.count("errno EFAULT") == 2 and "GET_VERSION: argument=" in out and "CREATE_EVENT: argument=" in out
  assert f"version {kfd.KFD_IOCTL_MAJOR_VERSION} {kfd.KFD_IOCTL_MINOR_VERSION}" in out

def test_unmapped_device_id_array_is_efault():
  out = run_case("""
    a = anon(0x1000, 3)
    h = d.io(kfd.AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, va_addr=a, size=0x1000, gpu_id=d.gpu_ids[0], flags=USERPTR, mmap_offset=a).handle
    efault(lambda: d.io(kfd.AMDKFD_IOC_MAP_MEMORY_TO_GPU, handle=h, device_ids_array_ptr=hole(), n_devices=1))
    efault(lambda: d.io(kfd.AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, handle=h, device_ids_array_ptr=hole(), n_devices=1))""")
  assert "errno EFAULT MAP_MEMORY_TO_GPU: device_ids_array_ptr=" in out and "errno EFAULT UNMAP_MEMORY_FROM_GPU: device_ids_array_ptr=" in out

def test_unmapped_events_pointer_is_efault():
  out = run_case("efault(lambda: d.io(kfd.AMDKFD_IOC_WAIT_EVENTS, events_ptr=hole(), num_events=1, timeout=0))")
  assert "errno EFAULT WAIT_EVENTS: events_ptr=" in out

def test_unmapped_info_return_pointer_is_efault():
  out = run_case("""
    s = amdgpu_drm.struct_drm_amdgpu_info(return_pointer=hole(), return_size=0x100, query=amdgpu_drm.AMDGPU_INFO_DEV_INFO)
    efault(lambda: d.kfd.ioctl(Device("render", d.gpu_ids[0]), request(amdgpu_drm.DRM_IOCTL_AMDGPU_INFO, amdgpu_drm.struct_drm_amdgpu_info), s))""")
  assert "errno EFAULT DRM AMDGPU_INFO: return_pointer=" in out

def test_userptr_over_unmapped_or_read_only_memory_is_efault():
  out = run_case("""
    for va in (hole(), anon(0x1000, 1)):
      efault(lambda: d.io(kfd.AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, va_addr=va, size=0x1000, gpu_id=d.gpu_ids[0], flags=USERPTR, mmap_offset=va))
    ro = anon(0x1000, 1)   # without WRITABLE, read-only memory is enough (the kernel pins it read-only)
    d.io(kfd.AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, va_addr=ro, size=0x1000, gpu_id=d.gpu_ids[0], flags=kfd.KFD_IOC_ALLOC_MEM_FLAGS_USERPTR, mmap_offset=ro)
    print("read-only ok")""")
  assert out.count("errno EFAULT ALLOC_MEMORY_OF_GPU: USERPTR va_addr=") == 2 and "read-only ok" in out

def test_sdma_copy_into_userptr_unmapped_by_the_cpu_stops_the_queue():
  out = run_case("""
    dst = anon(0x1000, 3)
    h = d.io(kfd.AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, va_addr=dst, size=0x1000, gpu_id=d.gpu_ids[0], flags=USERPTR, mmap_offset=dst).handle
    d.map(h, 0)
    src, _ = d.userptr(0x1000)
    libc.munmap(dst, 0x1000)   # still mapped to the GPU
    r = d.queue(qtype=kfd.KFD_IOC_QUEUE_TYPE_SDMA)
    r.write(sd.SDMA_OP_COPY | sd.SDMA_SUBOP_COPY_LINEAR << 8, 0xFFF, 0, src & 0xFFFFFFFF, src >> 32, dst & 0xFFFFFFFF, dst >> 32)
    d.run()
    print("queue:", type(r.q.error).__name__, r.q.error)
    efault(lambda: d.map(h, 1))   # mapping it to another GPU now fails like the kernel's userptr validation""")
  assert "queue: QueueFault SDMA: COPY_LINEAR destination addr=" in out and "no longer host memory" in out
  assert "errno EFAULT MAP_MEMORY_TO_GPU: handle=" in out

def test_vram_mapped_without_cpu_mmap_faults_until_mmapped():
  out = run_case("""
    va = anon(0x1000, 0)   # tinygrad's PROT_NONE reservation, never mmapped through renderD
    a = d.io(kfd.AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, va_addr=va, size=0x1000, gpu_id=d.gpu_ids[0],
             flags=kfd.KFD_IOC_ALLOC_MEM_FLAGS_VRAM | kfd.KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE)
    d.map(a.handle, 0)
    r = d.queue()
    r.pm4(pm4_nv.PACKET3_RELEASE_MEM, 0x14 | 5 << 8, 1 << 29, va & 0xFFFFFFFF, va >> 32, 0x1234, 0, 0)
    d.run()
    print("queue:", type(r.q.error).__name__, r.q.error)
    d.kfd.mmap(Device("render", d.gpu_ids[0]), va, 0x1000, 3, 0x11, a.mmap_offset)   # the CPU mapping backs it: the GPU may write now
    r2 = d.queue()
    r2.pm4(pm4_nv.PACKET3_RELEASE_MEM, 0x14 | 5 << 8, 1 << 29, va & 0xFFFFFFFF, va >> 32, 0x1234, 0, 0)
    d.run()
    print("value", hex(ctypes.c_uint32.from_address(va).value), r2.q.error)""")
  assert "queue: QueueFault PM4: RELEASE_MEM addr=" in out and "was never mmapped by the CPU" in out
  assert "value 0x1234 None" in out

def test_freeing_the_ring_of_a_live_queue_stops_it():
  out = run_case("""
    r = d.queue()
    r.write(pm4_nv.PACKET3(pm4_nv.PACKET3_NOP, 0), 0, ring=False)
    h = next(a.handle for a in d.kfd.allocs.values() if a.va == r.addr)
    ids = (ctypes.c_uint32 * 1)(d.gpu_ids[0])
    d.io(kfd.AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, handle=h, device_ids_array_ptr=ctypes.addressof(ids), n_devices=1)
    d.io(kfd.AMDKFD_IOC_FREE_MEMORY_OF_GPU, handle=h)
    r.doorbell.value = r.put
    d.run()
    print("queue:", type(r.q.error).__name__, r.q.error)""")
  assert "queue: QueueFault PM4: ring addr=" in out and "is not mapped to this GPU" in out

NV_PRELUDE = """
import tinygrad.runtime.support.hcq
from tinygrad.runtime.autogen import nv_570 as nv
from mockgpu.mock.nv.rm import NVDriver
drv = NVDriver()
drv._start = lambda: None   # channels are run by hand
ctl = drv.open("/dev/nvidiactl")
def esc(nr, arg): return (3 << 30) | (ctypes.sizeof(arg) & 0x1FFF) << 16 | ord("F") << 8 | nr
def alloc(cls, parent=0, params=None):
  drv.ioctl(ctl, esc(nv.NV_ESC_RM_ALLOC, p:=nv.NVOS21_PARAMETERS(hRoot=root, hObjectParent=parent, hClass=cls, pAllocParms=params)), p)
  return p
def control(cmd, params, size):
  drv.ioctl(ctl, esc(nv.NV_ESC_RM_CONTROL, c:=nv.NVOS54_PARAMETERS(hClient=root, hObject=root, cmd=cmd, params=params, paramsSize=size)), c)
  return c
root = 0
root = alloc(nv.NV01_ROOT_CLIENT).hObjectNew
"""

def test_nv_ioctl_pointers_are_efault():
  out = run_case(prelude=NV_PRELUDE, body="""
    efault(lambda: drv.ioctl(ctl, esc(nv.NV_ESC_RM_ALLOC, nv.NVOS21_PARAMETERS()), hole()))   # the argument itself
    arg = nv.NVOS21_PARAMETERS(hClass=nv.NV01_ROOT_CLIENT)
    buf = ctypes.create_string_buffer(bytes(arg), ctypes.sizeof(arg))   # by address: copied in and out
    drv.ioctl(ctl, esc(nv.NV_ESC_RM_ALLOC, arg), ctypes.addressof(buf))
    print("by address", nv.NVOS21_PARAMETERS.from_buffer(buf).hObjectNew in drv.objects)
    efault(lambda: alloc(nv.NV1_MEMORY_USER, root, hole()))
    efault(lambda: control(nv.NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2, hole(), ctypes.sizeof(nv.NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS)))
    cl = nv.NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS(numClasses=8, classList=hole())
    efault(lambda: control(nv.NV0080_CTRL_CMD_GPU_GET_CLASSLIST, ctypes.addressof(cl), ctypes.sizeof(cl)))
    cl.classList = anon(0x1000, 1)   # read-only
    efault(lambda: control(nv.NV0080_CTRL_CMD_GPU_GET_CLASSLIST, ctypes.addressof(cl), ctypes.sizeof(cl)))
    gr = nv.NV2080_CTRL_GR_GET_INFO_PARAMS(grInfoListSize=2, grInfoList=hole())
    efault(lambda: control(nv.NV2080_CTRL_CMD_GR_GET_INFO, ctypes.addressof(gr), ctypes.sizeof(gr)))""")
  assert "by address True" in out and "errno EFAULT NV_ESC_RM_ALLOC: argument=" in out
  assert f"errno EFAULT RM_ALLOC class {nv.NV1_MEMORY_USER:#x}: pAllocParms=" in out
  assert f"errno EFAULT RM_CONTROL cmd {nv.NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2:#x}: params=" in out
  assert out.count("errno EFAULT GPU_GET_CLASSLIST: classList=") == 2 and "errno EFAULT GR_GET_INFO: grInfoList=" in out

def test_nv_channel_memory_unmapped_by_the_cpu_stops_the_channel():
  out = run_case(prelude=NV_PRELUDE, body="""
    from mockgpu.mock.device import host_mmap
    from mockgpu.mock.nv.gpfifo import Channel
    base = host_mmap(0xC1_0000_0000, 0x10000)   # a hint below 2^40: GP entries carry 40-bit addresses
    drv.memory.add(base, 0x10000, "ring+userd")   # registered as UVM_MAP_EXTERNAL_ALLOCATION does
    ch = Channel(drv, 0, base, 8, base + 0x1000, 1)
    pb = base + 0x2000
    ctypes.c_uint64.from_address(base).value = pb & 0xFFFFFFFC | (pb >> 32 | 4 << 10) << 32   # GP entry: 4 dwords at pb (NVC56F_GP_ENTRY*)
    libc.munmap(pb, 0x1000)   # the pushbuffer, still registered
    ctypes.c_uint32.from_address(base + 0x1000 + nv.AmpereAControlGPFifo.GPPut.offset).value = 1
    ch.run()
    print("channel:", type(ch.error).__name__, ch.error)""")
  assert "channel: QueueFault GPFIFO channel 0 (token 1): pushbuffer segment addr=" in out and "no longer host memory" in out

def test_earlier_engine_libraries_leave_the_cache(tmp_path, monkeypatch):
  # the engines were once two cache families ("mock-copy-", "mock-idle-"); loading the one library they became removes their
  # entries (every file of each stem), and nothing else in the cache
  monkeypatch.setenv("MOCKGPU_CACHE", str(tmp_path))
  old = [tmp_path / f"{fam}{'0' * 20}{ext}" for fam in uaccess.RETIRED for ext in (".so", ".json", ".lock")]
  other = tmp_path / f"emu-gfx1100-{'0' * 20}.so"
  for f in (*old, other): f.write_bytes(b"")
  assert uaccess.dma_library.__wrapped__() is not None   # as the first load in a process does (dma_library is loaded once)
  assert not [f.name for f in old if f.exists()] and other.exists() and list(tmp_path.glob("mock-dma-*.so"))
