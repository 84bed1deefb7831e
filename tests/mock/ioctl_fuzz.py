"""Random-argument fuzzing of the mock drivers (the copy_from_user contract), one target per driver:

* `kfd`: every case builds a fresh KFD driver (kfd_driver.py) with a few live objects, then runs 1-6 random actions: an
  ioctl from KFD_IOCTLS/DRM_IOCTLS with random field values and pointers (into a live buffer, across its end, a read-only
  page, a PROT_NONE reservation, a hole, 0, kernel and non-canonical addresses), random PM4/SDMA packets with such
  pointers followed by a doorbell and a few scheduling rounds, or the CPU unmapping/protecting memory that is still
  mapped to a GPU.
* `nv`: every case builds a fresh NVIDIA driver (`mockgpu.mock.nv.rm.NVDriver`) with a root client, a device, a memory
  object mapped through UVM, an OS-descriptor object over CPU memory and a GPFIFO channel, then runs 1-6 random actions:
  an escape from `_ESC` or a UVM command from `_UVM` with random fields, RM_ALLOC with random allocation parameters,
  RM_CONTROL of a command from `_CONTROLS` with random parameters (and the arrays inside them, `classList`,
  `grInfoList`), the argument passed as the struct, by address or as a bad pointer; random pushbuffers (semaphores,
  copies, random words) and GP entries with such pointers followed by a few channel rounds; or the CPU unmapping or
  protecting memory that is still mapped to the GPU, UVM_FREE of the live ring, and CPU mmaps of memory objects.

The host must survive every case: ioctls fail with OSError, queues and channels stop with a mockgpu error.

`campaign(seed, n, target=...)` runs cases 0..n-1 in worker subprocesses (`python ioctl_fuzz.py SEED FIRST END UNCHECKED
TARGET`), restarting after a crash or hang, and returns what went wrong per case: a signal (crash), no progress for `hang_s`
(hang), or an exception that is not OSError/MockGPUError (unexpected). Deterministic: case i depends only on (seed, i).
Kernels are not launched (DISPATCH_DIRECT/AQL dispatches and QMD launches stop the queue): the emulator and the PTX engine
have their own fuzzers. WAIT_EVENTS timeouts are capped at 5 ms, since the kernel too would block for as long as it is told."""
from __future__ import annotations
import ctypes, mmap, os, random, selectors, struct, subprocess, sys, time
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))

@dataclass
class Result:
  cases: int = 0
  crashes: list[tuple[int, int, str]] = field(default_factory=list)     # (case, return code, stderr tail)
  hangs: list[int] = field(default_factory=list)
  unexpected: list[str] = field(default_factory=list)                  # "case N: Type: message"

TARGETS = ("kfd", "nv")

def campaign(seed:int, n:int, hang_s:float=30.0, unchecked:bool=False, target:str="kfd") -> Result:
  """Run cases 0..n-1 of `seed` against `target` (one of TARGETS) in worker processes; a crashed or hung worker is
  replaced, starting after its case. `unchecked` swaps the drivers' checked copies for raw ctypes ones (the drivers as they
  were before uaccess), to show that the campaign sees crashes."""
  if target not in TARGETS: raise ValueError(f"target={target!r}; use one of {TARGETS}")
  res, first = Result(), 0
  while first < n:
    p = subprocess.Popen([sys.executable, os.path.abspath(__file__), str(seed), str(first), str(n), str(int(unchecked)), target], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, cwd=HERE, text=True)
    sel, last, err, t = selectors.DefaultSelector(), first - 1, [], time.monotonic()
    sel.register(p.stdout, selectors.EVENT_READ)
    sel.register(p.stderr, selectors.EVENT_READ)
    done = False
    while not done:
      if not sel.select(timeout=1.0) and time.monotonic() - t > hang_s: break
      for key, _ in sel.select(timeout=0):
        line = key.fileobj.readline()
        if not line:
          sel.unregister(key.fileobj)
          if not sel.get_map(): done = True
          continue
        if key.fileobj is p.stderr:
          err = (err + [line])[-20:]
          continue
        t = time.monotonic()
        if line.startswith("case "): last = int(line.split()[1])
        elif line.startswith("unexpected "): res.unexpected.append(line[len("unexpected "):].strip())
    if not done:   # no output for hang_s: the case hangs
      p.kill()
      p.wait()
      res.hangs.append(last)
    elif p.wait() != 0: res.crashes.append((last, p.returncode, "".join(err)))
    res.cases = max(res.cases, last + 1)
    first = last + 1 if (not done or p.returncode != 0) else n
  return res

