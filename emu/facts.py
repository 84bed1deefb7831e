"""The facts both emulator backends use, written once: special register numbers, source-operand encodings, inline constants,
the flat apertures, status/access/space/wait codes, dispatch-wide limits and the error texts both raise. `gen_c` emits
them into every generated translation unit (`c_source()`: #defines, enums, tables) before csrc/*.h, and pybackend, the
py*.py twins and report.py import them; nothing here is repeated by hand in C (tests/unit/test_emu_facts.py)."""
from __future__ import annotations

__all__ = ["SREG", "SRC", "FCONST16", "FCONST32", "FCONST64", "APERTURE_SHARED", "APERTURE_PRIVATE", "SH_MEM_BASES", "STATUS", "KINDS",
           "SPACES", "WAITS", "TRAPS", "LIMITS", "MSG", "c_source", "inline_float", "aperture"]

# Scalar register encodings the ISA fixes on every supported arch (M0 and NULL differ: ArchSpec.enc_m0 / enc_null).
# WIDE_END: multi-dword SGPR results (S_LOAD_DWORDX8, ...) stop below it (M0 on RDNA, the end of the TTMPs).
SREG = {"VCC_LO": 106, "VCC_HI": 107, "TTMP0": 108, "WIDE_END": 124, "EXEC_LO": 126, "EXEC_HI": 127, "NSREG": 128}
SREG_VCC_LO, SREG_VCC_HI, SREG_TTMP0, SREG_WIDE_END, SREG_EXEC_LO, SREG_EXEC_HI, NSREG = SREG.values()
# TTMP registers holding the workgroup id when ArchSpec.tgid_in_ttmp (RDNA4): TTMP9 = X, TTMP7 = Y | Z << 16
SREG_TGID_X, SREG_TGID_YZ = SREG_TTMP0 + 9, SREG_TTMP0 + 7

# Source-operand encodings (9-bit src fields; 256 + n is VGPR n). INT_MAX..INT_MIN: 128 + n is n (0..64), 192 + n is -n (1..16);
# FLOAT..FLOAT+8: the inline float constants below; the aperture registers (SRC_SHARED_BASE ...) as 64-bit values
SRC = {"INT_ZERO": 128, "INT_POS_END": 192, "INT_NEG_END": 208, "SHARED_BASE": 235, "SHARED_LIMIT": 236, "PRIVATE_BASE": 237,
       "PRIVATE_LIMIT": 238, "FLOAT": 240, "FLOAT_END": 248, "VCCZ": 251, "EXECZ": 252, "SCC": 253, "LITERAL": 255, "VGPR": 256}
# inline float constants 240..248: 0.5, -0.5, 1, -1, 2, -2, 4, -4, 1/(2*pi), as the operand's float width reads them
FCONST64 = (0x3fe0000000000000, 0xbfe0000000000000, 0x3ff0000000000000, 0xbff0000000000000, 0x4000000000000000, 0xc000000000000000,
            0x4010000000000000, 0xc010000000000000, 0x3fc45f306dc9c882)
FCONST32 = (0x3f000000, 0xbf000000, 0x3f800000, 0xbf800000, 0x40000000, 0xc0000000, 0x40800000, 0xc0800000, 0x3e22f983)
FCONST16 = (0x3800, 0xb800, 0x3c00, 0xbc00, 0x4000, 0xc000, 0x4400, 0xc400, 0x3118)

# The flat apertures, 4 GiB each, as SRC_SHARED_BASE/LIMIT and SRC_PRIVATE_BASE/LIMIT report them: SH_MEM_BASES shared_base = 1,
# private_base = 2 in 64-bit address mode (base << 48), the values amdgpu's KFD (gfx9+) and tinygrad's AM driver program. A FLAT
# address whose high dword is an aperture's goes to the workgroup's LDS / the lane's scratch at the low dword; the rest is global.
APERTURE_SHARED, APERTURE_PRIVATE = 1 << 48, 2 << 48
SH_MEM_BASES = (APERTURE_SHARED >> 48) << 16 | APERTURE_PRIVATE >> 48

