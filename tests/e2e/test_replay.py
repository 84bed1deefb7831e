"""`mockgpu replay` on real tinygrad (DEV=MOCKKFD+AMD): capture test_tiny-like workloads, replay them bit for bit, report a
changed kernel and a changed recorded output with their first differing element, diff two captures, refuse malformed ones.
numpy is the oracle for what the captured buffers hold; four captures (one of ~25 launches, three of 2) keep it short."""
import json, os, re, shutil, struct, subprocess, sys, textwrap, hashlib
import numpy as np
import pytest
from mockgpu.__main__ import main
from mockgpu.emu.capture import BLOBS, LOG, MANIFEST, Capture, encode_blob

TINY = textwrap.dedent("""
  import os, json
  import numpy as np
  from tinygrad import Tensor, TinyJit, Variable, dtypes, nn
  Tensor.manual_seed(0)
  x = Tensor(np.arange(8, dtype=np.float32))
  out = {"scale": (x * float(os.environ.get("SCALE", "2.5"))).tolist()}
  if not os.environ.get("SMALL"):
    a = Tensor(np.arange(64 * 64, dtype=np.float32).reshape(64, 64) / 512)
    out |= {"plus": (Tensor([1., 2, 3]) + Tensor([4., 5, 6])).tolist(), "plus_int": (Tensor([1, 2, 3]) + Tensor([4, 5, 6])).tolist(),
            "sum": Tensor.ones(256).contiguous().sum().item(), "gemm": (a @ Tensor.eye(64).clone()).sum().item(),
            "hgemm": (a.half() @ a.half().T).float().max().item(), "elu": Tensor([[1., 2], [3, -4]]).sum(axis=1).elu().tolist(),
            "rand": Tensor.rand(10).tolist()}
    f = TinyJit(lambda p, q: (p * q + 1).relu())
    for i in range(3): out[f"jit{i}"] = f(Tensor([float(i), -1, 2]), Tensor([3., 4, 5])).tolist()
    i = Variable("i", 1, 10)
    out["symbolic"] = (Tensor.ones(10).contiguous()[:i.bind(5)] + 1).contiguous()[:5].tolist()
    out["conv"] = nn.Conv2d(1, 4, 3)(Tensor.ones(1, 1, 6, 6)).relu().max_pool2d().sum().item()
  out["plus1"] = (x + 1).tolist()
  print(json.dumps(out))
""")

def _capture(root, tmp, **env) -> subprocess.Popen:
  """Start `mockgpu replay capture --out root -- python workload.py` with DEV=MOCKKFD+AMD and `env`; _done() waits for it."""
  (script:=tmp / "workload.py").write_text(TINY)
  full = {k: v for k, v in os.environ.items() if k not in ("DEV", "MOCKGPU")} | {"DEV": "MOCKKFD+AMD"} | env
  return subprocess.Popen([sys.executable, "-m", "mockgpu", "replay", "capture", "--out", str(root), "--", sys.executable, str(script)],
                          env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp)

def _done(p:subprocess.Popen) -> str:
  out, err = p.communicate(timeout=900)
  assert p.returncode == 0, f"--- stdout\n{out[-3000:]}\n--- stderr\n{err[-6000:]}"
  return out

@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
  """The test_tiny-like capture (PM4 queue) and the command's output."""
  tmp = tmp_path_factory.mktemp("replay")
  return tmp / "tiny", json.loads(_done(_capture(tmp / "tiny", tmp)).splitlines()[0])

@pytest.fixture(scope="module")
def small(tmp_path_factory):
  """Three captures of the two-kernel workload: A, A again (determinism), and B: SCALE=2.75 through the AQL queue."""
  tmp = tmp_path_factory.mktemp("replay-small")
  for p in [_capture(tmp / name, tmp, SMALL="1", **env) for name, env in (("a", {}), ("a2", {}), ("b", {"SCALE": "2.75", "AMD_AQL": "1"}))]: _done(p)
  return tmp

def _cli(capsys, *args) -> tuple[int, str, str]:
  rc = main(["replay", *map(str, args)])
  out = capsys.readouterr()
  return rc, out.out, out.err

def _scale_launch(cap:Capture):
  """The launch that computed x * 2.5 (the first kernel of the workload)."""
  l = cap.launches[0]
  assert np.array_equal(np.frombuffer(cap.blob(l.regions[-1].before), np.float32), np.arange(8, dtype=np.float32))
  return l

