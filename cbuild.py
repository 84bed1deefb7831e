"""The one compile-and-cache service for every C library mockgpu generates: the emulator's library per arch
(`emu/build.py`), the PTX engine's modules (`mock/ptx/engine.py`) and the pcode test harness (`pcode/cabi.py`). It sits at
the package root, below every layer, so each of them imports it downward.

Compiler: `$MOCKGPU_CC` (an argv prefix, e.g. `clang-19` or `ccache gcc`), else `cc`; nothing else is read (tinygrad's `$CC`
is tinygrad's CPU backend's). Location: `$MOCKGPU_CACHE`, else `$XDG_CACHE_HOME/mockgpu`, else `~/.cache/mockgpu`. An entry
is `<stem>.so` with `<stem>.json` (its stem, size and sha256, plus what the producer returned) and `<stem>.lock`. `key()`
hashes what the caller names plus the compiler's identity (path, version and the CPU features `-march=native` turns on
here), the flags and this module's source, so a cache restored onto another machine never hands it code its CPU cannot run.
`library()`:
* verifies an entry before anyone loads it (metadata of this stem, size, sha256), so a truncated, corrupt or swapped file
  is rebuilt (with one line on stderr saying why) instead of failing in dlopen forever or killing the process with SIGBUS;
* builds under the entry's file lock (parallel processes and xdist workers build once) into a temporary file that is renamed
  over the entry, metadata last, so a reader sees the old library or the new one, never half of one;
* announces a build with one stderr line when the caller passes `announce` (the emulator: ~30 s; others are quiet).
`shared_library()` is the whole path (key, generate, compile in parallel, link, cache, prune) in one call."""
from __future__ import annotations
import fcntl, functools, hashlib, json, os, pathlib, platform, re, shlex, shutil, subprocess, sys, tempfile, time
from typing import Callable, Sequence
from mockgpu.errors import BuildError

__all__ = ["cache_dir", "compiler", "key", "run", "run_all", "compile_c", "library", "shared_library", "verify", "prune", "module_files", "atomic_write", "CC_ENV"]

CC_ENV = "MOCKGPU_CC"   # the one variable that selects the C compiler
STALE_S = 6 * 3600      # a temporary, object or library-less source or lock file this old in the cache belongs to a build that died
def cache_dir() -> pathlib.Path:
  """$MOCKGPU_CACHE, else $XDG_CACHE_HOME/mockgpu, else ~/.cache/mockgpu (created)."""
  if (d:=os.environ.get("MOCKGPU_CACHE")): p = pathlib.Path(d)
  elif (x:=os.environ.get("XDG_CACHE_HOME")) and os.path.isabs(x): p = pathlib.Path(x) / "mockgpu"   # the XDG spec ignores relative paths
  else: p = pathlib.Path.home() / ".cache" / "mockgpu"
  p.mkdir(parents=True, exist_ok=True)
  return p

@functools.cache
def compiler() -> tuple[list[str], str]:
  """(argv prefix, identity) of the C compiler: $MOCKGPU_CC or `cc`. The identity names its path and version and hashes the
  macros `-march=native` defines on this host (the CPU's instruction-set features). Raises BuildError if it is missing."""
  cmd = shlex.split(os.environ.get(CC_ENV, "cc"))
  if not cmd or shutil.which(cmd[0]) is None:
    raise BuildError(f"C compiler {cmd[0] if cmd else '(empty)'!r} not found; install gcc or clang (apt-get install gcc), "
                             "set MOCKGPU_CC, or run with backend='python'")
  try: ver = subprocess.run(cmd + ["--version"], capture_output=True, text=True, timeout=60).stdout.splitlines()[0]
  except (OSError, subprocess.SubprocessError, IndexError) as e: raise BuildError(f"C compiler {cmd!r} does not run: {e}") from e
  try: native = subprocess.run(cmd + ["-march=native", "-E", "-dM", "-x", "c", os.devnull], capture_output=True, text=True, timeout=60).stdout
  except (OSError, subprocess.SubprocessError): native = ""
  if not native.strip():   # a compiler without -march=native: the kernel's view of the CPU
    try: native = next((l for l in open("/proc/cpuinfo") if l.startswith(("flags", "Features"))), "")
    except OSError: native = ""
  feat = hashlib.sha256(f"{platform.machine()}\n{native}".encode()).hexdigest()[:16]
  return cmd, f"{shutil.which(cmd[0])}|{ver}|{platform.machine()} features {feat}"

def key(parts:Sequence[str], cflags:Sequence[str], n:int=20) -> str:
  """A cache key: sha256 of `parts` (every input the caller's library depends on: sources, generator versions), the
  compiler's identity, `cflags` and this module's source, `n` hex digits."""
  return hashlib.sha256("\0".join([*parts, compiler()[1], " ".join(cflags), _OWN]).encode()).hexdigest()[:n]
_OWN = pathlib.Path(__file__).read_text()   # read once: key() runs at every new kernel's first dispatch

def run(argv:list[str]) -> tuple[int, str]:
  """Run a compiler command, reading its output while it runs (a chatty compiler never blocks on a full pipe). Returns
  (return code, stdout+stderr)."""
  return run_all([argv])[0]

