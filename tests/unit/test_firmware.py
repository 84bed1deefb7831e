"""`mockgpu firmware` (tinygrad/firmware.py): tinygrad's real pin table, the blobs each GPU profile needs (checked against
tinygrad's own AMFirmware loader), and the install mechanics on fake blobs under a fake pin table, with tinygrad's own
fetch_fw reading the result offline. Real blobs: /lib/firmware/amdgpu when the machine has it."""
import hashlib, json, lzma, os, re, shutil, subprocess, types, urllib.request
from pathlib import Path
import pytest
from tinygrad import helpers
from tinygrad.runtime.autogen.am import am, fw
from mockgpu.mock.profiles import PROFILES
from mockgpu.tinygrad import firmware
from mockgpu.tinygrad.errors import FirmwareError

def sha(b:bytes) -> str: return hashlib.sha256(b).hexdigest()
def blob(name:str) -> bytes: return f"fake firmware {name}\n".encode() * 50

@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
  """tinygrad's download cache moved into tmp_path (as XDG_CACHE_HOME would at import); returns its fw/ folder."""
  monkeypatch.setattr(helpers, "cache_dir", str(tmp_path / "xdg" / "tinygrad"))
  monkeypatch.setattr(urllib.request, "urlopen", lambda *a, **k: pytest.fail(f"network used: {a}"))
  return tmp_path / "xdg" / "tinygrad" / "downloads" / "fw"

def tables(out:str) -> tuple[dict[str, str], dict[str, str]]:
  """The blob table (name -> status) and the chip table (arch -> 'boots offline') of the CLI's output."""
  blobs, chips = (dict(re.split(r"\s{2,}", l, maxsplit=1) for l in block.splitlines()[1:]) for block in out.split("\n\n")[:2])
  return blobs, {k: v.split(None, 1)[1] for k, v in chips.items()}

def fake_tree(root:Path, files:dict[str, bytes]) -> Path:
  (d:=root / "amdgpu").mkdir(parents=True)
  for n, b in files.items(): (d / n).write_bytes(b)
  return root

# *** tinygrad's data ***

def test_reads_tinygrads_real_pin_table():
  p = firmware.pins()
  assert p == fw.hashes and len(p) == 105
  assert {n.split("_")[0] for n in p} == {"psp", "smu", "sdma", "gc"}
  assert [sum(n.startswith(k) for n in p) for k in ("psp_", "smu_", "sdma_", "gc_")] == [9, 9, 15, 72]
  assert {"psp_13_0_14_sos.bin", "psp_13_0_12_sos.bin", "gc_9_5_0_mec.bin", "gc_9_5_0_rlc.bin", "sdma_4_4_5.bin"} <= set(p)
  assert all(len(h) == 64 and int(h, 16) >= 0 for h in p.values())

class _AnyKey(dict):
  def __getitem__(self, k): return ""

def _tinygrad_loads(ip:types.SimpleNamespace, monkeypatch) -> list[str]:
  """The names tinygrad's real AMFirmware asks fetch_fw for, fed with header-only blobs (versions its parser accepts)."""
  from tinygrad.runtime.support.am import amdev
  asked = []
  def fetch_fw(path, name, sha256):
    assert path == "amdgpu"
    asked.append(name)
    b = bytearray(0x10000)
    hdr = am.struct_common_firmware_header.from_buffer(b)
    kind, major = name.split("_")[:2]
    hdr.header_version_major, hdr.header_version_minor = {"psp": (2, 0), "smu": (2, 1)}.get(kind, (2 if kind == "gc" and int(major) >= 12 else 1, 0))
    return bytes(b)
  monkeypatch.setattr(amdev, "fetch_fw", fetch_fw)
  monkeypatch.setattr(amdev.fw, "hashes", _AnyKey())   # names tinygrad does not pin (GC 10.3.6's psp) would KeyError first
  amdev.AMFirmware(types.SimpleNamespace(ip_ver={am.GC_HWIP: ip.gc, am.SDMA0_HWIP: ip.sdma, am.MP0_HWIP: ip.mp0, am.MP1_HWIP: ip.mp1},
                                         devfmt="test"))
  return asked

