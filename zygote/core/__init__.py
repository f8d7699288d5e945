"""What both zygotes share: the loop that serves runs (serve.py), the channel to the server, forking
and the child's hardening, the wait for a child's result on its run clock, the RunResult, and
wasmtime's settings (engine.py)."""
