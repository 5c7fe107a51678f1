"""The command line's numbered steps, drawn by the library's one progress mechanism (tqdm)."""

from __future__ import annotations

import sys
import time

from .._progress import progress_bar, progress_enabled

__all__ = ["Progress", "close_open_bars"]

_FORMAT = "[{n_fmt}/{total_fmt}] {desc} ({elapsed})"
_OPEN = set()  # bars not yet closed: a failure closes them before its one-line reason


def close_open_bars():
    """End every bar still drawn (its line stays, followed by a newline)."""
    for progress in list(_OPEN):
        progress.close()


class Progress:
    """Numbered steps of a long command, as a tqdm bar on ``stream``.

    Each :meth:`step` names the step that starts and shows its number out of ``total``;
    :meth:`note` shows a message without counting (for work done before the total is
    known, such as loading a model).

    Parameters
    ----------
    total : int or None
        Number of steps; it may be set later (``progress.total = n``), before the first step.
    stream : file, default=sys.stderr
    enabled : bool, optional
        False draws nothing (``--quiet``); None follows ``skorg.get_config()["progress"]``.

    Examples
    --------
    >>> import io
    >>> from skorg.report import Progress
    >>> out = io.StringIO()
    >>> progress = Progress(2, stream=out)
    >>> progress.step("loading")
    >>> progress.step("organizing")
    >>> progress.done()
    >>> [line.split(" (")[0] for line in out.getvalue().splitlines() if line][:2]
    ['[1/2] loading', '[2/2] organizing']
    """

    def __init__(self, total=None, *, stream=None, enabled=True):
        self.total = None if total is None else int(total)
        self.stream = sys.stderr if stream is None else stream
        self.enabled = progress_enabled(enabled)
        self.count = 0
        self.start = time.perf_counter()
        self._bar = None

    def elapsed(self):
        return time.perf_counter() - self.start

    def note(self, label):
        """Show ``label`` without counting a step."""
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.set_description_str(label)
        else:
            self.stream.write(f"{label} ...\n")
            self.stream.flush()

    def step(self, label):
        """Start the next step, named ``label``."""
        self.count += 1
        if not self.enabled:
            return
        total = max(self.total or 0, self.count)
        if self._bar is None:
            self._bar = progress_bar(
                total=total,
                initial=self.count,
                desc=label,
                file=self.stream,
                enabled=True,
                bar_format=_FORMAT,
                mininterval=0,
                dynamic_ncols=True,
            )
            _OPEN.add(self)
            return
        self._bar.total = total
        self._bar.n = self.count
        self._bar.set_description_str(label)  # redraws

    def done(self, label="done"):
        """Close the bar at its total."""
        if not self.enabled or self._bar is None:
            return
        self._bar.n = self._bar.total
        self._bar.set_description_str(label)
        self.close()

    def close(self):
        """End the bar where it stands (after a failure, say)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        _OPEN.discard(self)