# *** the worker ***
def _unchecked():
  from mockgpu.mock import uaccess
  def cfu(addr, n, what): return bytearray(ctypes.string_at(addr, n))
  def ctu(addr, data, what): ctypes.memmove(addr, bytes(data), len(bytes(data)))
  def move(dst, src, n): return ctypes.memmove(dst, src, n) and n
  uaccess.copy_from_user, uaccess.copy_to_user, uaccess.move = cfu, ctu, move
  uaccess.readable = uaccess.writable = lambda addr, n: True

def _anon_api():
  libc = ctypes.CDLL(None, use_errno=True)
  libc.mmap.restype, libc.mmap.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
  libc.munmap.argtypes, libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t], [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
  def anon(size, prot, at=None): return libc.mmap(at, size, prot, mmap.MAP_SHARED | mmap.MAP_ANONYMOUS, -1, 0)
  return libc, anon

def _worker(seed:int, first:int, end:int, unchecked:int=0, target:str="kfd"):
  if unchecked: _unchecked()
  sys.path.insert(0, HERE)
  if target == "nv": return _nv_worker(seed, first, end)
  from tinygrad.runtime.autogen import kfd, amdgpu_drm
  from tinygrad.runtime.autogen.am import pm4_nv, sdma_6_0_0 as sd
  from kfd_driver import USERPTR, Driver, request
  from mockgpu.errors import MockGPUError
  from mockgpu.mock.kfd import KFD_IOCTLS, DRM_IOCTLS
  from mockgpu.mock.errors import PacketError
  from mockgpu.mock.pm4 import PM4Queue
  from mockgpu.mock.sysfs import Device
  def no_kernels(self, d): raise PacketError("PM4", self.where, self.header, "the ioctl fuzzer does not launch kernels")
  PM4Queue.launch = no_kernels
  libc, anon = _anon_api()
  GOOD = 0x10000
  good, ro, none = anon(GOOD, 3), anon(0x1000, 1), anon(0x10000, 0)
  hole = anon(0x10000, 0)
  libc.munmap(hole, 0x10000)
  rows = [(io, "kfd") for io in KFD_IOCTLS.values()] + [(io, "render") for io in DRM_IOCTLS.values()]
  alloc_flags = [getattr(kfd, f"KFD_IOC_ALLOC_MEM_FLAGS_{n}") for n in ("VRAM", "GTT", "USERPTR", "DOORBELL", "MMIO_REMAP", "WRITABLE",
                                                                          "EXECUTABLE", "PUBLIC", "COHERENT", "UNCACHED", "NO_SUBSTITUTE")]
  for case in range(first, end):
    print(f"case {case}", flush=True)
    r = random.Random(f"{seed}:{case}")
    ctypes.memmove(good, r.randbytes(GOOD), GOOD)
    d = Driver(n_gpus=2)
    victim = anon(0x2000, 3)   # USERPTR memory the CPU may unmap or protect while the GPUs still map it
    vh = d.io(kfd.AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, va_addr=victim, size=0x2000, gpu_id=d.gpu_ids[0], flags=USERPTR, mmap_offset=victim).handle
    d.map(vh, 0)
    d.map(vh, 1)
    if r.random() < 0.5:   # the scratch buffer, GPU-visible: packets and queues built from the pointer pool then reach memory
      d.map(d.io(kfd.AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, va_addr=good, size=GOOD, gpu_id=d.gpu_ids[0], flags=USERPTR, mmap_offset=good).handle, 0)
    vreserve = anon(0x2000, 0)
    vram = d.io(kfd.AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, va_addr=vreserve, size=0x2000, gpu_id=d.gpu_ids[0],
                flags=kfd.KFD_IOC_ALLOC_MEM_FLAGS_VRAM | kfd.KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE)
    if r.random() < 0.5: d.map(vram.handle, 0)
    pm4, sdma = d.queue(0), d.queue(1, kfd.KFD_IOC_QUEUE_TYPE_SDMA)
    evs = d.events() if r.random() < 0.7 else []
    ctypes.memmove(good + 0x200, bytes((kfd.struct_kfd_event_data * 4)(*[kfd.struct_kfd_event_data(event_id=e.event_id) for e in evs])), 0xC0)
    ctypes.memmove(good + 0x300, bytes((ctypes.c_uint32 * 2)(*d.gpu_ids)), 8)   # valid arrays for events_ptr / device_ids_array_ptr
    ptrs = [0, 8, good, good + 0x200, good + 0x300, good + 0x300, good + r.randrange(GOOD), good + GOOD - 4, good + GOOD, ro, ro + 0xFF8,
            none, hole, hole + 0xFFF8, victim, victim + 0x1000, victim + 0x1FFC, vreserve,
            pm4.addr, 0xFFFF800000000000, 1 << 63, (1 << 64) - 8, r.getrandbits(64)]
    handles = [a.handle for a in d.kfd.allocs.values()] + [0, r.getrandbits(64)]
    def ptr(): return r.choice(ptrs)
    def value(name:str, bits:int) -> int:
      m = (1 << bits) - 1
      if name == "timeout": return r.randrange(6)
      if name == "query": return amdgpu_drm.AMDGPU_INFO_DEV_INFO if r.random() < 0.7 else r.getrandbits(bits)
      if name == "gpu_id": return r.choice(d.gpu_ids + [0, r.getrandbits(32)])
      if name in ("handle", "event_page_offset"): return r.choice(handles) & m
      if name == "drm_fd": return r.choice([*d.kfd.open_files, -1 & m, 0])
      if name == "flags": return sum(f for f in alloc_flags if r.random() < 0.3) if r.random() < 0.8 else r.getrandbits(bits)
      if name in ("n_devices", "num_events"): return r.choice([0, 1, 2, 3, 7, 4096, m])
      if name == "event_id": return r.choice([e.event_id for e in evs] + [0, m])
      if bits == 64 and r.random() < 0.6 or name.endswith(("_ptr", "_address", "pointer", "va_addr")): return ptr() & m
      return r.choice([0, 1, 2, 0x100, 0x1000, 0x2000, m, r.getrandbits(bits)]) & m
    def do_ioctl():
      io, kind = r.choice(rows)
      s = io.struct()
      if r.random() < 0.15: ctypes.memmove(ctypes.addressof(s), r.randbytes(ctypes.sizeof(s)), ctypes.sizeof(s))
      else:
        for name, typ, off, *bitf in io.struct._real_fields_:
          if bitf or not issubclass(typ, (ctypes._SimpleCData,)) or typ in (ctypes.c_char_p, ctypes.c_void_p): continue
          bits = 8 * ctypes.sizeof(typ)
          v = value(name, bits)
          ctypes.memmove(ctypes.addressof(s) + off, v.to_bytes(bits // 8, "little"), bits // 8)
      if io.name == "WAIT_EVENTS": s.timeout = min(s.timeout, 5)
      dev = d.dev if kind == "kfd" else Device("render", r.choice(d.gpu_ids))
      req = request(getattr(kfd if kind == "kfd" else amdgpu_drm, ("AMDKFD_IOC_" if kind == "kfd" else "DRM_IOCTL_") + io.name), io.struct)
      if r.random() < 0.1: req ^= 1 << r.randrange(32)
      arg = s
      if (u:=r.random()) < 0.15:
        ctypes.memmove(good + 0x100, ctypes.addressof(s), ctypes.sizeof(s))
        arg = good + 0x100
      elif u < 0.3: arg = r.choice([0, hole, none, ro, good + GOOD - 4, 1 << 63])
      d.kfd.ioctl(dev, req, arg)
    def addr2(a): return [a & 0xFFFFFFFF, a >> 32]
    def do_engine():
      for _ in range(r.randrange(1, 4)):
        k = r.randrange(8)
        if k == 0: pm4.pm4(pm4_nv.PACKET3_RELEASE_MEM, 0x14 | 5 << 8, r.choice([1, 2, 3]) << 29 | r.randrange(4) << 24, *addr2(ptr()), 7, 0, 0)
        elif k == 1: pm4.pm4(pm4_nv.PACKET3_WAIT_REG_MEM, 0x13 | r.randrange(8), *addr2(ptr() & ~3), 0, 0, 4)
        elif k == 2: pm4.pm4(pm4_nv.PACKET3_COPY_DATA, 5 | 5 << 8 | r.randrange(2) << 16, 1, 2, *addr2(ptr()))
        elif k == 3: pm4.pm4(pm4_nv.PACKET3_INDIRECT_BUFFER, *addr2(ptr() & ~3), (1 << 23) | r.randrange(0x40))
        elif k == 4: sdma.write(sd.SDMA_OP_COPY | sd.SDMA_SUBOP_COPY_LINEAR << 8, r.choice([0, 3, 0xFFF, 0x1FFF, r.getrandbits(22)]), 0,
                                *addr2(ptr()), *addr2(ptr()))
        elif k == 5: sdma.write(sd.SDMA_OP_FENCE, *addr2(ptr()), 5)
        elif k == 6: sdma.write(sd.SDMA_OP_WRITE, *addr2(ptr()), 1, 0xAB, 0xCD)
        else: (pm4 if r.random() < 0.5 else sdma).write(*[r.getrandbits(32) for _ in range(r.randrange(1, 8))])
      if r.random() < 0.2: pm4.doorbell.value = r.getrandbits(r.choice([8, 20, 64]))
      d.kfd.run_until_idle(max_rounds=20)
    def do_cpu():
      k = r.randrange(4)
      if k == 0: libc.munmap(victim, 0x2000)   # still mapped to both GPUs
      elif k == 1: libc.mprotect(victim, 0x2000, r.choice([0, 1]))
      elif k == 2: d.kfd.mmap(d.dev if r.random() < 0.2 else Device("render", d.gpu_ids[0]), vreserve, 0x2000, 3, 0x11, vram.mmap_offset)
      else:
        if (ring_h:=next((a.handle for a in d.kfd.allocs.values() if a.va == pm4.addr), None)) is None: return   # freed already
        d.io(kfd.AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, handle=ring_h, device_ids_array_ptr=ctypes.addressof(_ids:=(ctypes.c_uint32 * 1)(d.gpu_ids[0])),
             n_devices=1)
        d.io(kfd.AMDKFD_IOC_FREE_MEMORY_OF_GPU, handle=ring_h)
    for _ in range(r.randrange(1, 7)):
      act = r.choices([do_ioctl, do_engine, do_cpu], weights=[6, 3, 2])[0]
      try: act()
      except (OSError, MockGPUError): pass
      except Exception as e: print(f"unexpected case {case} {act.__name__}: {type(e).__name__}: {e}", flush=True)
    for g in d.kfd.gpus.values():
      for q in g.queues:
        if q.error is not None and not isinstance(q.error, MockGPUError):
          print(f"unexpected case {case} queue {q}: {type(q.error).__name__}: {q.error}", flush=True)
    libc.munmap(vreserve, 0x2000)
    libc.munmap(victim, 0x2000)
  print("done", flush=True)

def _fill(s, value, ptr, depth:int=0):
  """Random field values for a tinygrad autogen struct: integers from `value(name, bits)`, pointers from `ptr()`, nested
  structs and integer arrays element by element."""
  for name, typ, off, *bitf in type(s)._real_fields_:
    if bitf: continue
    at = ctypes.addressof(s) + off
    if typ is ctypes.c_void_p: ctypes.c_uint64.from_address(at).value = ptr()
    elif issubclass(typ, ctypes._SimpleCData) and typ is not ctypes.c_char_p:
      bits = 8 * ctypes.sizeof(typ)
      ctypes.memmove(at, (value(name, bits) & ((1 << bits) - 1)).to_bytes(bits // 8, "little"), bits // 8)
    elif issubclass(typ, ctypes.Structure) and hasattr(typ, "_real_fields_") and depth < 2: _fill(typ.from_address(at), value, ptr, depth + 1)
    elif issubclass(typ, ctypes.Array) and issubclass(typ._type_, ctypes._SimpleCData) and typ._type_ not in (ctypes.c_char, ctypes.c_void_p):
      bits = 8 * ctypes.sizeof(typ._type_)
      for i in range(min(typ._length_, 8)):
        ctypes.memmove(at + i * bits // 8, (value(name, bits) & ((1 << bits) - 1)).to_bytes(bits // 8, "little"), bits // 8)

def _nv_worker(seed:int, first:int, end:int):
  import tinygrad.runtime.support.hcq  # noqa: F401  (tinygrad's import order: hcq before the mock's file layer)
  from tinygrad.runtime.autogen import nv_570 as nv
  from mockgpu.errors import MockGPUError
  from mockgpu.mock.errors import PacketError
  from mockgpu.mock.nv import rm
  from mockgpu.mock.nv.engines import ComputeEngine
  def no_kernels(self, qmd): raise PacketError(repr(self.ch), f"QMD {qmd:#x}", 0, "the ioctl fuzzer does not launch kernels")
  ComputeEngine.launch = no_kernels
  libc, anon = _anon_api()
  def guarded(size, at=None):   # rw memory between PROT_NONE guard pages: an object the fuzzer hands out ends where it says
    base = anon(size + 0x2000, 0, at)
    libc.mprotect(base + 0x1000, size, 3)
    return base + 0x1000
  GOOD = 0x10000
  good, ro, none = guarded(GOOD), anon(0x1000, 1), anon(0x10000, 0)
  hole = anon(0x10000, 0)
  libc.munmap(hole, 0x10000)
  def esc(nr, typ): return (3 << 30) | (ctypes.sizeof(typ) & 0x1FFF) << 16 | ord("F") << 8 | nr
  rows = [("esc", nr, name, typ) for nr, (name, typ, _) in rm._ESC.items()] + [("uvm", cmd, name, typ) for cmd, (name, typ, _) in rm._UVM.items()]
  classes = [nv.NV01_ROOT_CLIENT, nv.NV01_DEVICE_0, nv.NV20_SUBDEVICE_0, nv.NV1_MEMORY_USER, nv.NV1_MEMORY_SYSTEM, nv.AMPERE_CHANNEL_GPFIFO_A,
             nv.NV01_MEMORY_SYSTEM_OS_DESCRIPTOR, *rm.CLASSES, nv.KEPLER_CHANNEL_GROUP_A]
  for case in range(first, end):
    print(f"case {case}", flush=True)
    r = random.Random(f"nv:{seed}:{case}")
    ctypes.memmove(good, r.randbytes(GOOD), GOOD)
    drv = rm.NVDriver()
    drv._start = lambda: None   # the fuzzer runs the channels itself
    ctl, uvm, gpu = drv.open("/dev/nvidiactl"), drv.open("/dev/nvidia-uvm"), drv.open("/dev/nvidia0")
    def io(f, kind, nr, typ, s, arg=None):
      drv.ioctl(f, esc(nr, typ) if kind == "esc" else nr, s if arg is None else arg)
      return s
    def alloc(cls, parent, params=None):
      return io(ctl, "esc", nv.NV_ESC_RM_ALLOC, nv.NVOS21_PARAMETERS, nv.NVOS21_PARAMETERS(hRoot=1, hObjectParent=parent, hClass=cls,
                pAllocParms=None if params is None else ctypes.addressof(params))).hObjectNew
    def uvm_io(cmd, p): return io(uvm, "uvm", cmd, type(p), p).rmStatus
    root = alloc(nv.NV01_ROOT_CLIENT, 0)
    device = alloc(nv.NV01_DEVICE_0, root)
    mem = alloc(nv.NV1_MEMORY_USER, device, nv.NV_MEMORY_ALLOCATION_PARAMS(size=0x10000))
    region = guarded(0x10000, at=0xC0_0000_0000 + (case % 4096 << 24))   # below 2^40: GP entries carry 40-bit addresses
    libc.munmap(region, 0x10000)   # a hole between guards: UVM_CREATE_EXTERNAL_RANGE backs it
    assert uvm_io(nv.UVM_CREATE_EXTERNAL_RANGE, nv.UVM_CREATE_EXTERNAL_RANGE_PARAMS(base=region, length=0x10000)) == 0
    io(ctl, "esc", nv.NV_ESC_RM_MAP_MEMORY_DMA, nv.NVOS46_PARAMETERS, nv.NVOS46_PARAMETERS(hMemory=mem, length=0x10000, dmaOffset=region))
    assert uvm_io(nv.UVM_MAP_EXTERNAL_ALLOCATION, nv.UVM_MAP_EXTERNAL_ALLOCATION_PARAMS(base=region, length=0x10000)) == 0
    victim = guarded(0x2000)   # CPU memory mapped to the GPU, which the CPU may unmap or protect while it stays mapped
    w = nv.nv_ioctl_nvos02_parameters_with_fd(params=nv.NVOS02_PARAMETERS(hClass=nv.NV01_MEMORY_SYSTEM_OS_DESCRIPTOR, hObjectNew=0x7000,
                                                                            pMemory=victim, limit=0x1FFF), fd=-1)
    io(gpu, "esc", nv.NV_ESC_RM_ALLOC_MEMORY, type(w), w)
    assert w.params.status == 0 and uvm_io(nv.UVM_MAP_EXTERNAL_ALLOCATION, nv.UVM_MAP_EXTERNAL_ALLOCATION_PARAMS(base=victim, length=0x2000)) == 0
    g = nv.NV_CHANNELGPFIFO_ALLOCATION_PARAMETERS(gpFifoOffset=region, gpFifoEntries=16, hUserdMemory=(ctypes.c_uint32 * 8)(mem),
                                                  userdOffset=(ctypes.c_uint64 * 8)(0x1000))
    alloc(nv.AMPERE_CHANNEL_GPFIFO_A, device, g)
    ch, pb, put = drv.channels[0], region + 0x2000, [0]
    ptrs = [0, 8, good, good + r.randrange(GOOD), good + GOOD - 4, good + GOOD, ro, ro + 0xFF8, none, hole, hole + 0xFFF8, victim,
            victim + 0x1FFC, region, region + 0x1000, region + 0xFFF8, region + 0x10000, 0xFFFF800000000000, 1 << 63, (1 << 64) - 8, r.getrandbits(64)]
    def ptr(): return r.choice(ptrs)
    def value(name:str, bits:int) -> int:
      m = (1 << bits) - 1
      if name == "hClass": return r.choice(classes + [r.getrandbits(32)])
      if name.startswith("h"): return r.choice(list(drv.objects) + [0, r.getrandbits(32)])
      if name in ("fd", "ctl_fd"): return r.choice([ctl.fd, uvm.fd, gpu.fd, -1 & m, 0])
      if name in ("base", "pMemory", "dmaOffset", "gpFifoOffset"): return ptr() & ~r.choice([0, 0xFFF])
      if name in ("length", "limit", "size"): return r.choice([0, 0xFFF, 0x1000, 0x2000, 0x10000, 1 << 40, m, r.getrandbits(bits)])
      if name in ("gpFifoEntries", "numClasses", "grInfoListSize", "paramsSize"): return r.choice([0, 1, 4, 16, 58, 59, 1 << 20, m])
      if name == "cmd": return r.choice(list(rm._CONTROLS) + [r.getrandbits(32)])
      if name == "userdOffset": return r.choice([0, 0x1000, 0xFFF8, 1 << 40, r.getrandbits(64)])
      return r.choice([0, 1, 2, 0x100, 0x1000, m, r.getrandbits(bits)])
    def params_at(typ) -> int:   # a random `typ` in the scratch buffer, its pointers from the pool
      s = typ.from_address(good + 0x400)
      ctypes.memmove(ctypes.addressof(s), r.randbytes(ctypes.sizeof(s)), ctypes.sizeof(s))
      if r.random() < 0.8: _fill(s, value, ptr)
      return ctypes.addressof(s)
    def do_ioctl():
      kind, nr, name, typ = r.choice(rows)
      s = typ()
      if r.random() < 0.15: ctypes.memmove(ctypes.addressof(s), r.randbytes(ctypes.sizeof(s)), ctypes.sizeof(s))
      elif isinstance(s, ctypes.Array): pass
      else: _fill(s, value, ptr)
      if name == "NV_ESC_RM_ALLOC" and r.random() < 0.7:
        s.hClass = r.choice(classes)
        s.pAllocParms = params_at(r.choice([nv.NV_MEMORY_ALLOCATION_PARAMS, nv.NV_CHANNELGPFIFO_ALLOCATION_PARAMETERS]))
      if name == "NV_ESC_RM_CONTROL" and r.random() < 0.8:
        s.cmd = r.choice(list(rm._CONTROLS))
        s.hObject, s.params = r.choice(list(drv.objects)), params_at(rm._CONTROLS[s.cmd][0])
        s.paramsSize = ctypes.sizeof(rm._CONTROLS[s.cmd][0]) if r.random() < 0.8 else value("paramsSize", 32)
      req = esc(nr, typ) if kind == "esc" else nr
      if r.random() < 0.1: req ^= 1 << r.randrange(32)
      arg = s
      if (u:=r.random()) < 0.15:
        ctypes.memmove(good + 0x8000, ctypes.addressof(s), min(ctypes.sizeof(s), 0x8000))
        arg = good + 0x8000
      elif u < 0.3: arg = r.choice([0, hole, none, ro, good + GOOD - 4, 1 << 63])
      drv.ioctl(uvm if kind == "uvm" else r.choice([ctl, gpu]), req, arg)
    def hdr(mthd, n, sub=0): return 1 << 29 | n << 16 | sub << 13 | mthd >> 2
    def lohi(a): return [a >> 32, a & 0xFFFFFFFF]
    def do_engine():
      if region not in drv.ours: return   # UVM_FREE unmapped the ring: nothing for the CPU to write the pushbuffer into
      words = []
      for _ in range(r.randrange(1, 4)):
        k, a = r.randrange(5), ptr()
        if k == 0: words += [hdr(nv.NVC56F_SEM_ADDR_LO, 5), a & 0xFFFFFFFF, a >> 32, 7, 0, r.choice([1, 2, 3]) | r.randrange(2) << 24]
        elif k == 1: words += [hdr(nv.NVC56F_SEMAPHOREA, 4), *lohi(a), 5, r.choice([1, 2, 4])]
        elif k == 2: words += [hdr(nv.NVC56F_SET_OBJECT, 1, 4), nv.AMPERE_DMA_COPY_B, hdr(nv.NVC6B5_OFFSET_IN_UPPER, 4, 4), *lohi(a), *lohi(ptr()),
                               hdr(nv.NVC6B5_LINE_LENGTH_IN, 1, 4), r.choice([0, 4, 0x1000, 0x20000, r.getrandbits(32)]),
                               hdr(nv.NVC6B5_LAUNCH_DMA, 1, 4), r.choice([0x182, 0x186, r.getrandbits(32)])]
        elif k == 3: words += [hdr(nv.NVC56F_SET_REFERENCE, 1), r.getrandbits(32)]
        else: words += [r.getrandbits(32) for _ in range(r.randrange(1, 8))]
      ctypes.memmove(pb, struct.pack(f"<{len(words)}I", *words), 4 * len(words))
      seg, n = (pb, len(words)) if r.random() < 0.8 else (ptr(), r.randrange(1 << 21))
      slot = region + 8 * (put[0] % 16)
      ctypes.c_uint64.from_address(slot).value = seg & 0xFFFFFFFC | ((seg >> 32) & 0xFF | n << 10) << 32
      put[0] = (put[0] + 1) % 16 if r.random() < 0.9 else r.getrandbits(32)
      ctypes.c_uint32.from_address(ch.userd + nv.AmpereAControlGPFifo.GPPut.offset).value = put[0]
      for _ in range(5):
        if not any([c.run() for c in drv.channels]): break
    def do_cpu():
      k = r.randrange(4)
      if k == 0: libc.munmap(victim, 0x2000)   # still mapped to the GPU
      elif k == 1: libc.mprotect(victim, 0x2000, r.choice([0, 1]))
      elif k == 2: uvm_io(nv.UVM_FREE, nv.UVM_FREE_PARAMS(base=region, length=0x10000))   # the live ring and USERD
      else:   # a CPU mapping of a memory object (a hint, never MAP_FIXED over memory the fuzzer does not own)
        w = nv.nv_ioctl_nvos33_parameters_with_fd(fd=ctl.fd, params=nv.NVOS33_PARAMETERS(hMemory=r.choice(list(drv.objects)), length=0x1000))
        io(ctl, "esc", nv.NV_ESC_RM_MAP_MEMORY, type(w), w)
        drv.mmap(ctl, r.choice([0, hole]), r.choice([0x1000, 0x2000]), 3, mmap.MAP_SHARED, 0)
    for _ in range(r.randrange(1, 7)):
      act = r.choices([do_ioctl, do_engine, do_cpu], weights=[6, 3, 1])[0]
      try: act()
      except (OSError, MockGPUError): pass
      except Exception as e: print(f"unexpected case {case} {act.__name__}: {type(e).__name__}: {e}", flush=True)
    for c in drv.channels:
      if c.error is not None and not isinstance(c.error, MockGPUError):
        print(f"unexpected case {case} channel {c}: {type(c.error).__name__}: {c.error}", flush=True)
    for base, n in list(drv.ours.items()) + list(drv.backed.items()): libc.munmap(base, n)
    libc.munmap(victim - 0x1000, 0x4000)
    libc.munmap(region - 0x1000, 0x12000)
  print("done", flush=True)

if __name__ == "__main__": _worker(*map(int, sys.argv[1:5]), *sys.argv[5:6])
