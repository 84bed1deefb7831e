"""`MockFileIOInterface`: what tinygrad's hcq.py uses instead of its FileIOInterface when DEV names a MOCK interface.

Paths of the KFD model (`/dev/kfd`, the topology, `/sys/class/drm/renderD<minor>/...`, `/dev/dri/renderD<minor>`) are
served by `mockgpu.mock.kfd.system()`, the NVIDIA device files (`/dev/nvidiactl`, `/dev/nvidia-uvm`, `/dev/nvidia0`) by
`mockgpu.mock.nv.rm.driver()`, the PCI bus, BAR files and /proc/self/pagemap of tinygrad's AM driver (DEV=MOCKPCI+AMD) by
`mockgpu.mock.am.pci.system()`; every other path behaves exactly like the real class (real OS calls), so probing other
devices fails cleanly. While mock AM GPUs live (MOCKPCI or MOCKUSB), `anon_mmap` and `munmap` keep their page walkers'
shared view of the host address space exact (`mmu.HostVA`, see mock/am/mmu.py). Imported while tinygrad's hcq.py is half initialised: only
`FileIOInterface` may be imported from it, and the KFD model is built lazily on the first open of one of its paths."""
from __future__ import annotations
import errno, os, sys
from tinygrad.runtime.autogen import libc
from tinygrad.runtime.support.hcq import FileIOInterface
from mockgpu.mock.sysfs import Device, Dir
from mockgpu.tinygrad.errors import NotSupportedYet   # this shim raises it: the integration layer's error
from mockgpu.usage import timed

__all__ = ["MockFileIOInterface"]

_MODEL_PREFIXES = ("/dev/kfd", "/dev/dri/renderD", "/sys/devices/virtual/kfd", "/sys/class/drm/renderD")
_NV_PATHS = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia0")
_HUGE_LOCKED = 0x4A000   # MAP_HUGETLB | MAP_LOCKED | MAP_POPULATE: tinygrad's sysmem flags, dropped for the mock's sysmem

def _pci():
  from mockgpu.mock.am.pci import system
  return system()

def _am_host():
  """The host address space of the mock AM GPUs (`mmu.HostVA`) if DEV=MOCKPCI or MOCKUSB created them in this process, else
  None (without creating them)."""
  if (m:=sys.modules.get("mockgpu.mock.am.pci")) is not None and m._system is not None: return m._system.host
  if (m:=sys.modules.get("mockgpu.mock.am.usb")) is not None and m._system is not None: return m._system.gpu.mmu.host
  return None

def _nv():
  from mockgpu.mock.nv.rm import driver
  return driver()

def _model():
  from mockgpu.mock.kfd import system
  return system()

def _pci_handles(path:str) -> bool:
  from tinygrad.helpers import DEV
  return any(t.interface == "MOCKPCI" for t in DEV.value) and path.startswith(("/sys/bus/pci", "/proc/self/pagemap", "/proc/sys/vm/compact_unevictable_allowed"))

MAP_FIXED = 0x10

