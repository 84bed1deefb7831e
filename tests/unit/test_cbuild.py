"""The one compile-and-cache service (cbuild.py; the emulator's libraries, the PTX engine's modules, the pcode harness): location, verification
before load, rebuild of damaged entries, one build under a lock with an atomic rename, compiler output drained while it
runs, the host's CPU features in the key, bounded size, and `mockgpu warm-up`."""
import hashlib, json, os, pathlib, stat, subprocess, sys, textwrap
import numpy as np
import pytest
from mockgpu import cbuild
from mockgpu.errors import BuildError
from mockgpu.emu import build

@pytest.fixture
def cache(tmp_path, monkeypatch):
  monkeypatch.setenv("MOCKGPU_CACHE", str(tmp_path))
  return tmp_path

def test_cache_dir_order(tmp_path, monkeypatch):
  monkeypatch.setenv("HOME", str(tmp_path / "home"))
  for var in ("MOCKGPU_CACHE", "XDG_CACHE_HOME"): monkeypatch.delenv(var, raising=False)
  assert cbuild.cache_dir() == tmp_path / "home" / ".cache" / "mockgpu"
  monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")   # the XDG spec: relative paths are invalid
  assert cbuild.cache_dir() == tmp_path / "home" / ".cache" / "mockgpu"
  monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
  assert cbuild.cache_dir() == tmp_path / "xdg" / "mockgpu"
  monkeypatch.setenv("MOCKGPU_CACHE", str(tmp_path / "mine"))
  assert cbuild.cache_dir() == tmp_path / "mine" and (tmp_path / "mine").is_dir()

def _producer(calls, payload=b"\x7fELF library bytes"):
  def produce(out):
    assert out.exists() and not out.name.endswith(".so")   # a temporary file next to the entry, renamed over it afterwards
    calls.append(out)
    out.write_bytes(payload)
    return {"note": "mine"}
  return produce

def test_build_once_announce_and_verify(cache, capsys):
  calls = []
  so, m, built = cbuild.library("lib-a", _producer(calls), announce="building lib-a (one-time)...")
  assert built and len(calls) == 1 and so == cache / "lib-a.so" and so.read_bytes() == b"\x7fELF library bytes"
  assert capsys.readouterr().err == "mockgpu: building lib-a (one-time)...\n"
  assert m == {"note": "mine", "stem": "lib-a", "size": 18, "sha256": hashlib.sha256(b"\x7fELF library bytes").hexdigest()}
  assert json.loads((cache / "lib-a.json").read_text()) == m
  assert cbuild.library("lib-a", _producer(calls), announce="x") == (so, m, False) and len(calls) == 1
  assert capsys.readouterr().err == ""   # a cache hit is silent
  assert not list(cache.glob("*.tmp"))

@pytest.mark.parametrize("damage, why", [
  (lambda c: (c / "lib-a.so").write_bytes(b"\x7fELF"), "truncated or replaced (4 bytes, 18 recorded at build)"),
  (lambda c: (c / "lib-a.so").write_bytes(b"\x7fELF library bytez"), "corrupt (its sha256 differs from the one recorded at build)"),
  (lambda c: (c / "lib-a.json").write_text("{not json"), "without readable metadata (lib-a.json: JSONDecodeError)"),
  (lambda c: [(c / f"lib-a{s}").write_bytes((c / f"lib-b{s}").read_bytes()) for s in (".so", ".json")],
   "described by metadata of another library (lib-b)"),
  (lambda c: (c / "lib-a.so").unlink(), "missing"),
])
def test_damaged_entry_is_rebuilt_saying_why(cache, capsys, damage, why):
  cbuild.library("lib-b", _producer([], b"\x7fELF other arch"))
  cbuild.library("lib-a", _producer([]))
  damage(cache)
  capsys.readouterr()
  assert cbuild.verify("lib-a") == (None, why)
  calls = []
  so, m, built = cbuild.library("lib-a", _producer(calls))
  assert built and len(calls) == 1 and so.read_bytes() == b"\x7fELF library bytes" and cbuild.verify("lib-a")[0] == m
  assert capsys.readouterr().err == f"mockgpu: the cached library {so} is {why}; rebuilding it\n"

def test_failed_build_caches_nothing(cache):
  def produce(out):
    out.write_bytes(b"half")
    raise RuntimeError("compiler said no")
  with pytest.raises(RuntimeError, match="compiler said no"): cbuild.library("lib-c", produce)
  assert sorted(p.name for p in cache.iterdir()) == ["lib-c.lock"]

