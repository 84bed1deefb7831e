"""The mock PCI AMD GPUs that tinygrad's own AM driver (`DEV=MOCKPCI+AMD`) boots: discovery table, register file with the
handshakes the driver waits on, PSP/SMU mailboxes, the GPU page-table walker, the IH ring that reports faults, and the PCI bus
of several GPUs; for `DEV=MOCKUSB+AMD`, the USB3-to-PCIe bridge in front of the same GPU model (`usb.py`). The command
processors (PM4, SDMA) and the emulator are the KFD path's. See docs/mock.md, "MOCKPCI" and "MOCKUSB"."""