OTHER_IPS = {"MI300X": ((9,4,3), (4,4,2), (13,0,6), (13,0,6)), "RX 9060 (GC 12.0.0)": ((12,0,0), (7,0,0), (14,0,2), (14,0,2)),
             "GC 10.3.6": ((10,3,6), (5,2,6), (13,0,5), (13,0,5))}

@pytest.mark.parametrize("ip", [*PROFILES.values(), *(types.SimpleNamespace(gc=g, sdma=s, mp0=m0, mp1=m1) for g, s, m0, m1 in OTHER_IPS.values())],
                         ids=[*PROFILES, *OTHER_IPS])
def test_blobs_for_is_what_tinygrads_loader_fetches(ip, monkeypatch):
  assert firmware.blobs_for(ip) == _tinygrad_loads(ip, monkeypatch)

@pytest.mark.parametrize("arch", list(PROFILES))
def test_every_profile_blob_is_pinned_by_tinygrad(arch):
  assert set(firmware.blobs_for(PROFILES[arch])) <= set(fw.hashes)   # else tinygrad's AM driver fails with KeyError

# *** mechanics on fake blobs ***

def test_installed_blob_is_what_tinygrads_fetch_fw_reads_offline(tmp_path, cache):
  name = "psp_1_2_3_sos.bin"
  src = firmware.tree(fake_tree(tmp_path / "fw", {name: blob(name)}))
  [b] = firmware.resolve([name], [src], {name: sha(blob(name))})
  assert (b.status, b.source, b.cache.parent) == ("installed", str(tmp_path / "fw"), cache)
  assert helpers.fetch_fw("amdgpu", name, sha(blob(name))) == blob(name)   # urlopen fails the test if tinygrad looks elsewhere

def test_statuses_and_nothing_wrong_is_written(tmp_path, cache):
  files = {"plain.bin": blob("plain"), "xz.bin.xz": lzma.compress(blob("xz")), "bad.bin": b"other version", "corrupt.bin.xz": b"not xz"}
  if shutil.which("zstd"): files["zst.bin.zst"] = subprocess.run(["zstd", "-c"], input=blob("zst"), capture_output=True, check=True).stdout
  src = firmware.tree(fake_tree(tmp_path / "fw", files))
  pinned = {n: sha(blob(n.split(".")[0])) for n in ("plain.bin", "xz.bin", "zst.bin", "bad.bin", "corrupt.bin", "absent.bin")}
  names = [*pinned, "unpinned.bin"]
  want = {"plain.bin": "available", "xz.bin": "available", "zst.bin": "available" if shutil.which("zstd") else "missing",
          "bad.bin": "differs", "corrupt.bin": "unreadable", "absent.bin": "missing", "unpinned.bin": "unpinned"}
  assert {b.name: b.status for b in firmware.resolve(names, [src], pinned, write=False)} == want
  assert not cache.exists()
  got = {b.name: b for b in firmware.resolve(names, [src], pinned)}
  assert {n: b.status for n, b in got.items()} == want | {n: "installed" for n, s in want.items() if s == "available"}
  assert got["bad.bin"].detail == f"sha256 {sha(b'other version')}, tinygrad pins {pinned['bad.bin']}"
  assert "not valid xz data" in got["corrupt.bin"].detail
  assert sorted(p.read_bytes() for p in cache.iterdir()) == sorted(blob(n.split(".")[0]) for n, s in want.items() if s == "available")
  again = {b.name: b.status for b in firmware.resolve(names, [src], pinned)}
  assert again == want | {n: "cached" for n, s in want.items() if s == "available"}

def test_first_source_with_the_pinned_hash_wins_and_a_stale_cache_file_is_replaced(tmp_path, cache):
  old = firmware.tree(fake_tree(tmp_path / "old", {"a.bin": b"old a"}))
  new = firmware.tree(fake_tree(tmp_path / "new", {"a.bin": blob("a")}), label="new tree")
  pinned = {"a.bin": sha(blob("a"))}
  dest = firmware.cache_path("a.bin", pinned["a.bin"])
  dest.parent.mkdir(parents=True)
  dest.write_bytes(b"truncated download")
  [b] = firmware.resolve(["a.bin"], [old, new], pinned)
  assert (b.status, b.source, dest.read_bytes()) == ("installed", "new tree", blob("a"))

