"""User memory access: the kernel driver's copy_from_user/copy_to_user contract for the mock drivers.

Every pointer a caller hands the KFD model (an ioctl argument, the arrays and return pointers inside it) or the guest
hands an engine (packet addresses, rings) is read and written through here, never dereferenced directly: a bad pointer
becomes `OSError(EFAULT, "<IOCTL>: <field>=0x.. ...")` (or, in an engine, a queue fault), not a SIGSEGV of the host.

Mechanism: process_vm_readv/writev on the own process. The kernel walks the page tables for them and returns EFAULT (or a
short count) for unmapped or protected memory, so one syscall both checks and copies. Measured against the other
candidates: one call costs about four ctypes memmoves, while parsing /proc/self/maps costs ~100x more and goes stale,
and mincore/msync cannot see PROT_NONE reservations (tinygrad reserves every VRAM range that way). Write permission
without writing (`writable`) is the one question the syscalls cannot answer; it reads /proc/self/maps and is used only
where a range is registered (USERPTR allocations). Where the syscalls are forbidden (seccomp), /proc/self/mem is used.
Bulk copies of the DMA engines (`move`, 64 KiB and more) run a memcpy in C that survives a fault (mock/copy.c) and fall back
to the syscalls only when it faults: a 2 MB SDMA copy of tinygrad's took 0.8 ms through the syscall, 0.25 ms so."""
from __future__ import annotations
import ctypes, errno, functools, os, pathlib

__all__ = ["copy_from_user", "copy_to_user", "move", "dma_library", "struct_in", "ioctl_arg", "readable", "writable", "pin", "efault", "PAGE"]

PAGE, M64 = 0x1000, (1 << 64) - 1

class _Iovec(ctypes.Structure): _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]

_libc = ctypes.CDLL(None, use_errno=True)
_READV, _WRITEV = _libc.process_vm_readv, _libc.process_vm_writev
for _f in (_READV, _WRITEV):
  _f.restype, _f.argtypes = ctypes.c_ssize_t, [ctypes.c_int, ctypes.POINTER(_Iovec), ctypes.c_ulong, ctypes.POINTER(_Iovec), ctypes.c_ulong,
                                               ctypes.c_ulong]
_pid, _mem_fd = os.getpid(), None

def _after_fork():
  global _pid, _mem_fd
  _pid, _mem_fd = os.getpid(), None   # /proc/self/mem opened by the parent names the parent
os.register_at_fork(after_in_child=_after_fork)

def _syscall(fn, local:list[tuple[int, int]], remote:list[tuple[int, int]]) -> int:
  """process_vm_readv/writev of `remote` (this process) from/to `local`: bytes moved, stopping at the first fault."""
  lv, rv = (_Iovec * len(local))(*[_Iovec(a, n) for a, n in local]), (_Iovec * len(remote))(*[_Iovec(a, n) for a, n in remote])
  return fn(_pid, lv, len(local), rv, len(remote), 0)

def _proc_mem(write:bool, local:int, remote:int, n:int) -> int:
  """The fallback for a sandbox without process_vm_*: pread/pwrite on /proc/self/mem (EIO for unmapped memory)."""
  global _mem_fd
  if _mem_fd is None: _mem_fd = os.open("/proc/self/mem", os.O_RDWR | os.O_CLOEXEC)
  buf = (ctypes.c_char * n).from_address(local)
  try: return os.pwrite(_mem_fd, buf, remote) if write else os.preadv(_mem_fd, [buf], remote)
  except OSError: return -1

_fallback = _syscall(_READV, [(ctypes.addressof(_probe:=ctypes.c_uint64(1)), 8)], [(ctypes.addressof(_probe), 8)]) != 8

def _xfer(write:bool, local:int, remote:int, n:int) -> int:
  """Copy n bytes between local memory (trusted) and `remote` (checked). Returns the bytes moved before the first fault."""
  done = 0
  while done < n:   # one call moves at most ~2 GiB (MAX_RW_COUNT); a short count means a fault
    k = min(n - done, 1 << 30)
    r = _proc_mem(write, local + done, remote + done, k) if _fallback else _syscall(_WRITEV if write else _READV, [(local + done, k)],
                                                                                    [(remote + done, k)])
    if r <= 0: break
    done += r
  return done

def _valid(addr:int, n:int) -> bool: return isinstance(addr, int) and isinstance(n, int) and 0 <= addr and 0 <= n and addr + n <= M64 + 1

