# A zygote's channel to the server (both zygotes: python/zygote.py, quickjs/qjs_zygote.py): the
# host protocol of every sandbox host (src/sandbox/host/host-protocol.ts), frames of a 4-byte big-endian
# length and JSON, requests on stdin and replies on stdout.

import json, os, struct

from .forking import write_all

SERVER_IN = 0
SERVER_OUT = 1


class Channel:
    def __init__(self, on_eof):
        # Called when the server closed its end (the zygote's cue to end, its child first).
        self.on_eof = on_eof
        self.inbuf = bytearray()

    def send(self, message):
        body = json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8", "backslashreplace")
        write_all(SERVER_OUT, struct.pack(">I", len(body)) + body)

    def pump(self):
        """Reads what the server has sent (one read: call it when SERVER_IN is readable)."""
        chunk = os.read(SERVER_IN, 1 << 20)
        if not chunk:
            self.on_eof()
        self.inbuf += chunk

    def next(self, block):
        """The next request and its frame's body, or None when none is whole yet and block is False."""
        while True:
            if len(self.inbuf) >= 4:
                n = struct.unpack(">I", self.inbuf[:4])[0]
                if len(self.inbuf) >= 4 + n:
                    body = bytes(self.inbuf[4 : 4 + n])
                    del self.inbuf[: 4 + n]
                    return json.loads(body), body
            if not block:
                return None
            self.pump()