def test_rebuild_keeps_the_old_file_until_the_new_one_is_complete(cache):
  cbuild.library("lib-a", _producer([], b"\x7fELF old"))
  seen = []
  def produce(out):
    seen.append((cache / "lib-a.so").read_bytes())   # readers still get the whole old library while this one builds
    out.write_bytes(b"\x7fELF new")
    return {}
  cbuild.library("lib-a", produce, force=True)
  assert seen == [b"\x7fELF old"] and (cache / "lib-a.so").read_bytes() == b"\x7fELF new"

def test_parallel_processes_build_once(cache):
  script = textwrap.dedent(f"""
    import time
    from mockgpu import cbuild
    def produce(out):
      with open({str(cache / "builds")!r}, "a") as f: f.write("x")
      time.sleep(1.0)
      out.write_bytes(b"lib")
      return {{}}
    print(cbuild.library("lib-p", produce)[2])""")
  procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True) for _ in range(3)]
  outs = sorted(p.communicate(timeout=300)[0].strip() for p in procs)
  assert outs == ["False", "False", "True"] and (cache / "builds").read_text() == "x"

def test_compiler_output_is_read_while_it_runs():
  # 4 MiB of output each, far more than a pipe holds: a reader that waits for the exit first would hang here
  chatty = [sys.executable, "-c", "import sys; sys.stdout.write('w' * (4 << 20)); sys.exit(3)"]
  res = subprocess.run([sys.executable, "-c", "from mockgpu import cbuild; r = cbuild.run_all([%r] * 3); "
                        "print([(rc, len(o)) for rc, o in r])" % (chatty,)], capture_output=True, text=True, timeout=120)
  assert res.stdout.strip() == str([(3, 4 << 20)] * 3)

def _fake_cc(tmp_path, monkeypatch, cases:str) -> pathlib.Path:
  """A shell script as $MOCKGPU_CC answering `case "$*" in <cases> esac` (compiler identity probes, no compiling)."""
  fake = tmp_path / "fakecc"
  fake.write_text(f'#!/bin/sh\ncase "$*" in {cases} esac\n')
  fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
  monkeypatch.setenv("MOCKGPU_CC", str(fake))
  return fake

def test_compiler_identity_holds_the_cpu_features(tmp_path, monkeypatch):
  fake = _fake_cc(tmp_path, monkeypatch, '*--version*) echo "fakecc 1.0";; *-dM*) echo "#define __${FAKE_FEATURE}__ 1";;')
  ids = []
  try:
    for feature in ("AVX2", "AVX2", "AVX512F"):
      monkeypatch.setenv("FAKE_FEATURE", feature)
      cbuild.compiler.cache_clear()
      ids.append(cbuild.compiler()[1])
  finally: cbuild.compiler.cache_clear()
  assert ids[0] == ids[1] != ids[2] and all(i.startswith(f"{fake}|fakecc 1.0|") for i in ids)

C_SRC = "int answer(void) { return 42; }\n"

def _shared(cache:pathlib.Path, count:pathlib.Path|None=None, src:str=C_SRC) -> subprocess.CompletedProcess:
  """shared_library() of a real C source in a fresh process (dlopen keeps a library per path for a process's life);
  prints the library's path, whether this call built it, and what its function returns."""
  code = f"""
import ctypes, time
from mockgpu import cbuild
def generate():
  if {str(count) if count else ''!r}: open({str(count)!r}, "a").write("x"); time.sleep(1.0)
  return [{src!r}], {{"note": 1}}
so, m, built = cbuild.shared_library("t-", [{src!r}], ("-O1",), generate, keep=4, what="the test library")
print(so, built, ctypes.CDLL(str(so)).answer())"""
  return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env={**os.environ, "MOCKGPU_CACHE": str(cache)})

def test_two_processes_compile_one_library(tmp_path):
  import concurrent.futures as cf   # the two processes start together; the file lock lets one compile while the other waits
  with cf.ThreadPoolExecutor(2) as ex: runs = list(ex.map(lambda _: _shared(tmp_path, tmp_path / "builds"), range(2)))
  assert all(r.returncode == 0 for r in runs), [r.stderr for r in runs]
  (so,) = tmp_path.glob("t-*.so")
  assert sorted(r.stdout.strip() for r in runs) == [f"{so} False 42", f"{so} True 42"]
  assert (tmp_path / "builds").read_text() == "x" and not list(tmp_path.glob("*.c")) and not list(tmp_path.glob("*.tmp"))

def test_corrupted_compiled_library_is_rebuilt_saying_so(tmp_path):
  assert _shared(tmp_path).returncode == 0
  (so,) = tmp_path.glob("t-*.so")
  so.write_bytes(so.read_bytes()[:100])
  r = _shared(tmp_path)
  assert r.returncode == 0 and r.stdout.strip() == f"{so} True 42", r.stderr
  assert r.stderr == f"mockgpu: the cached library {so} is truncated or replaced (100 bytes, {so.stat().st_size} recorded at build); rebuilding it\n"