def run_all(argvs:list[list[str]]) -> list[tuple[int, str]]:
  """Run commands in parallel; each one's output is drained to its end in turn, so none can block on a full pipe for long
  (one waits only until its turn comes). Returns (return code, stdout+stderr) per command."""
  jobs = [subprocess.Popen(a, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace") for a in argvs]
  outs = [j.communicate()[0] for j in jobs]
  return [(j.returncode, out) for j, out in zip(jobs, outs)]

def compile_c(out:pathlib.Path, stem:str, sources:Sequence[str], cflags:Sequence[str], include:Sequence[str|os.PathLike]=(),
              what:str="the library", libs:Sequence[str]=("-lm",)):
  """Compile `sources` (C texts, one translation unit each, in parallel) with `cflags` and link them into the shared library
  `out`. The texts are written to `<cache>/<stem>.<i>.c` and removed after a good build unless $MOCKGPU_KEEP_SOURCES is set.

  Raises: BuildError naming `what`, the compiler command and its first output lines; the sources stay in the cache then."""
  d, (cmd, _) = cache_dir(), compiler()
  srcs = [d / f"{stem}.{i}.c" for i in range(len(sources))]
  for p, text in zip(srcs, sources): p.write_text(text)
  objs = [p.with_suffix(".o") for p in srcs]
  inc = [a for i in include for a in ("-I", str(i))]
  outs = run_all([cmd + [*cflags, "-fPIC", *inc, "-c", "-o", str(o), str(c)] for c, o in zip(srcs, objs)])
  if all(rc == 0 for rc, _ in outs): outs.append(run(cmd + ["-shared", "-o", str(out), *map(str, objs), *libs]))
  for o in objs: o.unlink(missing_ok=True)
  if any(rc != 0 for rc, _ in outs):
    raise BuildError(f"compiling {what} failed ({' '.join(cmd)}): {next(t for rc, t in outs if rc)[:3000]}\n"
                     f"generated sources kept in {d} ({stem}.*.c); report them with the compiler output")
  if not os.environ.get("MOCKGPU_KEEP_SOURCES"):
    for c in srcs: c.unlink()

def shared_library(prefix:str, parts:Sequence[str], cflags:Sequence[str], generate:Callable[[], tuple[Sequence[str], dict]],
                   keep:int, include:Sequence[str|os.PathLike]=(), what:str="the library", announce:str|None=None,
                   force:bool=False) -> tuple[pathlib.Path, dict, bool]:
  """The cached library `<prefix><key>.so`, generated and compiled now if it is missing, damaged or `force`d; after a build
  all but the `keep` most recently used libraries named `<prefix>*` are pruned.

  Args: prefix: the entry family (e.g. "emu-gfx1100-"). parts: every input the generated C depends on (hashed with the
    compiler and `cflags` by `key`; headers under `include` belong in it too). generate: returns (C translation units,
    JSON-able metadata); called only for a build. keep: entries of this family kept. include: -I directories (not hashed:
    paths differ between checkouts). what: names the library in errors. announce: one stderr line while it builds.
  Returns: (path, metadata, True if built by this call). Raises: BuildError (no compiler, compile error), or what `generate` raises."""
  stem = prefix + key(parts, cflags)
  def produce(out:pathlib.Path) -> dict:
    sources, info = generate()
    compile_c(out, stem, sources, cflags, include, what)
    return info
  so, m, built = library(stem, produce, announce=announce, force=force)
  if built: prune(prefix, keep)
  return so, m, built

def _sha256(p:pathlib.Path) -> str:
  h = hashlib.sha256()
  with open(p, "rb") as f:
    while (b:=f.read(1 << 20)): h.update(b)
  return h.hexdigest()

def verify(stem:str) -> tuple[dict|None, str]:
  """(metadata, "") if the cache entry `stem` is whole, else (None, why); why is "" when there is no entry at all."""
  d = cache_dir()
  so, meta = d / f"{stem}.so", d / f"{stem}.json"
  if not so.exists() and not meta.exists(): return None, ""
  try: m = json.loads(meta.read_text())
  except (OSError, ValueError) as e: return None, f"without readable metadata ({meta.name}: {type(e).__name__})"
  if not isinstance(m, dict) or m.get("stem") != stem:
    return None, f"described by metadata of another library ({m.get('stem') if isinstance(m, dict) else type(m).__name__})"
  try: size = so.stat().st_size
  except OSError: return None, "missing"
  if size != m.get("size"): return None, f"truncated or replaced ({size} bytes, {m.get('size')} recorded at build)"
  try: digest = _sha256(so)
  except OSError: return None, "missing"   # pruned by another process meanwhile
  if digest != m.get("sha256"): return None, "corrupt (its sha256 differs from the one recorded at build)"
  return m, ""

def _touch(so:pathlib.Path) -> bool:
  """Mark a library used (pruning keeps the recently used); False if another process pruned it meanwhile."""
  try: os.utime(so)
  except FileNotFoundError: return False
  return True

def atomic_write(p:pathlib.Path, text:str):   # through a temporary file and a rename: readers see the old or the new file, whole
  fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=p.name + ".", suffix=".tmp")
  with os.fdopen(fd, "w") as f: f.write(text)
  os.replace(tmp, p)

def library(stem:str, produce:Callable[[pathlib.Path], dict], announce:str|None=None, force:bool=False) -> tuple[pathlib.Path, dict, bool]:
  """The verified library `<cache>/<stem>.so`, produced now if it is missing, damaged or `force`d.

  Args: stem: the entry's name, which must hash every input of the library. produce: writes the library to the given path
    (a temporary file) and returns JSON-able metadata, or raises. announce: what one stderr line says while it builds.
  Returns: (path, metadata, True if built by this call). Raises: whatever `produce` raises (nothing is cached then)."""
  d = cache_dir()
  so, meta = d / f"{stem}.so", d / f"{stem}.json"
  if not force and (m:=verify(stem)[0]) is not None and _touch(so): return so, m, False
  with open(d / f"{stem}.lock", "w") as lk:   # per stem: a cached library never waits for another one's build
    fcntl.flock(lk, fcntl.LOCK_EX)
    m, why = verify(stem)
    if m is not None and not force and _touch(so): return so, m, False   # another process built it while this one waited
    if why: print(f"mockgpu: the cached library {so} is {why}; rebuilding it", file=sys.stderr, flush=True)
    if announce: print(f"mockgpu: {announce}", file=sys.stderr, flush=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=f"{stem}.", suffix=".so.tmp")
    os.close(fd)
    try:
      info = produce(pathlib.Path(tmp))
      m = {**info, "stem": stem, "size": os.path.getsize(tmp), "sha256": _sha256(pathlib.Path(tmp))}
      os.replace(tmp, so)
    finally:
      if os.path.exists(tmp): os.unlink(tmp)
    atomic_write(meta, json.dumps(m))
  return so, m, True

def prune(prefix:str, keep:int) -> list[pathlib.Path]:
  """Delete all but the `keep` most recently used libraries named `<prefix>*.so`, with every file of their stem (metadata,
  lock, sources), and any temporary, object or library-less source or lock file older than STALE_S (a build that died). A library another process holds open
  stays valid for it (unlinked files live on). Returns what was removed."""
  d, gone = cache_dir(), []
  def used(p:pathlib.Path) -> float:
    try: return p.stat().st_mtime
    except OSError: return 0.0   # pruned by another process meanwhile
  libs = sorted(d.glob(f"{prefix}*.so"), key=used, reverse=True)
  for so in libs[keep:]:
    for f in d.glob(so.name.removesuffix(".so") + ".*"):
      f.unlink(missing_ok=True)
      gone.append(f)
  orphans = (c for c in (*d.glob("*.c"), *d.glob("*.lock")) if not (d / f"{c.name.split('.')[0]}.so").exists())   # a build that never finished
  for f in (*d.glob("*.tmp"), *d.glob("*.o"), *orphans):   # left by a process that died mid-build (a daemon thread's at exit)
    if 0 < used(f) < time.time() - STALE_S: f.unlink(missing_ok=True); gone.append(f)
  return gone

# import statements, anywhere in a module (inside functions too): `from [.]base import names` (names maybe in parentheses or
# continued with backslashes) or `import a.b [as c], d`; a match inside a string only adds a file to the hash
_IMPORTS = re.compile(r"^[ \t]*(?:from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|(?:[^\n#\\]|\\\n)+)|import[ \t]+((?:[^\n#\\]|\\\n)+))", re.M)

def module_files(roots:Sequence[str]) -> list[pathlib.Path]:
  """The files of the mockgpu modules `roots` and of every mockgpu module they import, transitively (import statements anywhere
  in a module, also inside functions): what a generator's cache key hashes, so a module it starts to import is covered without
  a list to keep by hand. Read as text and resolved to files under this package: nothing is imported (this runs in every
  process before its first dispatch)."""
  root = pathlib.Path(__file__).parent   # the mockgpu package
  def path_of(name:str) -> pathlib.Path|None:
    if name != "mockgpu" and not name.startswith("mockgpu."): return None
    p = root.joinpath(*name.split(".")[1:])
    if (p / "__init__.py").is_file(): return p / "__init__.py"
    return p.with_suffix(".py") if p.with_suffix(".py").is_file() else None
  seen: dict[str, pathlib.Path] = {}
  todo = list(roots)
  while todo:
    name = todo.pop()
    if name in seen or (path := path_of(name)) is None: continue
    seen[name] = path
    pkg = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for rel, base, names, plain in _IMPORTS.findall(path.read_text()):
      items = [x.split()[0] for x in re.split(r"[,\\\n]", (plain or names).strip("()")) if x.strip()]
      if plain: todo += items
      else:
        if rel: base = ".".join(pkg.split(".")[:len(pkg.split(".")) - len(rel) + 1] + ([base] if base else []))
        todo += [base, *(f"{base}.{x}" for x in items)]
  return sorted(set(seen.values()))
