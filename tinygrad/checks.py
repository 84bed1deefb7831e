"""Checks run when tinygrad first imports a mockgpu shim (docs/activation.md "Checks"): the installed tinygrad is the one
mockgpu serves, DEV names what mockgpu emulates in the syntax tinygrad reads, and the toolchain the DEV needs is there
(libLLVM, LLVM >= 20 for gfx950, a C compiler). A failure is one `ActivationError` line that names the fix; uncaught in a
script it prints as that one line (`one_line_excepthook`), not as the traceback through tinygrad's imports.

Importing this module costs only the standard library; tinygrad and mockgpu's layers are imported by the checks that need them.
"""
from __future__ import annotations
import ctypes, glob, importlib.metadata, importlib.util, os, re, sys, sysconfig
from dataclasses import replace

__all__ = ["tinygrad_version", "check_tinygrad", "check_target", "check_toolchain", "check_firmware", "run", "find_libllvm", "MIN_LLVM"]

# arch -> first LLVM release whose AMDGPU backend knows it; older ones abort inside LLVM while compiling the first kernel
MIN_LLVM = {"gfx950": 20, "gfx942": 17}   # LLVM 14 and 15 warn "not a recognized processor" for gfx942 and emit generic code
_passed: set[str] = set()

def _fail(msg:str):
  from mockgpu.tinygrad.errors import ActivationError
  if sys.excepthook is sys.__excepthook__: sys.excepthook = one_line_excepthook
  raise ActivationError(msg)

def one_line_excepthook(tp, e, tb) -> None:
  """sys.excepthook installed when a check fails (only if nobody installed one): an uncaught `ActivationError` prints as one
  line `mockgpu.tinygrad.errors.ActivationError: <message>`; every other exception as Python prints it."""
  from mockgpu.tinygrad.errors import ActivationError
  if isinstance(e, ActivationError): print(f"{tp.__module__}.{tp.__qualname__}: {e}", file=sys.stderr)
  else: sys.__excepthook__(tp, e, tb)

def tinygrad_version() -> tuple[str|None, str|None]:
  """The tinygrad Python imports, found without importing it.

  Returns:
    (version, package directory). The version is the installed distribution's that owns the directory, else a checkout's
    setup.py version, else None; the directory is None when tinygrad is not importable.
  """
  try: spec = importlib.util.find_spec("tinygrad")
  except (ImportError, ValueError): spec = None
  if spec is None or not spec.submodule_search_locations: return None, None
  pkg = os.path.abspath(next(iter(spec.submodule_search_locations)))
  for d in importlib.metadata.distributions(name="tinygrad"):
    if os.path.abspath(str(d.locate_file("tinygrad"))) == pkg: return d.version, pkg
  try: m = re.search(r"""\bversion\s*=\s*['"]([^'"]+)['"]""", open(os.path.join(os.path.dirname(pkg), "setup.py")).read())
  except OSError: m = None
  return (m.group(1) if m else None), pkg

def check_tinygrad() -> None:
  """Raises ActivationError when the tinygrad being imported is not the version mockgpu serves (`mockgpu.TINYGRAD_VERSION`)."""
  from mockgpu import TINYGRAD_VERSION, __version__
  ver, pkg = tinygrad_version()
  if ver is not None and ver != TINYGRAD_VERSION:
    _fail(f"mockgpu {__version__} serves tinygrad {TINYGRAD_VERSION}, but tinygrad {ver} is imported from {pkg} (other versions use the "
          f"mock differently and give false results): pip install tinygrad=={TINYGRAD_VERSION}")

def _dev(t) -> str:
  """`t` as the user spelled it in $DEV if it is there (tinygrad upper-cases the renderer), else tinygrad's spelling."""
  from tinygrad.helpers import Target
  for raw in os.environ.get("DEV", "").split(";"):
    try:
      if Target.parse(raw) == t: return f"DEV={raw}"
    except RuntimeError: pass
  return f"DEV={t!r}"

