"""`mockgpu firmware`: fill tinygrad's firmware cache offline from linux-firmware blobs (a firmware tree such as /lib/firmware
or a firmware-amd-graphics .deb), each verified against the sha256 tinygrad pins for it.

tinygrad's AM driver (DEV=PCI+AMD, USB+AMD and their MOCK variants) loads firmware with `helpers.fetch_fw("amdgpu", name,
sha256)`: it downloads from a pinned linux-firmware commit into its download cache unless a file with the pinned hash is
already there. This module puts the blobs there under the name tinygrad looks for, and never writes a blob whose hash differs.
See docs/mock.md, "Firmware".
"""
from __future__ import annotations
import argparse, hashlib, json, lzma, os, shutil, subprocess, sys, tempfile
from dataclasses import dataclass
from pathlib import Path
from mockgpu.mock.profiles import PROFILES, GPUProfile
from mockgpu.tinygrad.errors import FirmwareError

__all__ = ["Source", "Blob", "pins", "blobs_for", "cache_path", "tree", "unpack_deb", "default_sources", "read_blob", "resolve", "main"]

OK = ("cached", "installed", "system")   # statuses with which tinygrad finds the blob offline

@dataclass(frozen=True)
class Source:
  """A folder of linux-firmware's amdgpu/ blobs (NAME, NAME.zst or NAME.xz); `label` names it in reports."""
  label: str
  dir: Path

@dataclass(frozen=True)
class Blob:
  """What became of one blob.

  status: "cached" (tinygrad's cache already has it), "installed" (copied from `source`), "available" (`source` has it; --list
  writes nothing), "differs" (found only with another sha256, in `source`), "unreadable" (`detail` says why), "missing",
  "unpinned" (tinygrad has no hash for it: its AM driver cannot load it) or "system" (tinygrad reads
  /lib/firmware/amdgpu/NAME.zst itself, Python >= 3.14).
  """
  name: str
  sha256: str
  status: str
  source: str = ""
  cache: Path|None = None
  detail: str = ""

def pins() -> dict[str, str]:
  """tinygrad's pinned firmware: blob name -> sha256 (`tinygrad.runtime.autogen.am.fw.hashes`, 105 blobs in tinygrad 0.14.0)."""
  from tinygrad.runtime.autogen.am import fw
  return dict(fw.hashes)

def _v(ver:tuple[int, int, int]) -> str: return "_".join(map(str, ver))

def blobs_for(p:GPUProfile) -> list[str]:
  """The blobs tinygrad's AM driver loads for a GPU with `p`'s IP versions (fields gc, sdma, mp0, mp1), in load order.

  Mirrors `AMFirmware.__init__` (tinygrad runtime/support/am/amdev.py): psp_<MP0>_sos, smu_<MP1> (none for MP1 13.0.12),
  sdma_<SDMA0>, then gc_<GC>_ pfp and me (GC >= 12), mec, imu (GC >= 11) and rlc.
  """
  gc = [*(("pfp", "me") if p.gc >= (12,0,0) else ()), "mec", *(("imu",) if p.gc >= (11,0,0) else ()), "rlc"]
  return [f"psp_{_v(p.mp0)}_sos.bin", *([f"smu_{_v(p.mp1)}.bin"] if p.mp1 != (13,0,12) else []), f"sdma_{_v(p.sdma)}.bin",
          *(f"gc_{_v(p.gc)}_{x}.bin" for x in gc)]

class _Asked(Exception): pass