# A dispatch's status (EmuArgs.status / pybackend.Stop), the fault record's access kind and space, the wait kinds of blocked
# waves (deadlock reports), the trap report kinds; report.py turns them into exceptions and FaultReports.
# ABANDONED is internal to a multi-core dispatch: a thread left its workgroup because a lower one stopped the dispatch (never reported).
STATUS = {"OK": 0, "FAULT": 1, "INVALID": 2, "WATCHDOG": 3, "UNSUPPORTED": 4, "TIMEOUT": 5, "NOMEM": 6, "TRAP": 7, "DEADLOCK": 8, "ABANDONED": 9}
KINDS = {"READ": 1, "WRITE": 2, "ATOMIC": 3, "FETCH": 4}
SPACES = {"GLOBAL": 1, "LDS": 2, "SCRATCH": 3, "CODE": 4, "BUFFER": 5, "GDS": 6, "VGPR": 7}   # BUFFER: through a V#, reported as global
WAITS = {"SEMA": 1, "BARRIER": 2, "ORDERED": 3}
TRAPS = {"TRAP": 1, "HALT": 2}
ST_OK, ST_FAULT, ST_INVALID, ST_WATCHDOG, ST_UNSUPPORTED, ST_TIMEOUT, ST_NOMEM, ST_TRAP, ST_DEADLOCK, ST_ABANDONED = STATUS.values()
K_READ, K_WRITE, K_ATOMIC, K_FETCH = KINDS.values()
SP_GLOBAL, SP_LDS, SP_SCRATCH, SP_CODE, SP_BUFFER, SP_GDS, SP_VGPR = SPACES.values()
WK_SEMA, WK_BARRIER, WK_ORDERED = WAITS.values()
TR_TRAP, TR_HALT = TRAPS.values()
# MAXLANES: lanes of the widest wave; NGWS: GWS resources (the profiles' num_gws); GDS_BYTES: the ordered-count memory
LIMITS = {"MAXLANES": 64, "NGWS": 64, "GDS_BYTES": 4096}
MAXLANES, NGWS, GDS_BYTES = LIMITS.values()

# The texts of the errors both backends raise (C: MSG_<KEY>; a "{}" is the one number the message names: %d in C).
MSG = {
  "SRC_ENCODING": "source operand encoding not supported (LDS_DIRECT, POPS, reserved)",
  "DPP16_CTRL": "DPP16 control not supported on this arch",
  "SDWA_SEL": "SDWA select out of range",
  "NO_SEMANTICS": "instruction has no semantics in this build",
  "VOPD_HALF": "VOPD half has no compiled pseudocode",
  "CODE_END": "executed S_CODE_END (padding after the kernel's last instruction)",
  "RFE_RESTORE": "S_RFE_RESTORE_B64 returns from a trap handler, and none is installed (TBA/TMA read 0): no wave can be in one",
  "SCREEN_PARTITION": "V_SCREEN_PARTITION_4SE_B32 maps screen tiles to shader engines for graphics; a compute dispatch has no screen",
  "MFMA_LD_SCALE": "V_MFMA_LD_SCALE_B32 without its F8F6F4 MFMA: it is only the first half of a VOP3PX2 V_MFMA_SCALE_*",
  "PS_DONE": "S_ENDPGM_ORDERED_PS_DONE is pixel-shader only (it also ends the wave's primitive-ordered pixel-shader section, which a "
             "compute wave does not have); end a compute wave with S_ENDPGM",
  "GS_REG": "DS_ADD_GS_REG_RTN/DS_SUB_GS_REG_RTN update the geometry-shader stream-out registers (GS_REGS), which exist only for a "
            "graphics pipeline's GS stage; a compute dispatch has none",
  "TRAP": "S_TRAP executed and no trap handler is installed",
  "SETHALT": "S_SETHALT 1: the wave halted and nothing resumes it",
  "SENDMSGHALT": "S_SENDMSGHALT: the wave halted and nothing resumes it",
  "SENDMSG": "S_SENDMSG message {} is not modelled (graphics / host interrupt)",
  "SENDMSG_RTN": "S_SENDMSG_RTN message {} is not modelled (trap-handler context save / illegal)",
  "ORDERED_GDS": "DS_ORDERED_COUNT outside the ordered-count memory",
  "TFE_INVALID": "TFE set on a buffer store, atomic or load into LDS: the fail status VGPR exists only for loads into VGPRs",
  "BUF_RSRC": "buffer resource descriptor register out of range",
  "SBUF_RSRC": "scalar buffer resource descriptor register out of range",
  "BUF_FORMAT": "buffer data format code is not a valid format on this arch",
  "LDS_DIRECT_TYPE": "LDS_DIRECT_LOAD: M0[18:16] holds a reserved data type (3, 6 or 7)",
  "LDS_PARAM": "LDS_PARAM_LOAD reads vertex attributes the pixel-shader launch writes to LDS; a compute dispatch has none",
  "EXPORT": "exports go to graphics pipeline outputs; a compute dispatch has no export target",
}