def check_target(t) -> None:
  """Raises ActivationError when a MOCK target of DEV (a tinygrad `Target`) names an arch in the renderer field (one colon too
  few) or an AMD arch mockgpu has no GPU for."""
  if t.device != "AMD": return
  from mockgpu.mock.profiles import PROFILES
  if re.fullmatch(r"GFX[0-9A-F]+", t.renderer):
    _fail(f"{_dev(t)}: tinygrad reads DEV as [INTERFACE+]DEVICE:RENDERER:ARCH, so {t.renderer.lower()} is taken as a renderer name; "
          f"put the arch in the third field: DEV={replace(t, renderer='', arch=t.renderer.lower())!r}")
  if t.arch and t.arch not in PROFILES:
    _fail(f"{_dev(t)}: mockgpu emulates no {t.arch} GPU; the emulated AMD archs are {', '.join(PROFILES)} "
          f"(e.g. DEV={replace(t, arch=next(iter(PROFILES)))!r})")

def _llvm_version(path:str) -> tuple[int, str]:
  """(major, printable version) of the libLLVM at `path`; LLVMGetVersion exists from LLVM 16 on, older ones are named by file."""
  try: f = ctypes.CDLL(path).LLVMGetVersion
  except AttributeError:
    m = re.search(r"LLVM(?:-|\.so\.)(\d+)", os.path.basename(path))
    return (int(m.group(1)), m.group(1)) if m else (0, "older than 16")
  v = [ctypes.c_uint() for _ in range(3)]
  f(*map(ctypes.byref, v))
  return v[0].value, ".".join(str(x.value) for x in v)

def find_libllvm(need:int, dirs:list[str]|None=None) -> str|None:
  """The newest libLLVM of major version >= `need` (for LLVM_PATH; tinygrad's gfx950 backend needs 20), or None.

  Args:
    dirs: where to look; default: LD_LIBRARY_PATH, the directories tinygrad searches (/usr/lib..., /lib/<multiarch>) and
      Debian's /usr/lib/llvm-*/lib. Names `libLLVM.so.N[.M]` and `libLLVM-N.so` count; among equal versions the
      `libLLVM.so.N` name, then the shorter path, wins.
  """
  if dirs is None:
    multiarch = sysconfig.get_config_var("MULTIARCH")
    dirs = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if d] + \
           ["/usr/lib64", "/usr/lib", "/usr/local/lib", "/lib", "/lib64", f"/lib/{multiarch}", f"/usr/lib/{multiarch}", *glob.glob("/usr/lib/llvm-*/lib")]
  found = sorted(((int(m.group(1)), os.path.basename(p).startswith("libLLVM.so."), -len(p), p) for d in dirs for p in glob.glob(os.path.join(d, "libLLVM*.so*"))
                  if (m:=re.fullmatch(r"libLLVM(?:-|\.so\.)(\d+)(?:\.so)?(?:\.\d+)*", os.path.basename(p))) and int(m.group(1)) >= need
                  and os.path.isfile(p)), reverse=True)
  return found[0][-1] if found else None