def cache_path(name:str, sha256:str) -> Path|None:
  """The file tinygrad's `fetch_fw("amdgpu", name, sha256)` reads, or downloads to if it is missing or its hash differs.

  tinygrad itself is asked: its `fetch_fw` runs with `helpers.fetch` swapped for a recorder, and the path is `fetch`'s
  (the download folder, ~/.cache/tinygrad/downloads or $XDG_CACHE_HOME/tinygrad/downloads as read when tinygrad was imported,
  /raid/downloads on a tinybox; then the subdir `fw` and the md5 of the URL).

  Returns:
    the path, or None if fetch_fw needs no download (Python >= 3.14 and /lib/firmware/amdgpu/NAME.zst has the hash).
  Raises:
    FirmwareError: tinygrad's fetch_fw asks fetch for something this mirror does not know (a name, headers, gunzip).
  """
  from tinygrad import helpers
  asked: dict = {}
  def record(url, name=None, subdir=None, **kw):
    asked.update(url=url, name=name, subdir=subdir, **kw)
    raise _Asked
  real, helpers.fetch = helpers.fetch, record
  try: helpers.fetch_fw("amdgpu", name, sha256)
  except _Asked: pass
  finally: helpers.fetch = real
  if not asked: return None
  if asked["name"] is not None or asked.get("headers") or asked.get("gunzip") or asked.get("extract"):
    raise FirmwareError(f"tinygrad's fetch_fw calls fetch({asked}) for {name}: mockgpu firmware only mirrors fetch(url, subdir=..., "
                        "sha256=...); update mockgpu for this tinygrad")
  return helpers._ensure_downloads_dir() / (asked["subdir"] or "") / hashlib.md5(asked["url"].encode()).hexdigest()

def tree(path:Path, label:str|None=None) -> Source:
  """A firmware tree as a source: `path` is a linux-firmware root with amdgpu/ in it (/lib/firmware) or the amdgpu folder itself.

  Raises:
    FirmwareError: `path` is not a folder.
  """
  if not path.is_dir(): raise FirmwareError(f"--from {path}: no such folder; give a linux-firmware tree (e.g. /lib/firmware) or its amdgpu/")
  return Source(label or str(path), path / "amdgpu" if (path / "amdgpu").is_dir() else path)

def unpack_deb(deb:Path, into:Path) -> Source:
  """Unpack a firmware-amd-graphics .deb (`dpkg-deb -x`) into the folder `into`; its usr/lib/firmware/amdgpu (or
  lib/firmware/amdgpu, older packages) is the source, labelled with the .deb's file name.

  Raises:
    FirmwareError: `deb` is not a file, dpkg-deb is missing or fails, or the package has no firmware/amdgpu folder.
  """
  if not deb.is_file(): raise FirmwareError(f"--deb {deb}: no such file; download one with `apt-get download firmware-amd-graphics`")
  if shutil.which("dpkg-deb") is None: raise FirmwareError(f"--deb {deb}: dpkg-deb is not installed (apt-get install dpkg); or unpack it "
                                                             "yourself and pass --from DIR/usr/lib/firmware")
  if (r:=subprocess.run(["dpkg-deb", "-x", str(deb), str(into)], capture_output=True, text=True)).returncode != 0:
    raise FirmwareError(f"--deb {deb}: dpkg-deb -x failed: {r.stderr.strip() or r.returncode}")
  for sub in ("usr/lib/firmware/amdgpu", "lib/firmware/amdgpu"):
    if (into / sub).is_dir(): return Source(deb.name, into / sub)
  raise FirmwareError(f"--deb {deb}: no usr/lib/firmware/amdgpu in it; is it Debian's firmware-amd-graphics (non-free-firmware)?")

def default_sources() -> list[Source]:
  """The amdgpu folder of the installed firmware-amd-graphics package (from `dpkg-query -L`), else /lib/firmware/amdgpu."""
  try: files = subprocess.run(["dpkg-query", "-L", "firmware-amd-graphics"], capture_output=True, text=True).stdout.splitlines()
  except OSError: files = []
  if dirs:=[Path(f) for f in files if f.endswith("/firmware/amdgpu") and Path(f).is_dir()]:
    return [Source(f"{dirs[0]} (firmware-amd-graphics)", dirs[0])]
  return [Source("/lib/firmware", Path("/lib/firmware/amdgpu"))]

def _unzstd(p:Path) -> bytes:
  try:
    from compression.zstd import decompress   # type: ignore[import-not-found]  # Python >= 3.14
    return decompress(p.read_bytes())
  except ImportError: pass
  if shutil.which("zstd") is None: raise FirmwareError(f"{p}: a .zst blob and no zstd decompressor (apt-get install zstd, or Python >= 3.14)")
  if (r:=subprocess.run(["zstd", "-dcq", str(p)], capture_output=True)).returncode != 0:
    raise FirmwareError(f"{p}: zstd -d failed: {r.stderr.decode(errors='replace').strip()}")
  return r.stdout