def test_capture_records_what_the_kernels_read_and_wrote(tiny):
  root, out = tiny
  cap = Capture(root)
  m = cap.manifest
  assert (m["format"], m["version"], m["archs"], m["tinygrad"], m["exit_code"]) == ("mockgpu-capture", 1, ["gfx1100"], "0.14.0", 0)
  assert len(cap.launches) >= 20 and all(l.engine == "PM4" and l.name for l in cap.launches)
  expect = np.arange(8, dtype=np.float32) * np.float32(2.5)
  assert out["scale"] == expect.tolist()
  l = _scale_launch(cap)
  assert [r.label for r in l.regions] == ["code", "kernarg", "arg0", "arg1"]
  assert np.array_equal(np.frombuffer(cap.blob(l.regions[2].after), np.float32), expect)
  last = cap.launches[-1]   # x + 1
  assert np.array_equal(np.frombuffer(cap.blob(last.regions[2].after), np.float32), np.arange(8, dtype=np.float32) + 1)
  kernarg = cap.blob(l.regions[1].before)   # the kernel arguments are the two buffers' addresses
  assert struct.unpack("<2Q", kernarg[:16]) == (l.regions[2].addr, l.regions[3].addr)

def test_run_reproduces_every_launch_bit_for_bit(tiny, capsys):
  root, _ = tiny
  n = len(Capture(root).launches)
  rc, out, _ = _cli(capsys, "run", root)
  assert rc == 0 and f"{n} of {n} launches match bit for bit (" in out, out
  rc, out, _ = _cli(capsys, "run", root, "--relocate", "--launch", 0, "--launch", n - 1, "-v")
  assert rc == 0 and "2 of 2 launches match bit for bit" in out and "2 relocated" in out, out
  assert out.count("ok (relocated)") == 2

def _edit(src, dst, launch:int, region:int, when:str, fn):
  """Copy capture `src` to `dst` with blob `when` of region `region` of launch `launch` replaced by fn(old contents),
  stored under its new sha256 (the log and manifest refer to it)."""
  shutil.copytree(src, dst)
  cap = Capture(dst)
  old = getattr(cap.launches[launch].regions[region], when)
  new = fn(cap.blob(old))
  h = hashlib.sha256(new).hexdigest()
  (dst / BLOBS / h).write_bytes(encode_blob(new))
  lines = (dst / LOG).read_text().splitlines()
  idx = [i for i, line in enumerate(lines) if json.loads(line)["type"] == "launch"][launch]
  rec = json.loads(lines[idx])
  rec["regions"][region][when] = h
  lines[idx] = json.dumps(rec)
  (dst / LOG).write_text("\n".join(lines) + "\n")
  return dst

def test_changed_kernel_is_reported_with_its_first_differing_element(tiny, tmp_path, capsys):
  root, _ = tiny
  lit = struct.pack("<f", 2.5)
  code = Capture(root).blob(_scale_launch(Capture(root)).code.before)
  assert code.count(lit) >= 1   # 2.5 is no inline constant: a literal of the v_mul
  bad = _edit(root, tmp_path / "bad", 0, 0, "before", lambda b: b.replace(lit, struct.pack("<f", 3.0)))
  rc, out, _ = _cli(capsys, "run", bad)
  n = len(Capture(root).launches)
  assert rc == 1 and f"{n - 1} of {n} launches match bit for bit, 1 MISMATCH" in out, out
  line = next(l for l in out.splitlines() if l.startswith("MISMATCH"))
  assert re.fullmatch(r"MISMATCH launch 0 \(E_2_4\): buffer arg0 \(32 bytes at 0x[0-9a-f]+\): element 1 \(byte 4\) expected 2\.5 \(0x40200000\), "
                      r"got 3\.0 \(0x40400000\); 7 of 8 float32 elements differ", line), line
  rc, out, _ = _cli(capsys, "diff", root, bad)
  assert rc == 1 and re.search(r"^kernel E_2_4: code changed [0-9a-f]{12} -> [0-9a-f]{12} \(launch 0\)$", out, re.M), out

def test_changed_recorded_output_and_tolerances(tiny, tmp_path, capsys):
  root, _ = tiny
  def bump(b:bytes) -> bytes:   # element 5 (12.5) one ulp up
    a = np.frombuffer(b, np.float32).copy()
    a[5] = np.nextafter(a[5], np.float32(100))
    return a.tobytes()
  bad = _edit(root, tmp_path / "bad", 0, 2, "after", bump)
  rc, out, _ = _cli(capsys, "run", bad, "--launch", 0)
  assert rc == 1 and re.search(r"element 5 \(byte 20\) expected 12\.500001 \(0x41480001\), got 12\.5 \(0x41480000\); 1 of 8 float32", out), out
  assert _cli(capsys, "run", bad, "--launch", 0, "--ulp", 1)[0] == 0
  assert _cli(capsys, "run", bad, "--launch", 0, "--rtol", 1e-6)[0] == 0
  assert _cli(capsys, "run", bad, "--launch", 0, "--atol", 1e-7)[0] == 1

