"""The capture format (mockgpu.emu.capture) and the buffer comparison of the replay (mockgpu.emu.replay.compare), without
running a kernel: round trip of records and blobs, the errors for malformed capture directories, tolerances and reports."""
import hashlib, json, struct, zlib
import numpy as np
import pytest
from mockgpu.emu.api import Dispatch
from mockgpu.emu.capture import BLOBS, LOG, MANIFEST, Capture, CaptureWriter, Launch, Pointer, Region, write_manifest, SGPRS, encode_blob, decode_blob
from mockgpu.emu.errors import CaptureError
from mockgpu.emu.replay import Tolerance, compare

def _capture(root, n=2) -> list[Launch]:
  w, out = CaptureWriter(root), []
  w.record({"type": "process", "pid": 7, "tinygrad": "0.14.0", "mockgpu": "0.1.0"})
  for i in range(n):
    code, ka, buf = w.blob(b"\x00\x00\x81\xbf" * 4), w.blob(struct.pack("<Q", 0x7000_0000_1000)), w.blob(bytes(16))
    regs = (Region("code", 0x7000_0000_0000, 16, 4096, code), Region("kernarg", 0x7000_0000_2000, 8, 4096, ka),
            Region("buffer", 0x7000_0000_1000, 16, 4096, buf, w.blob(np.arange(4, dtype=np.float32).tobytes()), arg=0))
    l = Launch(i, 7, 1, "PM4", f"E_{i}", Dispatch("gfx1100", 0x7000_0000_0000, (2, 1, 1), (32, 1, 1), (0x2000, 0x7000)), regs,
               (Pointer(SGPRS, 0, 1, 0), Pointer(1, 0, 2, 0)))
    w.record(l.to_json())
    out.append(l)
  write_manifest(root, ["python", "x.py"], 0, 1.5)
  return out

def test_round_trip(tmp_path):
  launches = _capture(tmp_path)
  cap = Capture(tmp_path)
  cap.check()
  assert cap.launches == launches and cap.processes[0]["pid"] == 7
  m = cap.manifest
  assert (m["format"], m["version"], m["launches"], m["archs"], m["tinygrad"], m["mockgpu"], m["exit_code"]) == \
         ("mockgpu-capture", 1, 2, ["gfx1100"], "0.14.0", "0.1.0", 0)
  assert cap.blob(launches[0].regions[2].after) == np.arange(4, dtype=np.float32).tobytes()
  assert launches[1].label == "launch 1 (E_1)" and launches[0].regions[2].label == "arg0"

def _edit_manifest(root, **kw):
  m = json.loads((root / MANIFEST).read_text())
  (root / MANIFEST).write_text(json.dumps(m | kw))

@pytest.mark.parametrize("edit,msg", [
  (lambda r: (r / MANIFEST).unlink(), "has no manifest.json: not a capture, or its command is still running or was killed"),
  (lambda r: _edit_manifest(r, version=2), "manifest.json: format version 2; this mockgpu reads version 1 only"),
  (lambda r: _edit_manifest(r, format="other"), "manifest.json: format='other', expected 'mockgpu-capture'; not a mockgpu capture"),
  (lambda r: _edit_manifest(r, compression="lzma"), "compression='lzma' hash='sha256'; version 1 captures use zlib and sha256"),
  (lambda r: (r / MANIFEST).write_text("{"), "manifest.json is unreadable or not JSON"),
  (lambda r: (r / LOG).write_text((r / LOG).read_text().splitlines()[0] + "\n"), "launches.jsonl holds 0 launches, the manifest says 2"),
  (lambda r: (r / LOG).write_text((r / LOG).read_text() + '{"type": "laun'), "launches.jsonl line 4 is not JSON"),
])
def test_malformed_capture_directories(tmp_path, edit, msg):
  _capture(tmp_path)
  edit(tmp_path)
  with pytest.raises(CaptureError) as e: Capture(tmp_path)
  assert msg in str(e.value)

def test_missing_and_corrupt_blobs(tmp_path):
  launches = _capture(tmp_path)
  h = launches[1].regions[2].after
  (tmp_path / BLOBS / h).unlink()
  cap = Capture(tmp_path)
  with pytest.raises(CaptureError, match=f"blob {h} \\(launch 0 \\(E_0\\) region 2 arg0 after\\) is missing"): cap.check()
  (tmp_path / BLOBS / h).write_bytes(encode_blob(b"edited"))
  cap.check()
  with pytest.raises(CaptureError, match=f"blob .*{h} is corrupt: its contents hash to {hashlib.sha256(b'edited').hexdigest()}"): cap.blob(h)
  (tmp_path / BLOBS / h).write_bytes(b"znot zlib")
  with pytest.raises(CaptureError, match="is corrupt \\(Error -3"): cap.blob(h)
  (tmp_path / BLOBS / h).write_bytes(b"x")
  with pytest.raises(CaptureError, match="is corrupt \\(unknown codec byte b'x'"): cap.blob(h)
  good = b"z" + zlib.compress(np.arange(4, dtype=np.float32).tobytes())
  (tmp_path / BLOBS / h).write_bytes(good + b"x")
  with pytest.raises(CaptureError, match="is corrupt \\(bytes follow the zlib stream\\)"): cap.blob(h)
  (tmp_path / BLOBS / h).write_bytes(good[:-3])
  with pytest.raises(CaptureError, match="is corrupt \\(the zlib stream is truncated\\)"): cap.blob(h)
  (tmp_path / BLOBS / h).write_bytes(good)
  assert cap.blob(h) == np.arange(4, dtype=np.float32).tobytes()

