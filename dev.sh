#!/usr/bin/env bash
# One-stop set-up and entry point on a fresh Debian 12 machine (run as root or with sudo available):
#   ./dev.sh demo         tinygrad on the mock AMD GPU, with a short report
#   ./dev.sh test         the default test suite (what CI runs); with MOCKGPU_TINYGRAD_TESTS naming tinygrad's test tree
#                         (or a checkout), also `mockgpu ci --suite fast` on it (tinygrad's test_tiny, test_hcq, test_jit)
#   ./dev.sh ci           tinygrad's whole mock-GPU CI matrix on MOCKGPU_TINYGRAD_TESTS (slow; installs torch, as tinygrad's CI has it)
#   ./dev.sh slow         the slow suites (long fuzz campaigns, full-size workloads)
#   ./dev.sh bench        benchmarks (emulator throughput, full-stack ratios)
#   ./dev.sh lint         ruff (settings in pyproject.toml) and the line budget per package (.ci/line_budget.py); CI runs it first
# Installs system packages (LLVM 19 for tinygrad's AMD compiler, LLVM 22 for gfx950, a C compiler, clang for tinygrad's CPU backend) and a
# virtualenv in .venv with mockgpu installed editable (pip, setuptools and the test tools come from PyPI, nothing from the
# system's Python but the interpreter), then runs the command.
set -euo pipefail
cd "$(dirname "$0")"
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
need_apt=()
libs="$( (ldconfig -p || /sbin/ldconfig -p) 2>/dev/null || true)"   # /sbin is not on a non-root user's PATH
grep -q 'libLLVM.so.19\|libLLVM-19' <<<"$libs" || need_apt+=(libllvm19)
grep -q 'libLLVM.so.2[0-9]\|libLLVM-2[0-9]' <<<"$libs" || need_apt+=(libllvm22)   # gfx950 (CDNA) kernels need LLVM >= 20
command -v cc >/dev/null || need_apt+=(gcc libc6-dev)
command -v clang >/dev/null || command -v clang-19 >/dev/null || need_apt+=(clang-19)
command -v git >/dev/null || need_apt+=(git)   # tests/e2e/test_install.py builds the sdist from `git ls-files`
command -v python3 >/dev/null || need_apt+=(python3)
python3 -c 'import venv, ensurepip' 2>/dev/null || need_apt+=(python3-venv)   # Debian ships ensurepip in python3.X-venv
if [ ${#need_apt[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
# tinygrad's CPU backend runs $CC or `clang`
command -v clang >/dev/null || export CC="${CC:-clang-19}"
if [ ! -x .venv/bin/python ]; then python3 -m venv .venv; fi
if ! .venv/bin/python -c 'import mockgpu, pytest, xdist, build, ruff' 2>/dev/null || [ pyproject.toml -nt .venv/.installed ] || [ setup.py -nt .venv/.installed ]; then
  .venv/bin/pip install -q --upgrade pip >/dev/null
  .venv/bin/pip install -q -e ".[test]"
  touch .venv/.installed
fi
export PATH="$PWD/.venv/bin:$PATH"
# tinygrad's AM driver (DEV=MOCKPCI+AMD, default chip gfx950) boots only with real firmware: Debian's firmware-amd-graphics
# (component non-free-firmware, which the default sources lack) carries gfx950's and gfx942's blobs with the sha256 tinygrad pins. The .deb
# is fetched once into .cache/firmware with a throw-away apt state (the machine's apt configuration is not touched), then
# `mockgpu firmware` copies the verified blobs into tinygrad's download cache. Without network the MOCKPCI tests say why.
firmware() {
  local deb; deb=$(ls .cache/firmware/firmware-amd-graphics_*_all.deb 2>/dev/null | tail -1 || true)
  if [ -z "$deb" ]; then
    local d uri; d=$(mktemp -d); mkdir -p "$d/lists/partial" "$d/cache/archives/partial" "$d/parts" .cache/firmware
    uri=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] ${uri:-http://deb.debian.org/debian} sid non-free-firmware" > "$d/sources.list"
    local O=(-o "Dir::Etc::SourceList=$d/sources.list" -o "Dir::Etc::SourceParts=$d/parts" -o "Dir::State::Lists=$d/lists" -o "Dir::Cache=$d/cache")
    if apt-get -qq "${O[@]}" update >/dev/null 2>&1 && (cd .cache/firmware && apt-get -qq "${O[@]}" download firmware-amd-graphics >/dev/null 2>&1); then
      deb=$(ls .cache/firmware/firmware-amd-graphics_*_all.deb | tail -1)
    else echo "dev.sh: could not download firmware-amd-graphics (non-free-firmware); MOCKPCI+AMD tests will say so" >&2; fi
    rm -rf "$d"
  fi
  if [ -n "$deb" ]; then
    export MOCKGPU_FIRMWARE_DEB="$PWD/$deb"
    mockgpu firmware --chip gfx950 --chip gfx942 --deb "$deb" >/dev/null ||
      echo "dev.sh: $deb lacks gfx950 or gfx942 blobs with tinygrad's hashes (mockgpu firmware --list --deb $deb)" >&2
  fi
}
cmd="${1:-test}"; shift || true
case "$cmd" in
  demo)  exec mockgpu demo "$@" ;;
  test)
    firmware
    if [ $# -gt 0 ] || [ -z "${MOCKGPU_TINYGRAD_TESTS:-}" ]; then exec python -m pytest -n 2 --dist worksteal -q "$@"; fi
    rc=0; python -m pytest -n 2 --dist worksteal -q || rc=$?   # worksteal: an idle worker takes queued tests from a busy one
    mockgpu ci --suite fast -j 2 --tests "$MOCKGPU_TINYGRAD_TESTS" || rc=$?   # rows two at a time: faster than -n 2 here (docs/ci.md)
    exit $rc ;;
  ci)
    firmware
    python -c 'import torch' 2>/dev/null || pip install -q torch==2.13.0
    exec mockgpu ci -n 2 --tests "${MOCKGPU_TINYGRAD_TESTS:?set MOCKGPU_TINYGRAD_TESTS to the tinygrad test tree or a tinygrad checkout}" "$@" ;;
  slow)  exec python -m pytest -n 2 -q -m slow "$@" ;;
  bench) exec mockgpu bench "$@" ;;
  lint)  rc=0; ruff check "$@" . || rc=$?; python .ci/line_budget.py || rc=$?; exit $rc ;;
  *) echo "usage: ./dev.sh demo|test|ci|slow|bench|lint [args]" >&2; exit 2 ;;
esac
