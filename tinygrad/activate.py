"""Activation: serve the `test.mockgpu.*` modules tinygrad imports when DEV names a MOCK interface (see docs/activation.md).

The `.pth` file installed with the package calls `install()` at interpreter start when `DEV` contains `MOCK` and `MOCKGPU`
is not `0`. `install()` puts a finder first on `sys.meta_path`; nothing else is imported until tinygrad asks for a shim.
This module must stay cheap: it imports only the standard library.
"""
import importlib, importlib.abc, importlib.machinery, os, sys, types

__all__ = ["SHIMS", "PACKAGES", "MockGPUFinder", "enabled", "install", "uninstall"]

# module tinygrad imports -> (mockgpu module that implements it, names re-exported; "*" = the module's __all__)
# Before the first shim is served, `mockgpu.tinygrad.checks.run` checks tinygrad's version, DEV and the toolchain DEV needs.
SHIMS: dict[str, tuple[str, tuple[str, ...]]] = {
  "test.mockgpu.mockgpu": ("mockgpu.tinygrad.compat.fileio", ("MockFileIOInterface",)),
  "test.mockgpu.usb": ("mockgpu.tinygrad.compat.usb", ("MockUSB3",)),
  "test.mockgpu.cuda.cuda": ("mockgpu.tinygrad.compat.cuda", ("*",)),
  "test.mockgpu.amd.emu": ("mockgpu.tinygrad.compat.amd_emu", ("*",)),
}
# shims that compile nothing: checked for the tinygrad version and DEV only (tinygrad's test/amd assembles its own code)
NO_TOOLCHAIN = ("test.mockgpu.amd.emu",)
# synthetic packages on the way to the shims; `test` itself only when no other finder provides one
PACKAGES = ("test.mockgpu", "test.mockgpu.cuda", "test.mockgpu.amd")

def enabled(env=os.environ) -> bool:
  """True when `DEV` names a MOCK interface and `MOCKGPU` is not "0"."""
  return env.get("MOCKGPU", "1") != "0" and "MOCK" in env.get("DEV", "")

class _ShimLoader(importlib.abc.Loader):
  def __init__(self, target:str|None, names:tuple[str, ...]): self.target, self.names = target, names
  def create_module(self, spec): return None
  def exec_module(self, module):
    if self.target is None: return
    from mockgpu.tinygrad.checks import run
    run(toolchain=module.__name__ not in NO_TOOLCHAIN)
    impl = importlib.import_module(self.target)
    module.__doc__ = f"mockgpu shim for tinygrad: re-exports {self.target}"
    if hasattr(impl, "__getattr__"): module.__getattr__ = impl.__getattr__
    names = tuple(impl.__all__) if self.names == ("*",) else self.names
    for n in names: setattr(module, n, getattr(impl, n))
    module.__all__ = list(names)

class MockGPUFinder(importlib.abc.MetaPathFinder):
  """Meta-path finder serving `test.mockgpu`, `test.mockgpu.mockgpu`, `test.mockgpu.usb`, `test.mockgpu.cuda[.cuda]`,
  `test.mockgpu.amd[.emu]` from mockgpu, and a synthetic `test` package only if no other finder can import one."""
  def find_spec(self, fullname, path=None, target=None):
    if fullname == "test":
      if any(f.find_spec(fullname, path) for f in sys.meta_path if f is not self and hasattr(f, "find_spec")): return None
      return self._spec(fullname, None, (), package=True)
    if fullname in PACKAGES: return self._spec(fullname, None, (), package=True)
    if fullname in SHIMS: return self._spec(fullname, *SHIMS[fullname], package=False)
    return None
  @staticmethod
  def _spec(name, impl, names, package):
    spec = importlib.machinery.ModuleSpec(name, _ShimLoader(impl, names), origin="mockgpu", is_package=package)
    if package: spec.submodule_search_locations = []
    return spec

def install() -> MockGPUFinder:
  """Install the finder first on `sys.meta_path` (idempotent).

  Returns:
    The installed finder.
  """
  for f in sys.meta_path:
    if isinstance(f, MockGPUFinder): return f
  sys.meta_path.insert(0, finder:=MockGPUFinder())
  return finder

def uninstall() -> None:
  """Remove the finder and forget the shim modules it served (tests use this)."""
  sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, MockGPUFinder)]
  for name in [*SHIMS, *PACKAGES]:
    if isinstance(sys.modules.get(name), types.ModuleType) and getattr(sys.modules[name], "__spec__", None) \
       and sys.modules[name].__spec__.origin == "mockgpu": del sys.modules[name]
