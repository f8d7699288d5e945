# The loop both zygotes serve runs in (python/zygote.py, quickjs/qjs_zygote.py), on their channel
# to the server: a spare child is forked ahead of each run, a request takes it, a cancel for a run
# already answered is dropped, and the zygote ends, its children first, when the server closes its
# end. What differs is the engine's: how a spare is made (fork) and how a run is served (run).

import os


class ForkServer:
    """
    A zygote, as the server sees it. A subclass gives `fork()` (a spare: its `forking.Child`; in
    the child itself, where `self.child` is then true, None) and `run(request, body, queued)`
    (serves one run on a spare and answers the server; returns in a child forked in place of a
    dead spare), and sets `self.channel` (channel.Channel(self.exit)).
    """

    # True in a forked child that goes back into the engine (the Python zygote's: its children
    # return from here into WebAssembly). QuickJS's children never return from fork().
    child = False
    # The next run's child, forked ahead; the child of the run under way while the zygote waits.
    spare = None
    current = None

    def exit(self):
        """The server closed its end: the zygote ends, its children first."""
        for child in (self.spare, self.current):
            if child:
                child.reap()
        os._exit(0)

    def serve_runs(self):
        """Serves runs until the server closes the channel; returns only in a child."""
        queued = []
        while True:
            if self.spare is None:
                self.spare = self.fork()
                if self.child:
                    return  # in the new child: back into its engine with its request
            request, body = queued.pop(0) if queued else self.channel.next(block=True)
            if request.get("type") != "run":
                continue  # a cancel for a run already answered
            self.run(request, body, queued)
            if self.child:
                return  # a child forked in place of a dead spare: back into its engine
