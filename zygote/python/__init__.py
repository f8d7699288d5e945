"""The Python sandbox's zygote (zygote.py) and the runner inside WebAssembly (guest.py)."""