class MockFileIOInterface(FileIOInterface):
  """FileIOInterface over the mock KFD. Same signatures as tinygrad's class (hcq.py)."""
  def __init__(self, path:str="", flags:int=os.O_RDONLY, fd:int|None=None):
    self.path, self.node, self.nv, self.pci, self.pgpu = path, None, None, None, None
    if fd is None and _pci_handles(path):   # tinygrad's AM driver (PCIIface): never the host's real PCI devices or pagemap
      (self.pci, self.pgpu), self.pos, self.fd = _pci().open(path), 0, -1
      if self.pci.startswith("bar"): self.fd = self.pgpu.fds[int(self.pci[3:])]
      return
    if path.startswith("/dev/vfio"): raise NotSupportedYet("MOCKPCI+AMD with VFIO=1", "the mock PCI GPU has no VFIO; unset VFIO")
    if path.startswith("/sys/bus/pci"):   # a MOCK DEV other than MOCKPCI: never probe the host's real PCI devices under a mock
      raise NotSupportedYet("PCI under this DEV", f"the mock serves a PCI bus ({path}) only with DEV=MOCKPCI+AMD; use that, or DEV=MOCKKFD+AMD")
    if fd is None and path in _NV_PATHS:
      self.nv = _nv().open(path)
      self.node, self.fd = self.nv, self.nv.fd
      return
    if fd is None and path.startswith(_MODEL_PREFIXES) and (node:=_model().lookup(path)) is not None:
      self.node = node
      if isinstance(node, Device): self.fd = _model().open_device(node)
      else: self.fd = -1
      return
    super().__init__(path, flags, fd)

  def __del__(self):
    if getattr(self, "pci", None) is not None: return   # BAR memfds belong to the GPU model
    if self.node is None: super().__del__()
    elif self.nv is not None and (rm:=sys.modules.get("mockgpu.mock.nv.rm")) is not None: rm.driver().close(self.nv)
    elif isinstance(self.node, Device) and hasattr(self, "fd") and (kfd_mod:=sys.modules.get("mockgpu.mock.kfd")) is not None:
      kfd_mod.system().close_device(self.fd)

  def _not(self, what:str, code:int=errno.EINVAL) -> OSError: return OSError(code, f"{what} on {self.path} is not supported by the mock", self.path)

  def ioctl(self, request, arg):
    if self.node is None: return super().ioctl(request, arg)
    if not isinstance(self.node, Device) and self.nv is None: raise self._not("ioctl", errno.ENOTTY)
    with timed("driver_s"): return _nv().ioctl(self.nv, request, arg) if self.nv is not None else _model().ioctl(self.node, request, arg)

  def mmap(self, start, sz, prot, flags, offset):
    if self.pci is not None:
      if not self.pci.startswith("bar"): raise self._not("mmap", errno.ENODEV)
      if offset < 0 or sz <= 0 or offset + sz > (bar:=self.pgpu.sizes[int(self.pci[3:])]):
        raise OSError(errno.EINVAL, f"mmap of {sz:#x} bytes at offset {offset:#x} lies outside {self.path} ({bar:#x} bytes)", self.path)
    if self.node is None: return super().mmap(start, sz, prot, flags, offset)
    if not isinstance(self.node, Device) and self.nv is None: raise self._not("mmap", errno.ENODEV)
    with timed("driver_s"):
      return _nv().mmap(self.nv, start, sz, prot, flags, offset) if self.nv is not None else _model().mmap(self.node, start, sz, prot, flags, offset)

  def read(self, size=None, binary=False, offset=None):
    if self.pci is not None: return self._pci_read(size, binary, offset)
    if self.node is None: return super().read(size, binary, offset)
    if self.nv is not None: raise self._not("read")
    if isinstance(self.node, Dir): raise IsADirectoryError(errno.EISDIR, "Is a directory", self.path)
    if isinstance(self.node, Device): raise self._not("read")
    text = self.node[offset or 0:]
    text = text if size is None else text[:size]
    return text.encode() if binary else text

  def write(self, content, binary=False, offset=None):
    if self.pci == "config":
      off, data = offset if offset is not None else self.pos, content if binary else content.encode()
      cfg = self.pgpu.config
      if not 0 <= off <= len(cfg) - len(data): raise OSError(errno.EINVAL, f"config write at {off:#x} (+{len(data)}) beyond 4 KiB", self.path)
      cfg[off:off + len(data)] = data
      return len(data)
    if self.pci == "text" and os.path.normpath(self.path).endswith("/enable"): return len(content)
    if self.pci is not None: raise PermissionError(errno.EACCES, "Permission denied (mock PCI file is read-only)", self.path)
    if self.node is None: return super().write(content, binary, offset)
    if self.nv is not None: raise self._not("write")
    raise PermissionError(errno.EACCES, "Permission denied (mock sysfs is read-only)", self.path)

  def listdir(self):
    if self.pci == "dir": return _pci().listdir(self.path)
    if self.pci is not None: raise NotADirectoryError(errno.ENOTDIR, "Not a directory", self.path)
    if self.node is None: return super().listdir()
    if not isinstance(self.node, Dir): raise NotADirectoryError(errno.ENOTDIR, "Not a directory", self.path)
    return list(self.node.entries)

  def seek(self, offset):
    if self.pci is not None: self.pos = offset
    elif self.node is None: super().seek(offset)

  def _pci_read(self, size, binary, offset):
    pos, pci = self.pos if offset is None else offset, _pci()
    if self.pci == "pagemap":
      with pci.lock: data = pci.pagemap.read(pos, size)
    elif self.pci == "config": data = bytes(self.pgpu.config[pos:pos + (size if size is not None else len(self.pgpu.config))])
    elif self.pci in ("text", "id"): data = pci.text(os.path.normpath(self.path)).encode()[pos:][:size]
    elif self.pci == "dir": raise IsADirectoryError(errno.EISDIR, "Is a directory", self.path)
    else: raise self._not("read")
    if offset is None: self.pos = pos + len(data)
    return data if binary else data.decode()

  @staticmethod
  def exists(path:str) -> bool:
    if _pci_handles(path):
      try: return _pci().kind(path) is not None
      except FileNotFoundError: return False
    return FileIOInterface.exists(path)

  @staticmethod
  def anon_mmap(start, sz, prot, flags, offset):
    if (h:=_am_host()) is None: return FileIOInterface.anon_mmap(start, sz, prot, flags, offset)
    with h.lock:
      ret = FileIOInterface.anon_mmap(start, sz, prot, flags & ~_HUGE_LOCKED, offset)
      if start and flags & MAP_FIXED: h.host_mapped(start, sz)   # sysmem at its GPU VA: tinygrad's pages now
      return ret

  @staticmethod
  def munmap(buf, sz):
    if (h:=_am_host()) is None: return FileIOInterface.munmap(buf, sz)
    with h.lock:   # tinygrad unmaps the GPU VA of a freed CPU-visible VRAM buffer (nothing on the host there on real hardware)
      for a, n in h.host_unmapping(buf, sz): libc.munmap(a, n)
    return 0