def test_key_holds_compiler_and_flags(tmp_path, monkeypatch):
  _fake_cc(tmp_path, monkeypatch, '*--version*) echo "fakecc $FAKE_VERSION";;')
  keys = []
  try:
    for ver, flags in (("1.0", ("-O1",)), ("1.0", ("-O1",)), ("1.0", ("-O2",)), ("2.0", ("-O1",))):
      monkeypatch.setenv("FAKE_VERSION", ver)
      cbuild.compiler.cache_clear()
      keys.append(cbuild.key(["src"], flags))
  finally: cbuild.compiler.cache_clear()
  assert keys[0] == keys[1] and len(set(keys)) == 3

def test_one_compiler_variable_for_every_user(cache, monkeypatch):
  from mockgpu.pcode import cabi
  monkeypatch.setenv("CC", "no-such-cc")   # tinygrad's CPU backend's variable: not ours
  try:
    cbuild.compiler.cache_clear()
    assert cabi.build(C_SRC).answer() == 42 and len(list(cache.glob("pcode-*.so"))) == 1   # the shared cache, not <tmp>
    monkeypatch.setenv("MOCKGPU_CC", "no-such-cc")
    cbuild.compiler.cache_clear()
    with pytest.raises(BuildError, match="C compiler 'no-such-cc' not found; install gcc or clang"): cabi.build(C_SRC + "\n")
  finally: cbuild.compiler.cache_clear()

def test_compile_error_names_the_library_and_keeps_the_sources(cache):
  with pytest.raises(BuildError, match=r"(?s)compiling the broken thing failed \(cc\): .*error.*generated sources kept in"):
    cbuild.shared_library("t-", ["broken"], (), lambda: (["int f(void) { return }\n"], {}), keep=4, what="the broken thing")
  (c,) = cache.glob("t-*.0.c")
  assert c.read_text() == "int f(void) { return }\n" and not list(cache.glob("t-*.so"))

def test_prune_keeps_most_recent_per_arch(cache):
  def lib(arch, key, age):
    for suf in (".so", ".json", ".0.c", ".1.c", ".lock"): (cache / f"emu-{arch}-{key}{suf}").write_text("x")
    os.utime(cache / f"emu-{arch}-{key}.so", (1e9 - age, 1e9 - age))
  for i in range(5): lib("gfx1100", f"k{i}", age=i)
  lib("gfx950", "other", age=100)
  gone = build.prune("gfx1100", keep=2)
  left = sorted(p.name for p in cache.iterdir())
  assert left == sorted(f"emu-{a}-{k}{s}" for a, k in (("gfx1100", "k0"), ("gfx1100", "k1"), ("gfx950", "other"))
                        for s in (".so", ".json", ".0.c", ".1.c", ".lock"))
  assert len(gone) == 3 * 5

def test_prune_removes_what_a_dead_build_left(cache):
  # a process killed mid-build (or a daemon thread's build cut at exit) leaves its temporary library and objects behind
  # (its sources too; a built library's kept sources, MOCKGPU_KEEP_SOURCES, stay)
  dead = ["emu-gfx1100-dead.0.c", "emu-gfx1100-dead.0.o", "emu-gfx1100-dead.abc.so.tmp", "emu-gfx1100-dead.lock", "meta.json.x1.tmp"]
  live = ["emu-gfx1100-live.0.c", "emu-gfx1100-live.0.o", "emu-gfx1100-live.def.so.tmp", "emu-gfx1100-live.lock"]   # a build running now
  kept = ["emu-gfx1100-kept.0.c", "emu-gfx1100-kept.json", "emu-gfx1100-kept.so", "emu-gfx1100-kept.lock"]
  for name in dead + live + kept: (cache / name).write_text("x")
  for name in dead + kept: os.utime(cache / name, (1e9, 1e9))
  assert sorted(p.name for p in build.prune("gfx1100", keep=2)) == dead
  assert sorted(p.name for p in cache.iterdir()) == sorted(live + kept)

PTX = """.version 7.5
.target sm_70
.address_size 64
.visible .entry inc (.param .u64 out)
{
  .reg .u64 %o, %a; .reg .u32 %t, %v;
  ld.param.u64 %o, [out+0];
  mov.u32 %t, %tid.x; cvt.u64.u32 %a, %t; mad.lo.u64 %o, %a, 4, %o;
  ld.global.u32 %v, [%o+0]; add.u32 %v, %v, 7; st.global.u32 [%o+0], %v;
  ret;
}
"""

