"""Build the generated-C library of one arch: pcode's emitted C + the generated handlers/decoder + the hand-written core,
compiled with the system C compiler (`cc`, or $MOCKGPU_CC) into one shared library per arch, cached on disk in
$MOCKGPU_CACHE (default ~/.cache/mockgpu), keyed by arch, pcode source hash, emitter and generator versions, and compiler."""
from __future__ import annotations
import fcntl, functools, hashlib, json, os, pathlib, re, shlex, shutil, subprocess, tempfile, time
from dataclasses import dataclass
from mockgpu.emu.arch import ArchSpec
from mockgpu.emu.errors import BackendUnavailable

__all__ = ["Library", "cache_dir", "compiler", "build", "prune", "CFLAGS", "KEEP"]

HERE = pathlib.Path(__file__).resolve().parent
CSRC = HERE / "csrc"
PCODE_DIR = HERE.parent / "pcode"
# -ffp-contract=off: gcc's GNU C default (fast) fuses a*b+c into an FMA once -march=native offers one, which changes f32/f64
# results the pseudocode rounds twice; every float operation must round exactly as written
CFLAGS = ("-O2", "-march=native", "-mno-avx512f", "-fno-math-errno", "-ffp-contract=off", "-fPIC", "-std=gnu11", "-fno-strict-aliasing",
          "-fwrapv", "-w")

@dataclass(frozen=True)
class Library:
  path: pathlib.Path
  handlers: tuple[str, ...]
  hbase: dict
  missing: dict
  built: bool          # True if this call compiled it (cold build), False if it came from the cache
  build_seconds: float

def cache_dir() -> pathlib.Path:
  """$MOCKGPU_CACHE or ~/.cache/mockgpu (created)."""
  d = pathlib.Path(os.environ.get("MOCKGPU_CACHE") or pathlib.Path.home() / ".cache" / "mockgpu")
  d.mkdir(parents=True, exist_ok=True)
  return d

@functools.cache
def compiler() -> tuple[list[str], str]:
  """(argv prefix, identity string) of the C compiler: $MOCKGPU_CC or `cc`. Raises BackendUnavailable if missing."""
  cmd = shlex.split(os.environ.get("MOCKGPU_CC", "cc"))
  if not cmd or shutil.which(cmd[0]) is None:
    raise BackendUnavailable(f"C compiler {cmd[0] if cmd else '(empty)'!r} not found; install gcc or clang (apt-get install gcc), "
                             "set MOCKGPU_CC, or run with backend='python'")
  try: ver = subprocess.run(cmd + ["--version"], capture_output=True, text=True, timeout=30).stdout.splitlines()[0]
  except (OSError, subprocess.SubprocessError, IndexError) as e: raise BackendUnavailable(f"C compiler {cmd!r} does not run: {e}") from e
  return cmd, f"{shutil.which(cmd[0])}|{ver}"

KEEP = 12   # libraries kept per arch: several checkouts or versions of mockgpu may share one cache

def prune(arch_name: str, keep: int = KEEP) -> list[pathlib.Path]:
  """Delete all but the `keep` most recently used libraries of `arch_name` (with their sources, metadata and lock files)
  from the cache; a library another process holds open stays valid for it (unlinked files live on). Returns what was removed."""
  d, gone = cache_dir(), []
  libs = sorted(d.glob(f"emu-{arch_name}-*.so"), key=lambda p: p.stat().st_mtime, reverse=True)
  for so in libs[keep:]:
    for f in d.glob(so.name.removesuffix(".so") + ".*"): f.unlink(missing_ok=True); gone.append(f)
  return gone

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

def _key(arch: ArchSpec) -> str:
  cemit, tables = _pcode_emitter()
  from importlib.metadata import version
  own = [*CSRC.glob("*.[ch]"), *(HERE / n for n in ("gen_c.py", "isa.py", "pcinfo.py", "build.py", "buffer.py", "arch.py", "matrix.py", "gen_gfx.py", "image.py", "bvh.py"))]
  parts = [arch.name, arch.family, tables.source_hash(arch.family), cemit.EMITTER_VERSION, cemit.cache_key(arch.family),
           _files_hash(own), compiler()[1], " ".join(CFLAGS), version("tinygrad")]
  return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:20]

def _emit(arch: ArchSpec) -> str:
  cemit, _ = _pcode_emitter()
  return cemit.emit(arch.family)

def build(arch: ArchSpec, force: bool = False) -> Library:
  """The library for `arch`, compiled now if not cached. Safe against concurrent builds (file lock).

  Raises: BackendUnavailable (no compiler, no emitter, compile error with the compiler's first lines of output)."""
  if not arch.c_backend: raise BackendUnavailable(f"arch={arch.name}: the C backend does not support it yet ({arch.notes})")
  from mockgpu.emu.gen_c import generate
  d, key = cache_dir(), _key(arch)
  so, meta = d / f"emu-{arch.name}-{key}.so", d / f"emu-{arch.name}-{key}.json"
  with open(d / f"emu-{arch.name}-{key}.lock", "w") as lk:   # per key: a cached library never waits for another source's build
    fcntl.flock(lk, fcntl.LOCK_EX)
    if so.exists() and meta.exists() and not force:
      m = json.loads(meta.read_text())
      os.utime(so)   # last use: pruning keeps the recently used libraries
      return Library(so, tuple(m["handlers"]), m["hbase"], m["missing"], False, 0.0)
    t0 = time.perf_counter()
    pc = _emit(arch)
    fns = set(re.findall(r"\bvoid\s+(pc_\w+)\s*\(\s*PcState\s*\*", pc))
    gen = generate(arch, pc, fns, chunks=max(2, os.cpu_count() or 2))
    cmd, _ = compiler()
    srcs = []
    for i, text in enumerate(gen.sources):
      srcs.append(d / f"emu-{arch.name}-{key}.{i}.c"); srcs[-1].write_text(text)
    objs = [p.with_suffix(".o") for p in srcs]
    inc = ["-I", str(CSRC), "-I", str(PCODE_DIR)]
    jobs = [subprocess.Popen(cmd + list(CFLAGS) + inc + ["-c", "-o", str(o), str(c)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for c, o in zip(srcs, objs)]
    outs = [(j.wait(), j.stdout.read()) for j in jobs]
    with tempfile.NamedTemporaryFile(dir=d, suffix=".so", delete=False) as tmp: pass
    if all(rc == 0 for rc, _ in outs):
      r = subprocess.run(cmd + ["-shared", "-o", tmp.name, *map(str, objs), "-lm"], capture_output=True, text=True)
      outs.append((r.returncode, r.stdout + r.stderr))
    for o in objs: o.unlink(missing_ok=True)
    if any(rc != 0 for rc, _ in outs):
      os.unlink(tmp.name)
      raise BackendUnavailable(f"compiling the {arch.name} emulator failed ({' '.join(cmd)}): {next(t for rc, t in outs if rc)[:3000]}\n"
                               f"generated sources kept in {d}; report them with the compiler output")
    os.replace(tmp.name, so)
    if not os.environ.get("MOCKGPU_KEEP_SOURCES"):
      for c in srcs: c.unlink()
    meta.write_text(json.dumps({"handlers": gen.handlers, "hbase": gen.hbase, "missing": gen.missing}))
    prune(arch.name)
    return Library(so, gen.handlers, gen.hbase, gen.missing, True, time.perf_counter() - t0)