def _unxz(p:Path) -> bytes: return lzma.decompress(p.read_bytes())

def read_blob(src:Source, name:str) -> list[tuple[Path, bytes]]:
  """Every copy of blob `name` in `src` (NAME, NAME.zst, NAME.xz), decompressed, as (file, bytes).

  Raises:
    FirmwareError: a copy exists but cannot be decompressed (zstd missing, corrupt file).
  """
  out = []
  for p, unpack in ((src.dir / name, Path.read_bytes), (src.dir / f"{name}.zst", _unzstd), (src.dir / f"{name}.xz", _unxz)):
    if not p.is_file(): continue
    try: out.append((p, unpack(p)))
    except lzma.LZMAError as e: raise FirmwareError(f"{p}: not valid xz data ({e})") from None
  return out

def _write(dest:Path, data:bytes):
  dest.parent.mkdir(parents=True, exist_ok=True)
  with tempfile.NamedTemporaryFile(dir=dest.parent, delete=False) as f: f.write(data)
  os.replace(f.name, dest)   # atomic, like tinygrad's fetch

def resolve(names:list[str], sources:list[Source], pinned:dict[str, str]|None=None, write:bool=True) -> list[Blob]:
  """Look up each blob in tinygrad's cache, then in `sources` in order, and copy the first copy whose sha256 equals the pin.

  Args:
    names: blob file names (e.g. "psp_13_0_12_sos.bin").
    sources: where to look (`tree`, `unpack_deb`, `default_sources`).
    pinned: name -> sha256; default tinygrad's table (`pins()`). A blob is written only if its hash equals this pin.
    write: False only reports ("available" instead of "installed").
  Returns:
    one Blob per name, in order.
  """
  pinned = pins() if pinned is None else pinned
  out = []
  for name in names:
    if (sha:=pinned.get(name)) is None:
      out.append(Blob(name, "", "unpinned", detail="tinygrad pins no sha256 for it, so its AM driver cannot load it"))
      continue
    if (dest:=cache_path(name, sha)) is None:
      out.append(Blob(name, sha, "system", "/lib/firmware/amdgpu"))
      continue
    if dest.is_file() and hashlib.sha256(dest.read_bytes()).hexdigest() == sha:
      out.append(Blob(name, sha, "cached", cache=dest))
      continue
    differs, unreadable, found = [], [], None
    for src in sources:
      try: copies = read_blob(src, name)
      except FirmwareError as e:
        unreadable.append((src, str(e)))
        continue
      if (hit:=next((d for _, d in copies if hashlib.sha256(d).hexdigest() == sha), None)) is not None:
        found = (src, hit)
        break
      differs += [(src, hashlib.sha256(d).hexdigest()) for _, d in copies]
    if found is not None:
      if write: _write(dest, found[1])
      out.append(Blob(name, sha, "installed" if write else "available", found[0].label, dest))
    elif differs: out.append(Blob(name, sha, "differs", differs[0][0].label, dest, f"sha256 {differs[0][1]}, tinygrad pins {sha}"))
    elif unreadable: out.append(Blob(name, sha, "unreadable", unreadable[0][0].label, dest, unreadable[0][1]))
    else: out.append(Blob(name, sha, "missing", cache=dest))
  return out

# *** CLI ***

def _status(b:Blob) -> str:
  return {"cached": "cached already", "installed": f"installed from {b.source}", "available": f"available in {b.source}",
          "differs": f"hash differs in {b.source}", "unreadable": f"unreadable: {b.detail}", "missing": "missing",
          "unpinned": "not pinned by tinygrad", "system": "read by tinygrad from /lib/firmware/amdgpu (.zst)"}[b.status]

