"""The virtual files of the KFD model: topology nodes, ip_discovery, power level, and the device nodes /dev/kfd and
/dev/dri/renderD<minor>. `build_tree()` returns a plain mapping path -> content, which MockFileIOInterface serves."""
from __future__ import annotations
from dataclasses import dataclass
from tinygrad.runtime.autogen.am import am
from mockgpu.mock.profiles import GPUProfile

__all__ = ["TOPOLOGY", "Dir", "Device", "GPUNode", "build_tree", "virtual_roots"]

TOPOLOGY = "/sys/devices/virtual/kfd/kfd/topology/nodes"

@dataclass(frozen=True)
class Dir:
  """A virtual directory and its entry names."""
  entries: tuple[str, ...]

@dataclass(frozen=True)
class Device:
  """A virtual character device: "kfd", or "render" for the renderD node of GPU `gpu_id`."""
  kind: str
  gpu_id: int = 0

@dataclass(frozen=True)
class GPUNode:
  """Where one GPU appears: topology node number, KFD gpu_id and DRM render minor."""
  node: int
  gpu_id: int
  render_minor: int

def _ip_versions(p:GPUProfile) -> dict[int, tuple[int, int, int]]:
  return {am.GC_HWID: p.gc, am.SDMA0_HWID: p.sdma, am.NBIF_HWID: p.nbif, am.MMHUB_HWID: p.gc}

def build_tree(profile:GPUProfile, gpus:list[GPUNode]) -> dict[str, str|Dir|Device]:
  """All virtual paths for `gpus` (plus CPU node 0, whose gpu_id is 0 as on a real system).

  Returns:
    path -> file text (`str`), `Dir` or `Device`.
  """
  tree: dict[str, str|Dir|Device] = {"/dev/kfd": Device("kfd"), TOPOLOGY: Dir(("0", *(str(g.node) for g in gpus)))}
  cpu = {"cpu_cores_count": 2, "simd_count": 0, "mem_banks_count": 1, "gfx_target_version": 0, "drm_render_minor": 0}
  tree.update({f"{TOPOLOGY}/0": Dir(("gpu_id", "name", "properties")), f"{TOPOLOGY}/0/gpu_id": "0\n", f"{TOPOLOGY}/0/name": "\n",
               f"{TOPOLOGY}/0/properties": "".join(f"{k} {v}\n" for k, v in cpu.items())})
  for g in gpus:
    base, dev = f"{TOPOLOGY}/{g.node}", f"/sys/class/drm/renderD{g.render_minor}/device"
    tree.update({base: Dir(("gpu_id", "name", "properties")), f"{base}/gpu_id": f"{g.gpu_id}\n", f"{base}/name": f"{profile.arch}\n",
                 f"{base}/properties": "".join(f"{k} {v}\n" for k, v in profile.properties(g.node, g.gpu_id, g.render_minor).items()),
                 f"/dev/dri/renderD{g.render_minor}": Device("render", g.gpu_id), f"/sys/class/drm/renderD{g.render_minor}": Dir(("device",)),
                 dev: Dir(("ip_discovery", "power_dpm_force_performance_level")), f"{dev}/ip_discovery": Dir(("die",)),
                 f"{dev}/ip_discovery/die": Dir(("0",)), f"{dev}/power_dpm_force_performance_level": "profile_standard\n"})
    ips = _ip_versions(profile)
    tree[f"{dev}/ip_discovery/die/0"] = Dir(tuple(str(h) for h in sorted(ips)) + ("GC", "SDMA0", "NBIF"))
    for hwid, ver in ips.items():
      tree.update({f"{dev}/ip_discovery/die/0/{hwid}": Dir(("0",)), f"{dev}/ip_discovery/die/0/{hwid}/0": Dir(("major", "minor", "revision"))})
      tree.update({f"{dev}/ip_discovery/die/0/{hwid}/0/{part}": f"{v}\n" for part, v in zip(("major", "minor", "revision"), ver)})
    for name, hwid in (("GC", am.GC_HWID), ("SDMA0", am.SDMA0_HWID), ("NBIF", am.NBIF_HWID)):
      tree[f"{dev}/ip_discovery/die/0/{name}"] = tree[f"{dev}/ip_discovery/die/0/{hwid}"]
  return tree

def virtual_roots(gpus:list[GPUNode]) -> tuple[str, ...]:
  """Path prefixes owned by the model: a missing path below them is ENOENT, never a lookup on the real system."""
  return ("/dev/kfd", "/sys/devices/virtual/kfd", *(f"/sys/class/drm/renderD{g.render_minor}" for g in gpus),
          *(f"/dev/dri/renderD{g.render_minor}" for g in gpus))
