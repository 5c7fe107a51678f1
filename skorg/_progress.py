"""The library's one progress mechanism: tqdm bars, silenced by ``skorg.set_config``."""

from __future__ import annotations

from ._config import get_config

__all__ = ["progress_bar", "progress_enabled"]


def progress_enabled(enabled=None):
    """``enabled`` itself, or the library setting when it is None."""
    return get_config()["progress"] if enabled is None else bool(enabled)


class _Silent:
    """What ``progress_bar`` returns when bars are off: the same methods, doing nothing."""

    def __init__(self, iterable=None, total=None):
        self.iterable = iterable
        self.total = total
        self.n = 0

    def __iter__(self):
        return iter(self.iterable)

    def __len__(self):
        return len(self.iterable)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def update(self, n=1):
        self.n += n

    def set_description_str(self, desc=None, refresh=True):
        pass

    def refresh(self):
        pass

    def write(self, text):
        pass

    def close(self):
        pass


def progress_bar(iterable=None, *, total=None, desc=None, enabled=None, file=None, **options):
    """A tqdm bar over ``iterable`` (or one to ``update`` by hand), or a silent stand-in.

    Parameters
    ----------
    iterable : iterable, optional
    total : int, optional
        Number of items; ``len(iterable)`` by default.
    desc : str, optional
    enabled : bool, optional
        None follows ``skorg.get_config()["progress"]``.
    file : file, optional
        Where the bar is drawn (stderr by default).
    **options
        Passed to ``tqdm``.
    """
    if total is None and iterable is not None and hasattr(iterable, "__len__"):
        total = len(iterable)
    if not progress_enabled(enabled):
        return _Silent(iterable, total)
    try:
        from tqdm.auto import tqdm
    except ImportError:  # tqdm is a dependency; a broken install still runs, without bars
        return _Silent(iterable, total)
    return tqdm(iterable, total=total, desc=desc, file=file, **options)
