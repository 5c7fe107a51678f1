"""The readers' errors, with their advice spelled for the interface the user is in."""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "MissingDependencyError",
    "ReadError",
    "import_optional",
    "install_command",
    "option",
    "spelled_error",
]


class ReadError(ValueError):
    """A file that cannot be read as a numeric matrix or tensor; the message says why.

    Attributes
    ----------
    command_line : str
        The same message with the options it suggests spelled as ``skorg organize`` takes
        them (``--header yes`` where the message says ``header=True``).
    """

    def __init__(self, message, command_line=None):
        super().__init__(message)
        self.command_line = message if command_line is None else command_line


class MissingDependencyError(ImportError):
    """Reading this kind of file needs an optional package; the message names it."""


def option(name, value):
    """``name=value`` as Python and the command line spell it (one pair for spelled_error)."""
    if isinstance(value, bool):
        flag_value = "yes" if value else "no"
    else:
        flag_value = str(value).replace("_", "-")
    return (f"{name}={value!r}", f"--{name.replace('_', '-')} {flag_value}")


def spelled_error(*parts):
    """A :class:`ReadError` from text and (Python, command line) pairs of spellings."""
    python = "".join(p if isinstance(p, str) else p[0] for p in parts)
    command_line = "".join(p if isinstance(p, str) else p[1] for p in parts)
    return ReadError(python, command_line)


def _source_tree():
    """The root of the clone skorg is imported from, or None for an installed package."""
    root = Path(__file__).resolve().parents[2]
    pyproject = root / "pyproject.toml"
    try:
        text = pyproject.read_text(encoding="utf-8")
    except OSError:
        return None
    return root if 'name = "skorg"' in text else None


def install_command(extra):
    """How to install an extra: the editable spelling in a clone, the package's otherwise."""
    root = _source_tree()
    if root is None:
        return f"`pip install skorg[{extra}]`"
    return f'`pip install -e ".[{extra}]"` in {root}'


def import_optional(module, what):
    """Import an optional package, or say which extra brings it."""
    try:
        return __import__(module)
    except ImportError as exc:
        raise MissingDependencyError(
            f"{what} needs {module}: install it with {install_command('io')}"
        ) from exc