def check_toolchain(t) -> None:
  """Raises ActivationError when a MOCK target of DEV lacks what it needs on this machine: the C compiler mockgpu builds its
  emulators with (AMD, NV, CUDA), and for AMD kernels compiled by LLVM a loadable libLLVM, of version >= MIN_LLVM[arch]."""
  if t.device not in ("AMD", "NV", "CUDA"): return
  from mockgpu.cbuild import compiler
  from mockgpu.errors import BuildError
  try: compiler()
  except BuildError as e:
    cc = os.environ.get("MOCKGPU_CC") or "cc"
    _fail(f"{_dev(t)}: mockgpu builds its GPU emulator from generated C and has no C compiler ({cc!r} from "
          f"{'$MOCKGPU_CC' if os.environ.get('MOCKGPU_CC') else 'the default cc'} {'is not found' if 'not found' in str(e) else 'does not run'}): "
          "install one (apt install gcc) or set MOCKGPU_CC to a C compiler")
  if t.device != "AMD" or t.renderer not in ("", "LLVM"): return
  from tinygrad.runtime.support.c import DLL
  if t.renderer == "":   # tinygrad tries HIPRenderer first: with ROCm's comgr it compiles without libLLVM
    from tinygrad.runtime.autogen import comgr
    if comgr.dll.nm in DLL._loaded_: return
  from tinygrad.runtime.autogen import llvm
  if llvm.dll.nm not in DLL._loaded_:
    lp = os.environ.get("LLVM_PATH", "")
    why = f"LLVM_PATH={lp} does not load: {llvm.dll.emsg}" if lp and os.path.isfile(lp) else \
          f"no libLLVM found{f' (LLVM_PATH={lp} is not a file)' if lp else ''}"
    _fail(f"{_dev(t)}: tinygrad compiles AMD kernels with libLLVM and {why}: apt install libllvm19, or set LLVM_PATH to a libLLVM.so")
  arch = _arch(t)
  if (need:=MIN_LLVM.get(arch)) is not None and (have:=_llvm_version(llvm.dll._name))[0] < need:
    fix = f"set LLVM_PATH={p}" if (p:=find_libllvm(need)) else \
          f"apt install libllvm22 and set LLVM_PATH=/usr/lib/{sysconfig.get_config_var('MULTIARCH')}/libLLVM.so.22.1"
    _fail(f"{_dev(t)}: {arch} needs LLVM >= {need}, but tinygrad loads LLVM {have[1]} ({llvm.dll._name}): {fix}")

def _arch(t) -> str:
  from mockgpu.mock.profiles import mock_arch
  return mock_arch(t.interface, t.arch)

def check_firmware(t) -> None:
  """Raises ActivationError when tinygrad's AM driver (MOCKPCI+AMD, MOCKUSB+AMD) would need a firmware blob that is not in its
  cache with the pinned sha256: offline, tinygrad's fetch_fw would fail deep inside the boot. MOCKGPU_FIRMWARE=fetch skips
  the check (online, tinygrad downloads the blobs itself)."""
  if t.device != "AMD" or t.interface not in ("MOCKPCI", "MOCKUSB") or os.environ.get("MOCKGPU_FIRMWARE") == "fetch": return
  from mockgpu.mock.profiles import PROFILES
  from mockgpu.tinygrad.firmware import OK, blobs_for, resolve
  if (p:=PROFILES.get(arch:=_arch(t))) is None: return   # check_target names the arch
  if missing:=[b for b in resolve(blobs_for(p), [], write=False) if b.status not in OK]:
    where = next((b.cache.parent for b in missing if b.cache is not None), None)
    _fail(f"{_dev(t)}: tinygrad's AM driver loads firmware {', '.join(f'{b.name} (sha256 {b.sha256[:12]}...)' for b in missing)} for {arch}, "
          f"not in tinygrad's cache{f' {where}' if where else ''}: install it offline from linux-firmware blobs with "
          f"`mockgpu firmware --chip {arch} --from DIR|--deb firmware-amd-graphics_*.deb` (hash-checked), or online let tinygrad download "
          "it itself with MOCKGPU_FIRMWARE=fetch")

def run(toolchain:bool=True) -> None:
  """All checks for the MOCK targets of tinygrad's DEV, once per process (a failed check runs again at the next shim import).

  Args:
    toolchain: also check compilers and libraries (False for shims that compile nothing, e.g. tinygrad's run_asm).
  Raises:
    ActivationError: the first failed check.
  """
  if "dev" not in _passed:
    check_tinygrad()
    from tinygrad.helpers import DEV
    for t in DEV.value:
      if t.interface.startswith("MOCK"): check_target(t)
    for t in DEV.value:
      if t.interface.startswith("MOCK"): check_firmware(t)
    _passed.add("dev")
  if toolchain and "toolchain" not in _passed:
    from tinygrad.helpers import DEV
    for t in DEV.value:
      if t.interface.startswith("MOCK"): check_toolchain(t)
    _passed.add("toolchain")