def main(argv:list[str]|None=None) -> int:
  """`mockgpu firmware`: install the pinned blobs (all, or those of --chip) into tinygrad's cache, print a table per blob and per chip.

  Returns:
    0 if every requested chip (without --chip: every pinned blob) is in the cache, 1 if not, 2 on a usage error.
  """
  ap = argparse.ArgumentParser(prog="mockgpu firmware", description="fill tinygrad's firmware cache offline from linux-firmware blobs "
                               "(a firmware tree or a firmware-amd-graphics .deb), each checked against the sha256 tinygrad pins")
  ap.add_argument("--from", dest="trees", action="append", type=Path, default=[], metavar="PATH",
                  help="a linux-firmware tree (with amdgpu/ in it) or its amdgpu folder; repeatable, searched in order "
                       "(default: the installed firmware-amd-graphics, else /lib/firmware)")
  ap.add_argument("--deb", action="append", type=Path, default=[], metavar="FILE.deb",
                  help="a firmware-amd-graphics .deb (Debian non-free-firmware), unpacked to a temporary folder; repeatable")
  ap.add_argument("--chip", action="append", choices=list(PROFILES), metavar="ARCH",
                  help=f"only the blobs tinygrad's AM driver loads for this GPU ({', '.join(PROFILES)}); repeatable (default: every pinned blob)")
  ap.add_argument("--list", action="store_true", help="show what is needed, cached and available; write nothing")
  ap.add_argument("--json", type=Path, metavar="FILE", help="also write the result as JSON (schema in docs/mock.md, 'Firmware')")
  a = ap.parse_args(argv)
  pinned, chips = pins(), a.chip or list(PROFILES)
  names = list(dict.fromkeys([*([] if a.chip else pinned), *(n for c in chips for n in blobs_for(PROFILES[c]))]))
  with tempfile.TemporaryDirectory(prefix="mockgpu-firmware-") as tmp:
    try:
      sources = [tree(t) for t in a.trees] + [unpack_deb(d, Path(tmp) / str(i)) for i, d in enumerate(a.deb)] or default_sources()
      blobs, absent = resolve(names, sources, pinned, write=not a.list), [str(s.dir) for s in sources if not s.dir.is_dir()]
    except FirmwareError as e:
      print(f"mockgpu firmware: {e}", file=sys.stderr)
      return 2
  by, w = {b.name: b for b in blobs}, max(map(len, names)) + 2
  print(f"{'blob':{w}}status\n" + "\n".join(f"{b.name:{w}}{_status(b)}" for b in blobs))
  rows = [{"chip": c, "blobs": (need:=blobs_for(PROFILES[c])), "missing": [n for n in need if by[n].status not in OK]} for c in chips]
  print(f"\n{'chip':9}{'blobs':7}boots offline")
  for r in rows:
    r["complete"] = not r["missing"]
    bad, avail = [n for n in r["missing"] if by[n].status != "available"], sum(by[n].status == "available" for n in r["missing"])
    state = "no: " + ", ".join(f"{n} {by[n].status}" for n in bad) + (f" ({avail} more available)" if avail else "")
    print(f"{r['chip']:9}{len(r['blobs']):<7}" + ("yes" if r["complete"] else "after install" if not bad else state))
  cache = next((b.cache.parent for b in blobs if b.cache is not None), None)
  print(f"\ncache: {cache}\nsources: {', '.join(s.label for s in sources)}")
  if absent:
    print(f"note: {', '.join(absent)} does not exist: install firmware-amd-graphics (Debian non-free-firmware) "
          "or pass --deb FILE.deb / --from PATH")
  if os.environ.get("DISABLE_HTTP_CACHE"): print("note: DISABLE_HTTP_CACHE is set, so tinygrad ignores this cache and downloads every blob")
  done = all(r["complete"] for r in rows) if a.chip else all(b.status in OK for b in blobs)
  if a.json:
    a.json.write_text(json.dumps({"schema": 1, "complete": done, "cache": str(cache) if cache else None, "sources": [s.label for s in sources],
      "blobs": [{"name": b.name, "sha256": b.sha256, "status": b.status, "source": b.source, "cache": str(b.cache) if b.cache else None,
                 "detail": b.detail} for b in blobs], "chips": rows}, indent=1) + "\n")
  return 0 if done else 1

if __name__ == "__main__": sys.exit(main())
