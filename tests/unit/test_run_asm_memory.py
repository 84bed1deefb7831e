"""run_asm's view of host memory (mockgpu.tinygrad.compat.amd_emu.host_memory): the process's read-write mappings from a
maps file, adjacent ones merged, guard pages, read-only, [vvar]/[vsyscall] left out, file-backed ones ending at the file."""
import ctypes, mmap, os
from mockgpu.tinygrad.compat.amd_emu import host_memory, PAGE

MAPS = """\
00400000-00401000 r-xp 00000000 00:00 0
10000000-10002000 rw-p 00000000 00:00 0
10002000-10003000 rw-p 00000000 00:00 0                          [heap]
10003000-10004000 ---p 00000000 00:00 0
10004000-10005000 rw-s 00000000 00:00 0
7ffc0000-7ffc2000 r--p 00000000 00:00 0                          [vvar]
7ffd0000-7ffd1000 rw-p 00000000 00:00 0                          [stack]
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0          [vsyscall]
"""

def test_synthetic_maps(tmp_path):
  (p := tmp_path / "maps").write_text(MAPS)
  got = [(r.start, r.size, r.name) for r in host_memory(str(p)).ranges()]
  assert got == [(0x10000000, 0x3000, "host anonymous"), (0x10004000, 0x1000, "host anonymous"), (0x7ffd0000, 0x1000, "host [stack]")]
  ro = [(r.start, r.size) for r in host_memory(str(p), writable=False).ranges()]
  assert ro == [(0x400000, 0x1000), (0x10000000, 0x3000), (0x10004000, 0x1000), (0x7ffd0000, 0x1000)]

def test_real_mappings():
  libc = ctypes.CDLL(None)
  libc.mmap.restype, libc.mmap.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
  libc.mprotect.argtypes, libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int], [ctypes.c_void_p, ctypes.c_size_t]
  p = libc.mmap(None, 3 * PAGE, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
  assert libc.mprotect(p + PAGE, PAGE, mmap.PROT_READ) == 0 and libc.mprotect(p + 2 * PAGE, PAGE, 0) == 0   # PROT_NONE: a guard page
  heap = ctypes.create_string_buffer(64)
  try:
    m = host_memory()
    assert m.find(p, PAGE) is not None and m.find(p + PAGE - 4, 8) is None and m.find(p + PAGE) is None and m.find(p + 2 * PAGE) is None
    assert m.find(ctypes.addressof(heap), 64) is not None
    assert m.find(0x1000) is None   # page 1 is never mapped (vm.mmap_min_addr)
    assert host_memory(writable=False).find(p, 2 * PAGE) is not None
  finally: libc.munmap(p, 3 * PAGE)

def test_file_mapping_ends_at_the_files_last_page(tmp_path):
  f = tmp_path / "data"
  f.write_bytes(bytes(3 * PAGE))
  with open(f, "r+b") as fh:
    m = mmap.mmap(fh.fileno(), 3 * PAGE)
    os.truncate(f, 100)   # the mapping stays 3 pages; touching pages 1, 2 now raises SIGBUS
    addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
    hm = host_memory()
    m.close()
  assert hm.find(addr, PAGE) is not None and hm.find(addr + PAGE) is None and hm.find(addr + 2 * PAGE) is None
