# Packaging glue that pyproject.toml cannot express: namespace-portion discovery under the root package and the
# activation .pth file, which must land at the top of site-packages for both `pip install .` and `pip install -e .`.
import os
from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.editable_wheel import editable_wheel

CODE_DIRS = ("pcode", "emu", "mock", "tinygrad", "fixtures")
PTH = "mockgpu-activate.pth"

def packages() -> dict[str, list[str]]:
  """Every folder under the code folders (and fixtures/) as `mockgpu.<path>`, with its non-Python files as package data
  (C sources and headers of the emulator, kernel fixtures)."""
  found = {"mockgpu": []}
  for top in CODE_DIRS:
    for root, dirs, files in os.walk(top):
      dirs[:] = sorted(d for d in dirs if d != "__pycache__")
      found["mockgpu." + root.replace(os.sep, ".")] = sorted(f for f in files if not f.endswith((".py", ".pyc", ".pth")))
  return found

class build_py_with_pth(build_py):
  """Copies the activation hook's .pth next to the package (wheel root = site-packages); leaves setup.py out."""
  def find_package_modules(self, package, package_dir):
    return [m for m in super().find_package_modules(package, package_dir) if not (package == "mockgpu" and m[1] == "setup")]
  def run(self):
    super().run()
    self.copy_file(os.path.join("tinygrad", PTH), os.path.join(self.build_lib, PTH))
  def get_outputs(self, include_bytecode=True):
    return super().get_outputs(include_bytecode) + [os.path.join(self.build_lib, PTH)]

class editable_wheel_with_pth(editable_wheel):
  """Editable wheels bypass build_lib; put the .pth into the unpacked wheel root next to setuptools' own."""
  def _install_namespaces(self, installation_dir, pth_prefix):
    super()._install_namespaces(installation_dir, pth_prefix)
    self.copy_file(os.path.join("tinygrad", PTH), os.path.join(installation_dir, PTH))

setup(packages=list(packages()), package_data={k: v for k, v in packages().items() if v}, cmdclass={"build_py": build_py_with_pth, "editable_wheel": editable_wheel_with_pth})
