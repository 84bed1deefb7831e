"""The capture format: recorded kernel launches (code, dispatch state, memory before and after each launch) in a
self-describing directory, written by `mockgpu replay capture` and read by `mockgpu replay run|diff|show` (docs/replay.md).

    DIR/manifest.json   {"format": "mockgpu-capture", "version": 1, ...}: written when the captured command ends
    DIR/launches.jsonl  one JSON object per line: a "process" record per capturing process, then its "launch" records
    DIR/blobs/<sha256>  one codec byte ("z": a zlib stream follows, "n": the bytes follow as they are) and the contents;
                        the name is the sha256 of the contents

A launch is a `Dispatch` (what the command processor starts) plus `Region`s of GPU memory (the code object, the kernel
arguments, the buffers they point to) with their contents before and, for buffers, after the launch, and the `Pointer`s
between them, so a replay can place the regions anywhere and patch the pointers. Any producer writes the same records:
the mock driver's recorder (mockgpu.mock.recorder) does today; a capture on a real GPU would write them from the same
facts. `CaptureWriter` appends records (one O_APPEND write each, so processes and threads may share a directory) and
blobs (written to a temporary name, then renamed); `Capture` reads and validates."""
from __future__ import annotations
import dataclasses, datetime, hashlib, json, os, pathlib, threading, zlib
from dataclasses import dataclass
from mockgpu.emu.api import Dispatch
from mockgpu.emu.errors import CaptureError

__all__ = ["FORMAT", "VERSION", "MANIFEST", "LOG", "BLOBS", "Region", "Pointer", "Launch", "CaptureWriter", "write_manifest", "Capture",
           "encode_blob", "decode_blob"]

FORMAT, VERSION = "mockgpu-capture", 1
MANIFEST, LOG, BLOBS = "manifest.json", "launches.jsonl", "blobs"
SGPRS = -1   # Pointer.src of a pointer held in the dispatch's user SGPRs
SAMPLE, WORTH = 1 << 16, 0.9   # contents are stored as they are when zlib shrinks their first 64 KiB by less than 10 %

@dataclass(frozen=True)
class Region:
  """GPU memory `[addr, addr+size)` a launch uses, mapped in `granule`s. role: "code" (the allocation holding the code
  object), "kernarg" / "dispatch packet" / "queue" (what a user SGPR points to; read-only by the ABI), "buffer" (an
  allocation a kernel argument points into). before/after: blob names of the contents (after only for buffers, None if
  the launch faulted). arg: for buffers, the kernel argument (byte offset in the kernarg region // 8) that points to it."""
  role: str
  addr: int
  size: int
  granule: int
  before: str
  after: str | None = None
  arg: int | None = None
  @property
  def label(self) -> str: return f"arg{self.arg}" if self.arg is not None else self.role

@dataclass(frozen=True)
class Pointer:
  """A u64 pointer the launch holds: in the user SGPRs (src == SGPRS, `at` = index of the low dword) or in region `src`
  (`at` = byte offset), pointing `offset` bytes into region `dst`."""
  src: int
  at: int
  dst: int
  offset: int

@dataclass(frozen=True)
class Launch:
  """One recorded kernel launch. index: position among the capture's launches; pid: the capturing process; gpu: its GPU
  (topology node); engine: "PM4" (DISPATCH_DIRECT) or "AQL" (KERNEL_DISPATCH); name: tinygrad's kernel name if known;
  elf: blob of the original code object if known; fault: "ErrorClass: message" if the launch faulted (no after states)."""
  index: int
  pid: int
  gpu: int
  engine: str
  name: str | None
  dispatch: Dispatch
  regions: tuple[Region, ...]
  pointers: tuple[Pointer, ...]
  elf: str | None = None
  fault: str | None = None

  @property
  def code(self) -> Region: return next(r for r in self.regions if r.role == "code")
  @property
  def kernel(self) -> str:
    """The kernel's identity across captures: its name, else "code:" and the start of its code hash."""
    return self.name or f"code:{self.code.before[:12]}"
  @property
  def label(self) -> str: return f"launch {self.index} ({self.kernel})"

  def to_json(self) -> dict:
    return {"type": "launch", "pid": self.pid, "gpu": self.gpu, "engine": self.engine, "name": self.name, "elf": self.elf, "fault": self.fault,
            "dispatch": dataclasses.asdict(self.dispatch), "regions": [dataclasses.asdict(r) for r in self.regions],
            "pointers": [dataclasses.astuple(p) for p in self.pointers]}

  @staticmethod
  def from_json(index:int, o:dict) -> Launch:
    d = {k: tuple(v) if isinstance(v, list) else v for k, v in o["dispatch"].items()}
    return Launch(index, o["pid"], o["gpu"], o["engine"], o.get("name"), Dispatch(**d), tuple(Region(**r) for r in o["regions"]),
                  tuple(Pointer(*p) for p in o["pointers"]), o.get("elf"), o.get("fault"))