def test_zst_without_a_decompressor_is_unreadable_and_names_zstd(tmp_path, cache, monkeypatch):
  try:
    import compression.zstd  # noqa: F401
    pytest.skip("Python >= 3.14 decompresses zstd itself")
  except ImportError: pass
  src = firmware.tree(fake_tree(tmp_path / "fw", {"z.bin.zst": b"whatever"}))
  monkeypatch.setattr(shutil, "which", lambda cmd: None)
  [b] = firmware.resolve(["z.bin"], [src], {"z.bin": sha(b"x")})
  assert b.status == "unreadable"
  assert b.detail == f"{src.dir / 'z.bin.zst'}: a .zst blob and no zstd decompressor (apt-get install zstd, or Python >= 3.14)"

def test_tree_accepts_the_root_or_its_amdgpu_folder_and_rejects_a_missing_one(tmp_path):
  root = fake_tree(tmp_path / "fw", {"a.bin": b"a"})
  assert firmware.tree(root).dir == firmware.tree(root / "amdgpu").dir == root / "amdgpu"
  with pytest.raises(FirmwareError, match="--from .*nope: no such folder"): firmware.tree(tmp_path / "nope")

# *** CLI ***

GFX950, GFX1100 = firmware.blobs_for(PROFILES["gfx950"]), firmware.blobs_for(PROFILES["gfx1100"])

@pytest.fixture
def fake_pins(monkeypatch) -> dict[str, str]:
  """A pin table with the gfx950 and gfx1100 blob names whose hashes match `blob(name)`, except smu_13_0_0.bin's."""
  p = {n: sha(blob(n)) for n in GFX950 + GFX1100} | {"smu_13_0_0.bin": sha(b"the pinned smu")}
  monkeypatch.setattr(firmware, "pins", lambda: p)
  return p

def test_cli_installs_a_complete_chip_and_exits_0(tmp_path, cache, fake_pins, capsys):
  root = fake_tree(tmp_path / "fw", {n: blob(n) for n in GFX950 + GFX1100})
  assert firmware.main(["--from", str(root), "--chip", "gfx950", "--json", str(tmp_path / "r.json")]) == 0
  out = capsys.readouterr().out
  assert tables(out) == ({n: f"installed from {root}" for n in GFX950}, {"gfx950": "yes"})
  r = json.loads((tmp_path / "r.json").read_text())
  assert r["complete"] is True and r["cache"] == str(cache) and r["sources"] == [str(root)]
  assert [(b["name"], b["status"]) for b in r["blobs"]] == [(n, "installed") for n in GFX950]
  assert r["chips"] == [{"chip": "gfx950", "blobs": GFX950, "missing": [], "complete": True}]
  assert firmware.main(["--from", str(root), "--chip", "gfx950"]) == 0 and "cached already" in capsys.readouterr().out

def test_cli_incomplete_chip_exits_1_and_names_the_blob(tmp_path, cache, fake_pins, capsys):
  root = fake_tree(tmp_path / "fw", {n: blob(n) for n in GFX1100})
  assert firmware.main(["--from", str(root), "--chip", "gfx1100", "--chip", "gfx950"]) == 1
  out = capsys.readouterr().out
  blobs, chips = tables(out)
  assert blobs == {n: f"installed from {root}" for n in GFX1100} | {"smu_13_0_0.bin": f"hash differs in {root}"} | {n: "missing" for n in GFX950}
  assert chips == {"gfx1100": "no: smu_13_0_0.bin differs", "gfx950": "no: " + ", ".join(f"{n} missing" for n in GFX950)}
  assert not (cache / firmware.cache_path("smu_13_0_0.bin", fake_pins["smu_13_0_0.bin"]).name).exists()

def test_cli_list_writes_nothing(tmp_path, cache, fake_pins, capsys):
  root = fake_tree(tmp_path / "fw", {n: blob(n) for n in GFX950})
  assert firmware.main(["--from", str(root), "--chip", "gfx950", "--list"]) == 1
  assert tables(capsys.readouterr().out) == ({n: f"available in {root}" for n in GFX950}, {"gfx950": "after install"})
  assert not cache.exists()