def inline_float(e: int, width: int) -> int:
  """The bits of inline float constant encoding `e` (240..248) as an operand of float width `width` (16, 32, 64) reads it."""
  return (FCONST64 if width == 64 else FCONST16 if width == 16 else FCONST32)[e - SRC["FLOAT"]]

def aperture(e: int, bits: int) -> int:
  """SRC_SHARED_BASE/LIMIT, SRC_PRIVATE_BASE/LIMIT (235..238) as a `bits`-wide source: the 64-bit value, or its high dword."""
  v = (APERTURE_SHARED if e < SRC["PRIVATE_BASE"] else APERTURE_PRIVATE) + (0xffffffff if e in (SRC["SHARED_LIMIT"], SRC["PRIVATE_LIMIT"]) else 0)
  return v if bits > 32 else v >> 32

def _cstr(s: str) -> str: return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("{}", "%d") + '"'

def c_source() -> str:
  """The C text of these facts, emitted by gen_c before csrc/emu_core.h in every translation unit."""
  L = ["/* mockgpu.emu.facts: the facts both backends share (generated; edit emu/facts.py) */", "#include <stdint.h>"]
  L += [f"#define SREG_{k} {v}" for k, v in SREG.items() if k != "NSREG"] + [f"#define NSREG {NSREG}", f"#define SREG_TGID_X {SREG_TGID_X}",
        f"#define SREG_TGID_YZ {SREG_TGID_YZ}"]
  L += [f"#define SRC_{k} {v}" for k, v in SRC.items()]
  L += [f"#define {k} {v}" for k, v in LIMITS.items()]
  for prefix, tab in (("ST", STATUS), ("K", KINDS), ("SP", SPACES), ("WK", WAITS), ("TR", TRAPS)):
    L.append("enum { " + ", ".join(f"{prefix}_{k} = {v}" for k, v in tab.items()) + " };")
  L += [f"#define APERTURE_SHARED {APERTURE_SHARED:#x}ull", f"#define APERTURE_PRIVATE {APERTURE_PRIVATE:#x}ull", f"#define SH_MEM_BASES {SH_MEM_BASES:#x}u"]
  for bits, tab in ((64, FCONST64), (32, FCONST32), (16, FCONST16)):
    L.append(f"static const uint{bits}_t FCONST{bits}[{len(tab)}] = {{{', '.join(f'{x:#x}' + ('ull' if bits == 64 else '') for x in tab)}}};")
  L += [f"#define MSG_{k} {_cstr(v)}" for k, v in MSG.items()]
  return "\n".join(L)
