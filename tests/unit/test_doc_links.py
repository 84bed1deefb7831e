"""Every document reference resolves: relative markdown links in README.md and docs/, and every `docs/<name>.md` path named
in the docs or in the code (docstrings, comments, messages). A reference to a document outside the repository (such as the
contract notes the project started from, now docs/contracts/) fails here."""
import pathlib, re

ROOT = pathlib.Path(__file__).resolve().parents[2]
CODE = ("pcode", "emu", "mock", "tinygrad", "tests")
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")                       # [text](target)
DOC_PATH = re.compile(r"(?<![\w/.-])((?:\.\./)*docs/[\w./-]+?\.md)\b")   # docs/x.md, docs/contracts/kfd.md

BARE = re.compile(r"(?<![\w/.-])([\w-]+\.md)\b")
CITED = re.compile(r"(?<![\w/.-])(contract-[a-z][\w-]*)(?:\.md)?\b")
NAMES = {p.name for d in ("docs", "tests", *CODE) for p in (ROOT / d).rglob("*.md")} | {p.name for p in ROOT.glob("*.md")}

def docs() -> list[pathlib.Path]: return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
def sources() -> list[pathlib.Path]:
  return [p for p in sorted(p for d in CODE for p in (ROOT / d).rglob("*") if p.suffix in (".py", ".h", ".c", ".md") and p.is_file()) + \
         sorted(ROOT.glob("*.py")) if p != pathlib.Path(__file__).resolve()]

def broken_links() -> list[str]:
  out = []
  for md in docs():
    for target in LINK.findall(md.read_text()):
      if re.match(r"[a-z]+:", target): continue   # http:, https:, mailto:
      if not (md.parent / target).exists(): out.append(f"{md.relative_to(ROOT)}: link {target}")
  return out

def broken_paths() -> list[str]:
  out = []
  for f in docs() + sources():
    text = f.read_text(errors="replace")
    for p in DOC_PATH.findall(text):
      if not (ROOT / p.lstrip("./")).exists() and not (f.parent / p).exists(): out.append(f"{f.relative_to(ROOT)}: {p}")
    # a bare document name ("ptx.md", "contract-kfd.md section 6.2") must be a document of the repository; so must a
    # contract cited without its suffix ("contract-kfd section 8": the notes the project started from, now docs/contracts/)
    out += [f"{f.relative_to(ROOT)}: {n}" for n in BARE.findall(text) + CITED.findall(text) if n.removesuffix(".md") + ".md" not in NAMES]
  return out

def test_relative_links_in_the_docs_resolve():
  assert broken_links() == []

def test_document_paths_named_in_docs_and_code_exist():
  assert broken_paths() == []

def test_the_checks_see_a_missing_document():
  assert DOC_PATH.findall("see docs/contracts/kfd.md section 8 and docs/gone.md.") == ["docs/contracts/kfd.md", "docs/gone.md"]
  assert LINK.findall("[a](contracts/kfd.md#8) [b](https://x.y/z.md)") == ["contracts/kfd.md", "https://x.y/z.md"]
  text = "(contract-kfd.md section 6.2), contract-pci section 4, mock.md"
  assert BARE.findall(text) == ["contract-kfd.md", "mock.md"] and CITED.findall(text) == ["contract-kfd", "contract-pci"]
  assert "mock.md" in NAMES and "contract-kfd.md" not in NAMES