def test_cli_without_chip_needs_every_pinned_blob(tmp_path, cache, fake_pins, capsys):
  root = fake_tree(tmp_path / "fw", {n: blob(n) for n in GFX950 + GFX1100})
  assert firmware.main(["--from", str(root)]) == 1   # smu_13_0_0.bin differs
  out = capsys.readouterr().out
  blobs, chips = tables(out)
  g1201, g942 = firmware.blobs_for(PROFILES["gfx1201"]), firmware.blobs_for(PROFILES["gfx942"])
  assert list(blobs) == list(fake_pins) + g1201 + g942
  assert chips == {"gfx1100": "no: smu_13_0_0.bin differs", "gfx950": "yes",
                   **{a: "no: " + ", ".join(f"{n} unpinned" for n in bs) for a, bs in (("gfx1201", g1201), ("gfx942", g942))}}

def test_cli_usage_errors_exit_2(tmp_path, cache, capsys):
  assert firmware.main(["--from", str(tmp_path / "nope")]) == 2
  assert capsys.readouterr().err == (f"mockgpu firmware: --from {tmp_path / 'nope'}: no such folder; give a linux-firmware tree "
                                     "(e.g. /lib/firmware) or its amdgpu/\n")
  assert firmware.main(["--deb", str(tmp_path / "x.deb")]) == 2
  assert "no such file; download one with `apt-get download firmware-amd-graphics`" in capsys.readouterr().err
  with pytest.raises(SystemExit) as e: firmware.main(["--chip", "gfx9999"])
  assert e.value.code == 2 and "invalid choice: 'gfx9999'" in capsys.readouterr().err

def _deb(tmp_path:Path, files:dict[str, bytes], where="usr/lib/firmware/amdgpu") -> Path:
  pkg = tmp_path / "pkg"
  (pkg / "DEBIAN").mkdir(parents=True)
  (pkg / "DEBIAN" / "control").write_text("Package: firmware-amd-graphics\nVersion: 1\nArchitecture: all\nMaintainer: t <t@t>\nDescription: t\n")
  (pkg / where).mkdir(parents=True)
  for n, b in files.items(): (pkg / where / n).write_bytes(b)
  subprocess.run(["dpkg-deb", "--root-owner-group", "--build", str(pkg), str(deb:=tmp_path / "fw_1_all.deb")], check=True, capture_output=True)
  shutil.rmtree(pkg)
  return deb

@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="dpkg-deb is not installed")
def test_cli_deb_source(tmp_path, cache, fake_pins, capsys):
  deb = _deb(tmp_path, {n: blob(n) for n in GFX950})
  assert firmware.main(["--deb", str(deb), "--chip", "gfx950"]) == 0
  assert tables(capsys.readouterr().out) == ({n: "installed from fw_1_all.deb" for n in GFX950}, {"gfx950": "yes"})
  assert sorted(p.read_bytes() for p in cache.iterdir()) == sorted(blob(n) for n in GFX950)
  other = _deb(tmp_path / "o", {"x": b"x"}, where="usr/share/doc/x")
  assert firmware.main(["--deb", str(other)]) == 2
  assert capsys.readouterr().err.endswith("no usr/lib/firmware/amdgpu in it; is it Debian's firmware-amd-graphics (non-free-firmware)?\n")

# *** real blobs ***

def test_real_blobs(cache, tmp_path):
  """Real linux-firmware blobs: $MOCKGPU_FIRMWARE_DEB (the firmware-amd-graphics .deb dev.sh fetches), else /lib/firmware."""
  if (deb:=os.environ.get("MOCKGPU_FIRMWARE_DEB")): src = firmware.unpack_deb(Path(deb), tmp_path / "deb")
  elif Path("/lib/firmware/amdgpu").is_dir(): src = firmware.tree(Path("/lib/firmware"))
  else: pytest.skip("no real firmware here: set MOCKGPU_FIRMWARE_DEB to a firmware-amd-graphics .deb (./dev.sh test fetches one) or install it")
  for b in firmware.resolve(list(fw.hashes), [src], write=False):
    copies = [sha(d) for _, d in firmware.read_blob(src, b.name)]
    assert b.status == ("available" if fw.hashes[b.name] in copies else "differs" if copies else "missing"), b