def efault(what:str, addr:int, n:int, access:str="readable") -> OSError:
  """The EFAULT a kernel driver returns for a bad user pointer, naming the field (`what`, e.g. "WAIT_EVENTS: events_ptr")."""
  at = f"{addr:#x}" if isinstance(addr, int) else repr(addr)
  return OSError(errno.EFAULT, f"{what}={at} (+{n:#x} bytes) is not {access} memory of this process (EFAULT, as from the kernel); "
                               "pass the address of a live buffer of that size")

def copy_from_user(addr:int, n:int, what:str) -> bytearray:
  """The n bytes at `addr`. Raises OSError(EFAULT) naming `what` if any of them is not readable memory of this process."""
  buf = bytearray(n)
  if n and (not _valid(addr, n) or _xfer(False, ctypes.addressof((ctypes.c_char * n).from_buffer(buf)), addr, n) != n):
    raise efault(what, addr, n)
  return buf

def copy_to_user(addr:int, data, what:str):
  """Write the bytes of `data` (bytes-like or a ctypes object) to `addr`. Raises OSError(EFAULT) naming `what` if any byte
  is not writable memory of this process (the bytes before the faulting page may have been written, as in the kernel)."""
  src = bytes(data) if not isinstance(data, bytes) else data
  buf = (ctypes.c_char * len(src)).from_buffer_copy(src)   # its address without ctypes.cast, a foreign call that drops the GIL
  if (n:=len(src)) and (not _valid(addr, n) or _xfer(True, ctypes.addressof(buf), addr, n) != n):
    raise efault(what, addr, n, "writable")

FAST_MIN = 1 << 16   # bytes from which `move` copies in C (mock/copy.c); below, one syscall costs less than its set-up

@functools.cache
def dma_library() -> ctypes.PyDLL | None:
  """The engines' C (mock/copy.c's guarded copy, mock/sdma.c's SDMA fast path, mock/idle.c's idle wait), compiled once into the
  library cache, loaded to be called holding the GIL (the idle wait loads it again to release it), or None without a C compiler or
  a usable cache directory."""
  from mockgpu import cbuild
  from mockgpu.errors import BuildError
  srcs = [pathlib.Path(__file__).with_name(f).read_text() for f in ("copy.c", "sdma.c", "idle.c")]
  try:
    path = cbuild.shared_library("mock-dma-", srcs, ("-O2", "-fPIC", "-std=gnu11"), lambda: (srcs, {}), 4, what="the DMA engines")[0]
    for family in RETIRED: cbuild.prune(family, 0)
  except (BuildError, OSError): return None
  return ctypes.PyDLL(str(path))

# the engines' libraries of earlier versions (one each, before they became one "mock-dma-" library): their cache entries, which
# nothing prunes any more, are removed when the library is loaded
RETIRED = ("mock-copy-", "mock-idle-")

@functools.cache
def _copier():
  """mock/copy.c's mock_copy, or None without the library (the syscalls then copy everything)."""
  if (lib:=dma_library()) is None: return None
  (fn := lib.mock_copy).argtypes, fn.restype = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t], ctypes.c_int
  return fn

def move(dst:int, src:int, n:int) -> int:
  """Copy n bytes from `src` to `dst`, both of this process and both checked (a DMA engine's copy; the kernel reads the
  local side of process_vm_writev with copy_from_user too). Returns the bytes copied before the first fault (n if none);
  a caller finds which side faulted with `readable(src, n)`. Copies of FAST_MIN bytes or more between ranges that do not
  overlap run in C first (a plain memcpy that survives a fault: 4 times faster than the syscall on 2 MB); if that faults,
  the syscalls copy the whole range again, which counts the bytes before the fault."""
  if not (n and _valid(dst, n) and _valid(src, n)): return 0
  if n >= FAST_MIN and (dst + n <= src or src + n <= dst) and (c:=_copier()) is not None and c(dst, src, n) == 0: return n
  return _xfer(True, src, dst, n)

def struct_in(typ, addr:int, what:str):
  """A private copy of the ctypes struct/array `typ` at `addr` (copy_from_user). Raises OSError(EFAULT) naming `what`."""
  return typ.from_buffer(copy_from_user(addr, ctypes.sizeof(typ), what))

