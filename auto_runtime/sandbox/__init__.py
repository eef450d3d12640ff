"""The Wasmtime + MicroPython-WASI sandbox shared by computation, recall and workflow expressions."""