def test_blob_encoding():
  zeros, noise = bytes(1 << 17), np.random.default_rng(0).standard_normal(1 << 15).astype(np.float32).tobytes()
  assert encode_blob(zeros)[:1] == b"z" and len(encode_blob(zeros)) < 1000 and decode_blob(encode_blob(zeros)) == zeros
  assert encode_blob(noise) == b"n" + noise and decode_blob(encode_blob(noise)) == noise   # random floats: stored as they are
  assert encode_blob(b"") == b"n" and decode_blob(b"n") == b""

def test_not_a_directory(tmp_path):
  with pytest.raises(CaptureError, match="is not a directory"): Capture(tmp_path / "nope")

R = Region("buffer", 0x1000, 16, 4096, "", arg=3)
def f32(*v) -> bytes: return np.array(v, np.float32).tobytes()

def test_compare_bit_for_bit():
  assert compare(R, f32(1, 2, 3, 4), f32(1, 2, 3, 4)) is None
  d = compare(R, f32(1, 2, 3, 4), f32(1, 2, 3.5, 5))
  assert (d.index, d.byte, d.size, d.expected, d.got, d.count, d.total) == (2, 8, 4, 0x40400000, 0x40600000, 2, 4)
  assert d.describe() == ("buffer arg3 (16 bytes at 0x1000): element 2 (byte 8) expected 3.0 (0x40400000), got 3.5 (0x40600000); "
                          "2 of 4 float32 elements differ")
  nan1, nan2 = struct.pack("<I", 0x7fc00000), struct.pack("<I", 0x7fc00001)
  assert compare(R, nan1, nan2).index == 0   # bit for bit: two NaN payloads differ
  assert compare(R, nan1, nan2, Tolerance(atol=1e-9)) is None   # as floats: NaN matches NaN

def test_compare_tolerances():
  one_up = np.nextafter(np.float32(1), np.float32(2)).tobytes()
  two_up = np.nextafter(np.frombuffer(one_up, np.float32)[0], np.float32(2)).tobytes()
  assert compare(R, f32(1), one_up) is not None
  assert compare(R, f32(1), one_up, Tolerance(rtol=2e-7)) is None and compare(R, f32(1), two_up, Tolerance(rtol=2e-7)) is not None
  assert compare(R, f32(1), one_up, Tolerance(ulp=1)) is None and compare(R, f32(1), two_up, Tolerance(ulp=1)).count == 1
  tiny, neg_tiny = struct.pack("<I", 1), struct.pack("<I", 0x80000001)   # +-smallest denormal: 2 ulp apart across zero
  assert compare(R, tiny, neg_tiny, Tolerance(ulp=2)) is None and compare(R, tiny, neg_tiny, Tolerance(ulp=1)) is not None
  assert compare(R, f32(0.0), f32(-0.0), Tolerance(ulp=0)) is None and compare(R, f32(0.0), f32(-0.0)) is not None
  assert compare(R, f32(100), f32(100.5), Tolerance(atol=0.5)) is None and compare(R, f32(100), f32(100.5), Tolerance(atol=0.4)) is not None
  assert Tolerance(ulp=1).describe() == "as float32 within 1 ulp" and Tolerance().describe() == "bit for bit"

@pytest.mark.parametrize("dtype,expected,got,text", [
  ("float16", np.float16(1.5).tobytes(), np.float16(-2).tobytes(), "expected 1.5 (0x3e00), got -2.0 (0xc000)"),
  ("bfloat16", b"\xc0\x3f", b"\x80\x3f", "expected 1.5 (0x3fc0), got 1.0 (0x3f80)"),
  ("float64", np.float64(0.25).tobytes(), np.float64(0.5).tobytes(), "expected 0.25 (0x3fd0000000000000), got 0.5 (0x3fe0000000000000)"),
])
def test_compare_dtypes(dtype, expected, got, text):
  assert text in compare(R, expected, got, Tolerance(dtype)).describe()

def test_compare_tail_bytes():
  d = compare(R, f32(1) + b"\x01\x02", f32(1) + b"\x01\x03")
  assert (d.index, d.byte, d.size, d.expected, d.got) == (1, 4, 2, 0x0201, 0x0301)
  assert "element 1 (byte 4) expected 0x0201, got 0x0301; 1 of 2 float32 elements differ" in d.describe()