@pytest.mark.parametrize("edit,msg", [
  ("missing", r"CaptureError: blob ([0-9a-f]{64}) \(launch 0 \(E_2_4\) region 2 arg0 after\) is missing from .*/blobs; the capture is incomplete"),
  ("corrupt", r"CaptureError: blob .*/blobs/[0-9a-f]{64} is corrupt: its contents hash to [0-9a-f]{64}, not its name"),
  ("version", r"CaptureError: .*manifest.json: format version 9; this mockgpu reads version 1 only"),
  ("manifest", r"CaptureError: .* has no manifest.json: not a capture"),
])
def test_malformed_captures_are_clear_errors(tiny, tmp_path, capsys, edit, msg):
  root, _ = tiny
  shutil.copytree(root, bad:=tmp_path / "bad")
  regions = Capture(root).launches[0].regions
  if edit == "missing": (bad / BLOBS / regions[2].after).unlink()
  elif edit == "corrupt": (bad / BLOBS / regions[3].before).write_bytes(encode_blob(b"edited in place"))   # the input x
  elif edit == "version": (bad / MANIFEST).write_text(json.dumps(json.loads((bad / MANIFEST).read_text()) | {"version": 9}))
  else: (bad / MANIFEST).unlink()
  rc, out, err = _cli(capsys, "run", bad, "--launch", 0)
  assert rc == 2 and re.fullmatch(f"mockgpu replay: {msg}.*\n", err), err

def test_diff_two_captures(small, capsys):
  rc, out, _ = _cli(capsys, "diff", small / "a", small / "a2")
  assert rc == 0 and out.endswith("no differences\n"), out   # capturing twice records the same code and contents
  rc, out, _ = _cli(capsys, "run", small / "b")
  assert rc == 0 and "2 of 2 launches match bit for bit" in out, out   # the AQL queue's dispatches replay too
  assert [l.engine for l in Capture(small / "b").launches] == ["AQL", "AQL"]
  rc, out, _ = _cli(capsys, "diff", small / "a", small / "b")
  lines = out.splitlines()
  assert rc == 1 and lines[-1] == f"{len(lines) - 3} differences", out
  assert re.fullmatch(r"kernel E_2_4: code changed [0-9a-f]{12} -> [0-9a-f]{12} \(launch 0\)", lines[2]), out
  assert re.search(r"^launch 0 \(E_2_4\): result changed: buffer arg0 \(32 bytes at 0x[0-9a-f]+\): element 1 \(byte 4\) A 2\.5 \(0x40200000\), "
                   r"B 2\.75 \(0x40300000\); 7 of 8 float32 elements differ$", out, re.M), out
  assert not re.search(r"^launch 1 .*(result|code) changed", out, re.M)   # x + 1 is the same kernel with the same result

def test_capture_usage_errors(tmp_path, capsys):
  (tmp_path / "used").mkdir()
  (tmp_path / "used" / "x").write_text("")
  rc, _, err = _cli(capsys, "capture", "--out", tmp_path / "used", "--", "true")
  assert rc == 2 and "is not an empty directory" in err
  rc, out, err = _cli(capsys, "capture", "--out", tmp_path / "none", "--", sys.executable, "-c", "pass")
  assert rc == 1 and "captured 0 launches" in out and "no kernel launch was recorded" in err
  assert Capture(tmp_path / "none").launches == []
  rc, _, err = _cli(capsys, "run", tmp_path / "none")
  assert rc == 1 and "holds no launches: nothing to replay" in err

def test_mockpci_capture_compares_outputs_that_share_a_span_with_the_code(tmp_path, capsys, fw_env):
  # tinygrad's AM driver sub-allocates VRAM, so the page walker's mapped span of the code object also holds the small
  # buffers: that region must get an after state, or a replay would compare nothing and always "match"
  _done(_capture(tmp_path / "pci", tmp_path, SMALL="1", DEV="MOCKPCI+AMD", **fw_env))
  cap = Capture(tmp_path / "pci")
  want = np.arange(8, dtype=np.float32) * np.float32(2.5)
  l = cap.launches[0]
  outs = [(i, r) for i, r in enumerate(l.regions) if r.after is not None and want.tobytes() in cap.blob(r.after)]
  assert cap.manifest["archs"] == ["gfx950"] and len(outs) == 1 and want.tobytes() not in cap.blob(outs[0][1].before), l.regions
  assert _cli(capsys, "run", tmp_path / "pci")[0] == 0
  i, r = outs[0]
  bad = _edit(tmp_path / "pci", tmp_path / "bad", 0, i, "after", lambda b: b.replace(want.tobytes(), (want + 1).tobytes()))
  rc, out, _ = _cli(capsys, "run", bad, "--launch", 0)
  assert rc == 1 and "MISMATCH launch 0" in out, out
