"""The mock PCI AMD GPU that tinygrad's own AM driver (`DEV=MOCKPCI+AMD`) boots: discovery table, register file with the
handshakes the driver waits on, PSP/SMU mailboxes, the GPU page-table walker and the PCI device files. The command
processors (PM4, SDMA) and the emulator are the KFD path's. See docs/mock.md, "MOCKPCI"."""
