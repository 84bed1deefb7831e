"""The `mockgpu` command line as a user meets it: --version, usage errors (exit 2, one line, no traceback), help text on every
option of every subcommand, arch names, the fuzz progress line only on a terminal, and the fuzz extra named when missing."""
import argparse, io, os, platform, subprocess, sys
import pytest
import mockgpu
from mockgpu.__main__ import main, COMMANDS

def cli(*args, **env) -> subprocess.CompletedProcess:
  full = {k: v for k, v in os.environ.items() if k not in ("DEV", "MOCKGPU")} | env
  return subprocess.run([sys.executable, "-m", "mockgpu", *args], env=full, capture_output=True, text=True, timeout=300, cwd="/")

def test_version_names_mockgpu_tinygrad_and_python():
  from importlib.metadata import version
  p = cli("--version")
  assert p.returncode == 0 and p.stdout == f"mockgpu {mockgpu.__version__}, tinygrad {version('tinygrad')}, Python {platform.python_version()}\n"

def test_no_command_is_a_usage_error(capsys):
  assert main([]) == 2
  out = capsys.readouterr()
  assert out.out == "" and out.err.startswith("usage: mockgpu COMMAND") and out.err.endswith("mockgpu: give a COMMAND\n")
  assert main(["--help"]) == 0 and capsys.readouterr().out.startswith("usage: mockgpu COMMAND")

@pytest.mark.parametrize("args,err", [
  (("bench", "--reps", "0"), "mockgpu bench: error: argument --reps: '0' is not a positive integer"),
  (("emu", "bench", "--reps", "-1"), "mockgpu emu bench: error: argument --reps: '-1' is not a positive integer"),
  (("emu", "run", "k.bin", "--buffer", "-4"), "mockgpu emu run: error: argument --buffer: '-4': a buffer needs at least one byte"),
  (("emu", "run", "k.bin", "--grid", "0,1"), "mockgpu emu run: error: argument --grid: '0,1': expected up to three positive integers, e.g. 4,8"),
  (("fuzz", "idiv", "--jobs", "0"), "mockgpu fuzz: error: argument --jobs: '0' is not a positive integer"),
  (("fuzz", "idiv", "--time", "nan0"), "mockgpu fuzz: error: argument --time: 'nan0' is not a positive number"),
  (("pcode", "show", "gfx9", "X"), "mockgpu pcode show: error: argument arch: unknown arch 'gfx9': use an ISA family (rdna3, rdna4, cdna) or a GPU arch"),
  (("emu", "fidelity", "--arch", "gfx1"), "mockgpu emu fidelity: unknown arch 'gfx1': use gfx1100, gfx1201, gfx950, gfx942 or a family (rdna3, rdna4, cdna)"),
  (("emu", "fixtures"), "mockgpu emu fixtures: error: the following arguments are required: --out"),
  (("gemm", "wmma_gfx1100", "--shape", "64x64"), "mockgpu gemm: error: argument --shape: '64x64': expected MxNxK, e.g. 64x64x128"),
  (("gemm", "wmma_gfx1100", "--dtype", "f16"), "mockgpu gemm: error: argument --dtype: 'f16': expected INPUT/ACCUMULATE/OUTPUT, e.g. f16/f32/f32"),
])
def test_bad_values_are_usage_errors(args, err):
  p = cli(*args)
  assert p.returncode == 2 and p.stdout == "" and "Traceback" not in p.stderr, p.stderr
  assert p.stderr.splitlines()[-1].startswith(err), p.stderr

def test_emu_run_missing_file_is_one_line(tmp_path):
  p = cli("emu", "run", str(tmp_path / "nosuchfile"))
  assert p.returncode == 2 and p.stderr == f"mockgpu emu run: cannot read {tmp_path / 'nosuchfile'}: No such file or directory\n"

@pytest.mark.parametrize("arch", ["gfx950", "gfx942"])
def test_emu_run_on_cdna_needs_no_wave64_flag(tmp_path, capsys, arch):
  # CDNA has no wave32: a raw kernel runs in wave64 without --wave64 (it once failed with "has no wave32")
  from tinygrad.runtime.autogen.amd.cdna import ins as C
  (k := tmp_path / "k.bin").write_bytes(C.v_mov_b32_e32(C.v[1], 7).to_bytes() + C.s_endpgm().to_bytes())
  assert main(["emu", "run", str(k), "--arch", arch, "--block", "64", "--vgprs", "2"]) == 0
  v1 = next(l for l in capsys.readouterr().out.splitlines() if l.startswith("v1 "))
  assert v1.split()[1:] == ["00000007"] * 64

