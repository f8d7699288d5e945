"""The QuickJS sandbox's zygote (qjs_zygote.py), its engine (qjs_engine.py) and the reactor's layout (wasm_layout.py)."""