def _sha(data:bytes) -> str: return hashlib.sha256(data).hexdigest()

def encode_blob(data:bytes) -> bytes:
  """A blob file's bytes for `data`: b"z" + zlib (level 1) if that pays (judged on the first 64 KiB: random floats do not
  compress, and zlib on them runs at a few MB/s), else b"n" + data."""
  return b"z" + zlib.compress(data, 1) if len(zlib.compress(data[:SAMPLE], 1)) < WORTH * len(data[:SAMPLE]) else b"n" + data

def decode_blob(raw:bytes) -> bytes:
  """The contents a blob file's bytes hold. Raises ValueError (unknown codec byte, truncated or trailing zlib data)."""
  if raw[:1] == b"n": return raw[1:]
  if raw[:1] != b"z": raise ValueError(f"unknown codec byte {raw[:1]!r} (version 1 has b'z' and b'n')")
  z = zlib.decompressobj()
  try: data = z.decompress(raw[1:])
  except zlib.error as e: raise ValueError(str(e)) from None
  if not z.eof or z.unused_data: raise ValueError("the zlib stream is truncated" if not z.eof else "bytes follow the zlib stream")
  return data

class CaptureWriter:
  """Appends records and blobs to the capture directory `root` (created if missing). Thread-safe.

  Raises: CaptureError if the directory cannot be written."""
  def __init__(self, root:str|os.PathLike):
    self.root, self.lock, self.known = pathlib.Path(root), threading.Lock(), set()
    try:
      (self.root / BLOBS).mkdir(parents=True, exist_ok=True)
      self.fd = os.open(self.root / LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as e: raise CaptureError(f"cannot write the capture directory {self.root}: {e.strerror or e}") from None

  def blob(self, data:bytes) -> str:
    """Store `data` (once per content). Returns its name, the sha256 of `data`."""
    h = _sha(data)
    with self.lock:
      if h in self.known: return h
      path = self.root / BLOBS / h
      try:
        if not path.exists():
          tmp = path.with_name(f".{h}.{os.getpid()}.{threading.get_ident()}")
          tmp.write_bytes(encode_blob(data))
          os.replace(tmp, path)
      except OSError as e: raise CaptureError(f"cannot write blob {path}: {e.strerror or e}") from None
      self.known.add(h)
    return h

  def record(self, obj:dict):
    """Append one record (a JSON object) to the launch log."""
    try: os.write(self.fd, (json.dumps(obj, separators=(",", ":")) + "\n").encode())
    except OSError as e: raise CaptureError(f"cannot append to {self.root / LOG}: {e.strerror or e}") from None

def _log(root:pathlib.Path) -> list[dict]:
  try: lines = (root / LOG).read_text().splitlines()
  except OSError as e: raise CaptureError(f"{root / LOG}: {e.strerror or e}; the capture is incomplete (capture it again)") from None
  out = []
  for n, line in enumerate(lines, 1):
    try: o = json.loads(line)
    except json.JSONDecodeError as e:
      raise CaptureError(f"{root / LOG} line {n} is not JSON ({e.msg}); the capture was cut short (capture it again)") from None
    if not isinstance(o, dict) or o.get("type") not in ("process", "launch"):
      raise CaptureError(f"{root / LOG} line {n} is not a process or launch record")
    out.append(o)
  return out

def write_manifest(root:str|os.PathLike, command:list[str], exit_code:int|None, seconds:float) -> dict:
  """Write DIR/manifest.json for the records in DIR's launch log. Returns the manifest.

  Args: command: the captured command line. exit_code: its exit status (None if it was interrupted). seconds: its wall time."""
  root = pathlib.Path(root)
  recs = _log(root)
  procs = [{k: v for k, v in r.items() if k != "type"} for r in recs if r["type"] == "process"]
  launches = [r for r in recs if r["type"] == "launch"]
  blobs = [p for p in (root / BLOBS).iterdir() if not p.name.startswith(".")]
  m = {"format": FORMAT, "version": VERSION, "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
       "command": command, "exit_code": exit_code, "seconds": round(seconds, 3), "launches": len(launches),
       "archs": sorted({r["dispatch"]["arch"] for r in launches}),
       "tinygrad": procs[0]["tinygrad"] if procs else None, "mockgpu": procs[0]["mockgpu"] if procs else None, "processes": procs,
       "compression": "zlib", "hash": "sha256", "log": LOG, "blobs": len(blobs), "blob_bytes": sum(p.stat().st_size for p in blobs)}
  (root / MANIFEST).write_text(json.dumps(m, indent=1) + "\n")
  return m

class Capture:
  """A capture directory, validated: manifest (format, version), launch log (complete, well-formed).

  Args: root: the directory. Raises: CaptureError naming what is wrong and what to do."""
  def __init__(self, root:str|os.PathLike):
    self.root = pathlib.Path(root)
    if not self.root.is_dir(): raise CaptureError(f"{self.root} is not a directory; give the --out directory of `mockgpu replay capture`")
    try: m = json.loads((self.root / MANIFEST).read_text())
    except FileNotFoundError:
      raise CaptureError(f"{self.root} has no {MANIFEST}: not a capture, or its command is still running or was killed "
                         "(`mockgpu replay capture` writes the manifest when the command ends)") from None
    except (OSError, json.JSONDecodeError) as e: raise CaptureError(f"{self.root / MANIFEST} is unreadable or not JSON: {e}") from None
    if not isinstance(m, dict) or m.get("format") != FORMAT:
      raise CaptureError(f"{self.root / MANIFEST}: format={m.get('format') if isinstance(m, dict) else None!r}, expected {FORMAT!r}; "
                         "not a mockgpu capture")
    if m.get("version") != VERSION:
      raise CaptureError(f"{self.root / MANIFEST}: format version {m.get('version')!r}; this mockgpu reads version {VERSION} only "
                         f"(use the mockgpu that wrote it, or capture again)")
    if m.get("compression") != "zlib" or m.get("hash") != "sha256":
      raise CaptureError(f"{self.root / MANIFEST}: compression={m.get('compression')!r} hash={m.get('hash')!r}; version {VERSION} "
                         "captures use zlib and sha256")
    self.manifest = m
    recs = _log(self.root)
    self.processes = [r for r in recs if r["type"] == "process"]
    try: self.launches = [Launch.from_json(i, r) for i, r in enumerate(r for r in recs if r["type"] == "launch")]
    except (KeyError, TypeError, ValueError) as e: raise CaptureError(f"{self.root / LOG}: a launch record is malformed ({e!r})") from None
    if len(self.launches) != m.get("launches"):
      raise CaptureError(f"{self.root / LOG} holds {len(self.launches)} launches, the manifest says {m.get('launches')}; the capture directory was "
                         "changed after it was written (capture it again)")

  def __repr__(self) -> str: return f"Capture({str(self.root)!r}, {len(self.launches)} launches)"

  def blobs(self) -> dict[str, str]:
    """Every blob the launches reference -> where the first reference is (for messages)."""
    out: dict[str, str] = {}
    for l in self.launches:
      for i, r in enumerate(l.regions):
        for when in ("before", "after"):
          if (h:=getattr(r, when)) is not None: out.setdefault(h, f"{l.label} region {i} {r.label} {when}")
      if l.elf is not None: out.setdefault(l.elf, f"{l.label} code object (ELF)")
    return out

  def check(self):
    """Raise CaptureError naming the first referenced blob that is missing (a cheap check before a long replay)."""
    for h, where in self.blobs().items():
      if not (self.root / BLOBS / h).is_file():
        raise CaptureError(f"blob {h} ({where}) is missing from {self.root / BLOBS}; the capture is incomplete (capture it again)")

  def blob(self, h:str, where:str="") -> bytes:
    """The contents of blob `h`, checked against its name. Raises CaptureError if missing or corrupt."""
    path = self.root / BLOBS / h
    try: data = decode_blob(path.read_bytes())
    except FileNotFoundError: raise CaptureError(f"blob {h}{f' ({where})' if where else ''} is missing from {self.root / BLOBS}; "
                                                 "the capture is incomplete (capture it again)") from None
    except (OSError, ValueError) as e: raise CaptureError(f"blob {path} is corrupt ({e}); capture again") from None
    if (got:=_sha(data)) != h:
      raise CaptureError(f"blob {path} is corrupt: its contents hash to {got}, not its name; blobs are content-addressed, so an edited blob "
                         "must be stored under its new sha256 and the launch log updated (docs/replay.md)")
    return data
