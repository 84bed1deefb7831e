"""Build the generated-C library of one arch: pcode's emitted C + the generated handlers/decoder + the hand-written core,
compiled by the one compile-and-cache service (`mockgpu.cbuild`: $MOCKGPU_CC or `cc`; $MOCKGPU_CACHE, $XDG_CACHE_HOME/mockgpu
or ~/.cache/mockgpu; verified before use, built under a lock) into one shared library per arch, keyed by arch, pcode source
hash, emitter and generator versions, compiler and host CPU features."""
from __future__ import annotations
import hashlib, os, pathlib, re, time
from dataclasses import dataclass
from mockgpu.emu.arch import ArchSpec, library_arch
from mockgpu.emu.errors import BackendUnavailable
from mockgpu.errors import BuildError
from mockgpu import cbuild
from mockgpu.cbuild import cache_dir, compiler

__all__ = ["Library", "cache_dir", "compiler", "build", "prune", "GENERATORS", "CFLAGS", "KEEP", "BUILD_SECONDS"]

HERE = pathlib.Path(__file__).resolve().parent
CSRC = HERE / "csrc"
PCODE_DIR = HERE.parent / "pcode"
# -ffp-contract=off: gcc's GNU C default (fast) fuses a*b+c into an FMA once -march=native offers one, which changes f32/f64
# results the pseudocode rounds twice; every float operation must round exactly as written
CFLAGS = ("-O2", "-march=native", "-mno-avx512f", "-fno-math-errno", "-ffp-contract=off", "-fPIC", "-std=gnu11", "-fno-strict-aliasing",
          "-fwrapv", "-w", "-pthread")

@dataclass(frozen=True)
class Library:
  path: pathlib.Path
  handlers: tuple[str, ...]
  hbase: dict
  missing: dict
  built: bool          # True if this call compiled it (cold build), False if it came from the cache
  build_seconds: float

BUILD_SECONDS = 30   # what a build takes on an idle 2-core machine (docs/emu.md), for the announcement
KEEP = 12   # libraries kept per arch: several checkouts or versions of mockgpu may share one cache

def prune(arch_name: str, keep: int = KEEP) -> list[pathlib.Path]:
  """Delete all but the `keep` most recently used libraries of `arch_name` (with their sources, metadata and lock files)
  from the cache; a library another process holds open stays valid for it (unlinked files live on). Returns what was removed."""
  return cbuild.prune(f"emu-{arch_name}-", keep)

def _files_hash(paths) -> str:
  h = hashlib.sha256()
  for p in sorted(paths): h.update(p.name.encode()); h.update(p.read_bytes())
  return h.hexdigest()

def _pcode_emitter():
  try:
    from mockgpu.pcode import cemit, tables
  except ImportError as e:
    raise BackendUnavailable(f"mockgpu.pcode's C emitter is not available ({e}); the C backend needs it (docs/emu.md)") from e
  return cemit, tables

# the modules that produce the library's sources: the generator, this builder and pcode's C emitter (build._emit)
GENERATORS = ("mockgpu.emu.gen_c", "mockgpu.emu.build", "mockgpu.pcode.cemit")

def _key_parts(arch: ArchSpec) -> list[str]:
  """The library's cache key, from files only (nothing imported or parsed: docs/emu.md): the arch, the wheel's tables of its
  family, the C headers, the generator's modules (pcode's emitter and corrections included), tinygrad's version."""
  import tinygrad
  from importlib.metadata import version
  own, amd = [*CSRC.glob("*.[ch]"), *PCODE_DIR.glob("*.h"), *cbuild.module_files(GENERATORS)], pathlib.Path(tinygrad.__file__).parent / "runtime/autogen/amd"
  return [arch.name, arch.family, _files_hash([amd / "common.py", *(amd / arch.family).glob("*.py")]), _files_hash(own), version("tinygrad")]

def _emit(arch: ArchSpec) -> str:
  cemit, _ = _pcode_emitter()
  return cemit.emit(arch.family)

def build(arch: ArchSpec, force: bool = False) -> Library:
  """The library for `arch`, compiled now if it is not cached (or the cached file is damaged, or `force`). Safe against
  concurrent builds (file lock); announced on stderr while it builds.

  Raises: BackendUnavailable (no compiler, no emitter, compile error with the compiler's first lines of output)."""
  if not arch.c_backend: raise BackendUnavailable(f"arch={arch.name}: the C backend does not support it yet ({arch.notes})")
  arch = library_arch(arch)   # archs whose generated C is identical share one library
  t0 = time.perf_counter()
  def generate() -> tuple[list[str], dict]:
    from mockgpu.emu.gen_c import generate
    pc = _emit(arch)
    fns = set(re.findall(r"\bvoid\s+(pc_\w+)\s*\(\s*PcState\s*\*", pc))
    gen = generate(arch, pc, fns, chunks=max(2, os.cpu_count() or 2))
    return gen.sources, {"arch": arch.name, "handlers": gen.handlers, "hbase": gen.hbase, "missing": gen.missing}
  try:
    path, m, built = cbuild.shared_library(f"emu-{arch.name}-", _key_parts(arch), CFLAGS, generate, KEEP, include=(CSRC, PCODE_DIR),
                                           what=f"the {arch.name} emulator", force=force, announce=f"building the {arch.name} emulator "
                                           f"(one-time, ~{BUILD_SECONDS} s; cached in {cache_dir()})...")
  except BackendUnavailable: raise
  except BuildError as e: raise BackendUnavailable(str(e)) from e
  return Library(path, tuple(m["handlers"]), m["hbase"], m["missing"], built, time.perf_counter() - t0 if built else 0.0)
