"""Library-wide settings: ``skorg.set_config``, ``skorg.get_config``, ``skorg.config_context``.

Thread-local, as scikit-learn's configuration: a setting made in one thread does not change
another's. The environment variable ``SKORG_PROGRESS`` (``0``, ``false``, ``no`` or ``off``)
sets the default of ``progress`` for every thread.
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager

__all__ = ["config_context", "get_config", "set_config"]

_local = threading.local()


def _defaults():
    flag = os.environ.get("SKORG_PROGRESS", "1").strip().lower()
    return {"progress": flag not in ("0", "false", "no", "off")}


def _config():
    if not hasattr(_local, "config"):
        _local.config = _defaults()
    return _local.config


def get_config():
    """The current settings of this thread.

    Returns
    -------
    config : dict
        ``progress`` (bool): whether long steps show a tqdm progress bar (the command line's
        steps, ``extract_attention(..., progress=True)``).

    Examples
    --------
    >>> import skorg
    >>> with skorg.config_context(progress=False):
    ...     skorg.get_config()["progress"]
    False
    """
    return dict(_config())


def set_config(progress=None):
    """Change the settings of this thread; None leaves a setting as it is.

    Parameters
    ----------
    progress : bool, optional
        False silences every progress bar of the library and of the command line (as
        ``--quiet`` does for one command).

    Examples
    --------
    >>> import skorg
    >>> before = skorg.get_config()["progress"]
    >>> skorg.set_config(progress=False)
    >>> skorg.get_config()["progress"]
    False
    >>> skorg.set_config(progress=before)
    """
    if progress is not None:
        if not isinstance(progress, bool):
            raise TypeError(f"progress must be True or False, got {progress!r}.")
        _config()["progress"] = progress


@contextmanager
def config_context(*, progress=None):
    """Settings changed inside a ``with`` block only (this thread).

    Parameters
    ----------
    progress : bool, optional
        See :func:`set_config`.

    Examples
    --------
    >>> import skorg
    >>> with skorg.config_context(progress=False):
    ...     skorg.get_config()["progress"]
    False
    """
    old = get_config()
    set_config(progress=progress)
    try:
        yield
    finally:
        _config().update(old)
