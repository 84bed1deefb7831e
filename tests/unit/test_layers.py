"""The layering of docs/architecture.md, checked on the source: a module imports mockgpu modules of its own layer or of
layers below it (the package root's modules < pcode < emu < mock < tinygrad), at module level and inside functions alike, so errors and
shared services are defined at the lowest layer that uses them."""
import ast, pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
RANK = {"": 0, "pcode": 1, "emu": 2, "mock": 3, "tinygrad": 4}
# the one documented exception: the pcode CLI also accepts a GPU name (gfx1100) and looks its ISA family up in emu's arch table
ALLOWED = {("pcode/cli.py", "mockgpu.emu.arch")}

def _layer(mod:str) -> str:
  """The layer of a mockgpu module or name: a code folder, else "" (the root's modules and names, e.g. TINYGRAD_VERSION)."""
  part = mod.split(".")[1] if mod.count(".") else ""
  return part if part in RANK else ""

def _imports(path:pathlib.Path):
  for node in ast.walk(ast.parse(path.read_text())):
    if isinstance(node, ast.Import): yield from (a.name for a in node.names if a.name.startswith("mockgpu"))
    elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("mockgpu"):
      yield from ([f"{node.module}.{a.name}" for a in node.names] if node.module == "mockgpu" else [node.module])

def upward_imports() -> list[str]:
  out = []
  for path in sorted([*ROOT.glob("*.py"), *(p for d in ("pcode", "emu", "mock", "tinygrad") for p in (ROOT / d).rglob("*.py"))]):
    rel = path.relative_to(ROOT).as_posix()
    if rel in ("__main__.py", "__init__.py", "setup.py"): continue   # the CLI dispatcher and the package entry sit above all layers
    own = RANK[rel.split("/")[0] if "/" in rel else ""]
    out += [f"{rel} imports {m}" for m in _imports(path) if RANK[_layer(m)] > own
            and (rel, m) not in ALLOWED]
  return out

def test_no_module_imports_a_layer_above_its_own():
  assert upward_imports() == []

def test_the_check_sees_an_upward_import(tmp_path):
  p = tmp_path / "m.py"
  p.write_text("def f():\n  from mockgpu.tinygrad.errors import NotSupportedYet\nfrom mockgpu import cbuild\n")
  assert [(m, _layer(m)) for m in _imports(p)] == [("mockgpu.cbuild", ""), ("mockgpu.tinygrad.errors", "tinygrad")]