def test_emu_run_maps_exactly_the_buffer_bytes(tmp_path, capsys):
  # --buffer 5 maps 5 bytes: a 2-byte store at offset 4 faults, at offset 3 it lands (bytes 3..4 of buf0)
  from tinygrad.runtime.autogen.amd.rdna3 import ins as I
  for off, rc in ((4, 1), (3, 0)):
    (k := tmp_path / "k.bin").write_bytes(b"".join(i.to_bytes() for i in (I.v_mov_b32_e32(I.v[1], 0), I.v_mov_b32_e32(I.v[2], 0x0403),
                                       I.global_store_b16(addr=I.v[1], data=I.v[2], saddr=I.s[0:1], offset=off), I.s_endpgm())))
    assert main(["emu", "run", str(k), "--block", "1", "--buffer", "5"]) == rc
    cap = capsys.readouterr()
    assert ("offset=+0x4" in cap.err) if rc else cap.out.splitlines()[-1] == "buf0: 03000000 00000004"

class _Grab(Exception): pass

def _parsers(cmd:str, monkeypatch) -> list[argparse.ArgumentParser]:
  """The parser `mockgpu CMD` builds and all its subparsers (parse_args is intercepted, nothing runs)."""
  got = []
  def grab(self, *a, **k):
    got.append(self)
    raise _Grab
  monkeypatch.setattr(argparse.ArgumentParser, "parse_args", grab)
  with pytest.raises(_Grab): main([cmd])
  todo, out = list(got), []
  while todo:
    p = todo.pop()
    out.append(p)
    for a in p._actions:
      if isinstance(a, argparse._SubParsersAction):
        helped = {c.dest for c in a._choices_actions if c.help}
        assert helped == set(a.choices), f"{p.prog}: subcommands without help: {set(a.choices) - helped}"
        todo += list(a.choices.values())
  return out

@pytest.mark.parametrize("cmd", list(COMMANDS))
def test_every_option_has_help(cmd, monkeypatch):
  for p in _parsers(cmd, monkeypatch):
    bare = [a.option_strings[0] if a.option_strings else a.dest for a in p._actions
            if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)) and not a.help]
    assert not bare, f"{p.prog}: options without help text: {bare}"

@pytest.mark.parametrize("gfx,family", [("gfx1100", "rdna3"), ("gfx1201", "rdna4"), ("gfx950", "cdna"), ("cdna", "cdna")])
def test_pcode_takes_gpu_arch_names(gfx, family, capsys):
  assert main(["pcode", "show", gfx, "SOPPOp_S_NOP"]) == 0
  assert capsys.readouterr().out.startswith(f"// {family} SOPPOp_S_NOP\n")

class _Tty(io.StringIO):
  def isatty(self): return True

@pytest.mark.parametrize("stream,shown", [(io.StringIO, False), (_Tty, True)])
def test_fuzz_progress_line_only_on_a_terminal(stream, shown, monkeypatch, capsys, tmp_path):
  monkeypatch.setattr(sys, "stderr", err:=stream())
  assert main(["fuzz", "symbolic", "--cases", "3", "--out", str(tmp_path)]) == 0
  assert ("\rsymbolic: " in err.getvalue()) is shown, repr(err.getvalue())
  assert "fuzz symbolic: seed=0" in capsys.readouterr().out

@pytest.mark.parametrize("kind,blocked,dist", [("symbolic", "z3", "z3-solver"), ("oob", "z3", "z3-solver"), ("render", "unicorn", "unicorn")])
def test_fuzz_names_the_extra_when_its_modules_are_missing(kind, blocked, dist, tmp_path):
  code = f"import sys; sys.modules[{blocked!r}] = None\nfrom mockgpu.__main__ import main\nsys.exit(main(['fuzz', {kind!r}, '--cases', '1']))"
  p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path)
  assert p.returncode == 2 and p.stderr == f"mockgpu fuzz: fuzzer kind={kind!r} needs {dist}, not installed: pip install 'mockgpu[fuzz]'\n", p.stderr
  assert not (tmp_path / "fuzz-failures").exists()

def test_fuzz_render_without_a64_executors_needs_no_unicorn(monkeypatch):
  from mockgpu.tinygrad.fuzz.registry import require
  from mockgpu.tinygrad.fuzz.errors import MissingExtra
  monkeypatch.setitem(sys.modules, "unicorn", None)
  with pytest.raises(MissingExtra): require("render", {"executors": ["PYTHON", "CLANG-A64"]})
  require("render", {"executors": ["PYTHON", "CLANG"]})   # nothing raised: unicorn only runs the *-A64 executors
  require("idiv")
