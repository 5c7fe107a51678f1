"""A dependency-free progress bar for the command line's long steps."""

from __future__ import annotations

import sys
import time

__all__ = ["Progress"]


class Progress:
    """Numbered steps drawn as a bar on a terminal, as plain lines elsewhere.

    Parameters
    ----------
    total : int
        Number of steps.
    stream : file, default=sys.stderr
    enabled : bool, default=True

    Examples
    --------
    >>> import io
    >>> from skorg.report import Progress
    >>> out = io.StringIO()
    >>> progress = Progress(2, stream=out)
    >>> progress.step("loading")
    >>> progress.step("organizing")
    >>> progress.done()
    >>> out.getvalue().splitlines()[0].startswith("[1/2] loading")
    True
    """

    def __init__(self, total, *, stream=None, enabled=True):
        self.total = int(total)
        self.stream = sys.stderr if stream is None else stream
        self.enabled = enabled
        self.count = 0
        self.start = time.perf_counter()
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())

    def elapsed(self):
        return time.perf_counter() - self.start

    def step(self, label):
        """Start the next step, named ``label``."""
        self.count = min(self.count + 1, self.total)
        if not self.enabled:
            return
        seconds = f"{self.elapsed():5.1f} s"
        if self._tty:
            width = 24
            filled = round(width * (self.count - 1) / max(self.total, 1))
            bar = "#" * filled + "." * (width - filled)
            line = f"\r[{bar}] {self.count}/{self.total} {label:<40.40} {seconds}"
            self.stream.write(line)
        else:
            self.stream.write(f"[{self.count}/{self.total}] {label} ({seconds})\n")
        self.stream.flush()

    def done(self, label="done"):
        if not self.enabled:
            return
        if self._tty:
            bar = "#" * 24
            self.stream.write(
                f"\r[{bar}] {self.total}/{self.total} {label:<40.40} {self.elapsed():5.1f} s\n"
            )
        self.stream.flush()