def ioctl_arg(typ, arg, what:str, copy_in:bool=True):
  """An ioctl argument as the driver's handler sees it: `(struct, user)`. `arg` is the ctypes object tinygrad passes
  (fcntl's mutable buffer; the handler gets a `typ` view of it, `user` is None) or an address, which is copied in like the
  kernel's ioctl entry does (`copy_in`, the ioctl's write direction; zeros otherwise) into a private `typ`: then `user` is
  the address, and the caller copies the struct back with `copy_to_user(user, struct, what)` after the handler.
  Raises OSError(EFAULT) naming `what` for a bad address, OSError(EINVAL) for a ctypes object smaller than `typ` (the
  driver would read and write past it), TypeError for anything else."""
  size = ctypes.sizeof(typ)
  if isinstance(arg, typ): return arg, None
  if isinstance(arg, int) and not isinstance(arg, bool):
    return typ.from_buffer(copy_from_user(arg, size, what) if copy_in else bytearray(size)), arg
  if isinstance(arg, (ctypes.Structure, ctypes.Union, ctypes.Array, ctypes._SimpleCData)):
    if ctypes.sizeof(arg) >= size: return typ.from_buffer(arg), None
    raise OSError(errno.EINVAL, f"{what} is a {type(arg).__name__} of {ctypes.sizeof(arg)} bytes; the driver reads and writes a "
                                f"{typ.__name__} of {size} bytes there: pass one")
  raise TypeError(f"{what} must be a {typ.__name__}, a ctypes object of >= {size} bytes or an address, not {type(arg).__name__}")

PROBE_PAGES = 16   # ranges of more pages are checked against /proc/self/maps (~1 ms) instead of a probe per page

def readable(addr:int, n:int) -> bool:
  """Whether every page of `[addr, addr+n)` is readable memory of this process: up to PROBE_PAGES pages one byte is
  probed per page, larger ranges are checked with `_maps_grant`. Probing cost 6-24 us per page of shared memory, whose
  pages the probe allocates (tinygrad maps 32 such 2 MB buffers when it opens an AMD device)."""
  if not _valid(addr, n): return False
  if n == 0: return True
  pages = range(addr - addr % PAGE, addr + n, PAGE)
  if len(pages) > PROBE_PAGES: return _maps_grant(addr, n, b"r")
  scratch = ctypes.create_string_buffer(len(pages))
  chunk = [(max(p, addr), 1) for p in pages]
  if _fallback: return all(_proc_mem(False, ctypes.addressof(scratch), a, 1) == 1 for a, _ in chunk)
  return _syscall(_READV, [(ctypes.addressof(scratch), len(chunk))], chunk) == len(chunk)

def writable(addr:int, n:int) -> bool:
  """Whether `[addr, addr+n)` is readable and writable memory of this process (`_maps_grant`). Answers without writing
  (which would race with other writers of the range)."""
  return _valid(addr, n) and _maps_grant(addr, n, b"rw")

_MADV_POPULATE = {False: 22, True: 23}   # MADV_POPULATE_READ / _WRITE (Linux 5.14)

def pin(addr:int, n:int, write:bool) -> bool:
  """Fault in the pages of `[addr, addr+n)` as a driver pinning user memory does (get_user_pages: a registered USERPTR
  buffer's pages exist from then on), in one madvise; checked ranges only (`readable` / `writable`). False where the
  kernel cannot populate (older than 5.14, or it refused): the pages then fault in when first touched."""
  if not (n and _valid(addr, n)): return False
  lo = addr - addr % PAGE
  return _libc.madvise(ctypes.c_void_p(lo), ctypes.c_size_t(addr + n - lo), _MADV_POPULATE[write]) == 0

def _maps_grant(addr:int, n:int, perms:bytes) -> bool:
  """Whether /proc/self/maps grants `perms` (b"r" or b"rw") on all of `[addr, addr+n)` and the range's last page in each
  file mapping is readable: a file mapping's pages past the file's end are mapped but fault, and they are its last ones."""
  end, at = addr + n, addr
  with open("/proc/self/maps", "rb") as f: lines = f.read().splitlines()
  for line in lines:
    if at >= end: break
    rng, p, _, _, inode = line.split(maxsplit=5)[:5]
    lo, hi = (int(x, 16) for x in rng.split(b"-"))
    if hi <= at: continue
    if lo > at or p[:len(perms)] != perms or (inode != b"0" and not readable(min(hi, end) - 1, 1)): return False
    at = hi
  return at >= end