def _ptx_run(cache:pathlib.Path) -> subprocess.CompletedProcess:
  """Load PTX in a fresh process (dlopen keeps a library per path for the life of a process) and run it on 0..7."""
  code = f"""
import numpy as np
from mockgpu.emu.memory import MemoryMap
from mockgpu.mock.ptx import engine
a = np.arange(8, dtype=np.uint32); mm = MemoryMap(); mm.add(a.ctypes.data, a.nbytes, "a")
engine.load({PTX!r}).launch("inc", [a.ctypes.data], (1, 1, 1), (8, 1, 1), mm)
print(a.tolist())"""
  return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env={**os.environ, "MOCKGPU_CACHE": str(cache)})

def test_damaged_ptx_module_is_rebuilt_not_loaded(tmp_path):
  want = str((np.arange(8) + 7).tolist())
  first = _ptx_run(tmp_path)
  assert first.returncode == 0 and first.stdout.strip() == want, first.stderr
  (so,) = tmp_path.glob("ptx-*.so")
  size = so.stat().st_size
  def flip(b): return b[:size // 2] + bytes([b[size // 2] ^ 0xFF]) + b[size // 2 + 1:]
  for damage, why in ((lambda b: b[:len(b) // 2], "truncated or replaced"), (flip, "corrupt")):
    so.write_bytes(damage(so.read_bytes()))
    r = _ptx_run(tmp_path)   # was: SIGBUS, or "file too short"/"invalid ELF header" on every later run
    assert r.returncode == 0 and r.stdout.strip() == want and f"mockgpu: the cached library {so} is {why}" in r.stderr, r.stderr
    assert so.stat().st_size == size

def test_warm_up_command(monkeypatch, capsys):
  from mockgpu.__main__ import COMMANDS, main
  assert COMMANDS["warm-up"][0] == "mockgpu.emu.warmup"
  built = []
  def fake_build(arch, force=False):
    built.append((arch.name, force))
    return build.Library(pathlib.Path(f"/cache/emu-{arch.name}.so"), (), {}, {}, arch.name == "gfx950", 1.5)
  monkeypatch.setattr(build, "build", fake_build)
  assert main(["warm-up", "--arch", "gfx1201", "gfx950", "--arch", "gfx1201"]) == 0
  out = capsys.readouterr().out.splitlines()
  assert built == [("gfx1201", False), ("gfx950", False)]
  assert out[:2] == ["gfx1201: /cache/emu-gfx1201.so (cached, verified)", "gfx950: /cache/emu-gfx950.so (built in 1.5 s)"]
  built.clear()
  assert main(["warm-up", "--arch", "all", "--force"]) == 0 and built == [("gfx1100", True), ("gfx1201", True), ("gfx950", True)]
  assert "gfx942: runs on gfx950's library (the same generated C)" in capsys.readouterr().out.splitlines()
  built.clear()
  assert main(["warm-up"]) == 0 and built == [("gfx1100", False)]
  with pytest.raises(SystemExit) as e: main(["warm-up", "--arch", "gfx1030"])
  assert e.value.code == 2

def test_warm_up_failure_is_one_line(monkeypatch, capsys):
  from mockgpu.emu.errors import BackendUnavailable
  from mockgpu.emu import warmup
  def no_cc(arch, force=False): raise BackendUnavailable("C compiler 'cc' not found; install gcc\nmore detail")
  monkeypatch.setattr(build, "build", no_cc)
  assert warmup.main(["--arch", "gfx1100"]) == 1
  assert capsys.readouterr().err == "mockgpu warm-up: gfx1100: BackendUnavailable: C compiler 'cc' not found; install gcc\n"

@pytest.mark.slow
def test_truncated_emulator_library_is_rebuilt(tmp_path, monkeypatch):
  """The real gfx1100 library, truncated in a private copy of the cache: warm-up (and so any load) rebuilds it. Was: SIGBUS."""
  from mockgpu.emu.arch import get_arch
  lib = build.build(get_arch("gfx1100"))   # the default cache: built already by any emulator test, else now
  for f in (lib.path, lib.path.with_suffix(".json")): (tmp_path / f.name).write_bytes(f.read_bytes())
  so = tmp_path / lib.path.name
  so.write_bytes(so.read_bytes()[:so.stat().st_size // 2])
  r = subprocess.run([sys.executable, "-m", "mockgpu", "warm-up", "--arch", "gfx1100"], capture_output=True, text=True, timeout=1800,
                     env={**os.environ, "MOCKGPU_CACHE": str(tmp_path)})
  assert r.returncode == 0 and f"gfx1100: {so} (built in" in r.stdout, r.stderr
  assert f"mockgpu: the cached library {so} is truncated or replaced" in r.stderr and "mockgpu: building the gfx1100 emulator" in r.stderr
  monkeypatch.setenv("MOCKGPU_CACHE", str(tmp_path))
  assert cbuild.verify(so.name.removesuffix(".so"))[0]["arch"] == "gfx1100"
