"""A digest of what code does, equal in every process that has the same code.

An env on a shared cluster is reused by whoever asks for the same one, so
"the same" must mean the same code, not the same name: a class named like
another but with other code must never get the other's env, and one class
defined alike in two notebooks (both ``__main__``) must share one.
:func:`code_fingerprint` reads a class or function the way cloudpickle sends
it to the workers: what cloudpickle sends by value (classes and functions of
``__main__``, or whose module does not hold them under their name) is
digested by value (bytecode, constants, defaults, closure contents, the
globals it reads, recursively); what it sends by reference (found in an
importable module under its name) by that name and the version of the
library it comes from (a module outside any distribution: a digest of its
source file). Nothing in the digest depends on memory addresses, hash
randomisation or where in a file the code was written, so two processes
agree.

A value that cannot be digested (it does not pickle) gets a token of this
process and object: it never matches another process's, so the env is not
shared rather than shared wrongly.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import sys
import types
from pathlib import Path
from typing import Any

from kit._base.files import file_digest

#: Entries of a class's namespace that say nothing about what it does.
_CLASS_NOISE = frozenset(
    {
        "__module__",
        "__qualname__",
        "__doc__",
        "__dict__",
        "__weakref__",
        "__annotations__",
        "__firstlineno__",
        "__static_attributes__",
        "_abc_impl",
        "__slotnames__",  # cached by copy and pickle on first use
        "__parameters__",
        "__orig_bases__",
    }
)
_PLAIN = (type(None), bool, int, float, complex, str, bytes)


def code_fingerprint(obj: Any) -> str:
    """Return a hex digest of ``obj``'s code, equal across processes for equal code.

    ``obj`` itself (a class or function) is always read by value, even when
    importable: a class placed under another module's name is told apart
    from the one really there.

    Examples
    --------
    >>> def double(x):
    ...     return 2 * x
    >>> def twice(y):
    ...     return 2 * y
    >>> def triple(x):
    ...     return 3 * x
    >>> code_fingerprint(double) == code_fingerprint(double)
    True
    >>> code_fingerprint(double) == code_fingerprint(triple)
    False
    >>> len(code_fingerprint(double))
    64
    """
    return _Digest().of(obj, by_value=True)


class _Digest:
    """One fingerprint's walk: objects on the way (for cycles) and those done."""

    def __init__(self) -> None:
        self._open: dict[int, int] = {}
        self._done: dict[int, str] = {}
        self._keep: list[Any] = []  # ids are only unique while their objects live

    def of(self, obj: Any, *, by_value: bool = False) -> str:
        if isinstance(obj, _PLAIN):
            return parts_digest(f"{type(obj).__name__}:{obj!r}")
        key = id(obj)
        if key in self._done:
            return self._done[key]
        if key in self._open:  # a cycle (a method's super() cell holds its class)
            return parts_digest(f"cycle:{self._open[key]}")
        self._open[key] = len(self._open)
        self._keep.append(obj)
        try:
            digest = self._fresh(obj, by_value)
        finally:
            del self._open[key]
        self._done[key] = digest
        return digest

    def _fresh(self, obj: Any, by_value: bool) -> str:
        if isinstance(obj, types.ModuleType):
            return parts_digest(f"module:{obj.__name__}@{_release(obj.__name__)}")
        if isinstance(obj, (type, types.FunctionType)) and (by_value or not _by_reference(obj)):
            return self._class(obj) if isinstance(obj, type) else self._function(obj)
        if isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType)):
            name = f"{obj.__module__}.{obj.__qualname__}"
            return parts_digest(f"ref:{name}@{_release(obj.__module__ or '')}")
        if isinstance(obj, types.CodeType):
            return self._code(obj)
        if isinstance(obj, (staticmethod, classmethod)):
            return parts_digest(type(obj).__name__, self.of(obj.__func__))
        if isinstance(obj, property):
            return parts_digest("property", *(self.of(f) for f in (obj.fget, obj.fset, obj.fdel)))
        if isinstance(obj, functools.partial):
            return parts_digest(
                "partial", self.of(obj.func), self.of(obj.args), self.of(obj.keywords)
            )
        if isinstance(obj, types.MethodType):
            return parts_digest("method", self.of(obj.__func__), self.of(obj.__self__))
        if isinstance(obj, (tuple, list)):
            return parts_digest(type(obj).__name__, *(self.of(item) for item in obj))
        if isinstance(obj, (set, frozenset)):  # no order: hash randomisation moves it
            return parts_digest(type(obj).__name__, *sorted(self.of(item) for item in obj))
        if type(obj) is dict:
            return parts_digest("dict", *(self.of(k) + self.of(v) for k, v in obj.items()))
        return self._pickled(obj)

    def _class(self, cls: type) -> str:
        parts = [f"class:{cls.__name__}", *(self.of(base) for base in cls.__bases__)]
        for name, value in sorted(vars(cls).items()):
            if name not in _CLASS_NOISE:
                parts.append(f"{name}=" + self.of(value))
        return parts_digest(*parts)

    def _function(self, fn: types.FunctionType) -> str:
        cells = [self.of(cell.cell_contents) for cell in fn.__closure__ or () if _filled(cell)]
        read = [
            f"{name}=" + self.of(fn.__globals__[name])
            for name in sorted(_names(fn.__code__))
            if name in fn.__globals__
        ]
        return parts_digest(
            "function",
            self._code(fn.__code__),
            self.of(fn.__defaults__),
            self.of(fn.__kwdefaults__),
            *cells,
            *read,
        )

    def _code(self, code: types.CodeType) -> str:
        # Not the file, line numbers or qualified name: where code was written is not what it
        # does (a notebook's cell and a script's line differ for the same class).
        return parts_digest(
            "code",
            code.co_code.hex(),
            repr(
                (
                    code.co_name,
                    code.co_argcount,
                    code.co_posonlyargcount,
                    code.co_kwonlyargcount,
                    code.co_flags,
                    code.co_names,
                    code.co_varnames,
                    code.co_freevars,
                    code.co_cellvars,
                )
            ),
            *(self.of(const) for const in code.co_consts),
        )

    def _pickled(self, obj: Any) -> str:
        import cloudpickle

        try:
            return parts_digest(f"pickled:{type(obj).__qualname__}", cloudpickle.dumps(obj))
        except Exception:  # not sendable: never equal to another process's
            return parts_digest(f"unpicklable:{_process_token()}:{id(obj)}")


def _by_reference(obj: type | types.FunctionType) -> bool:
    """Whether cloudpickle sends ``obj`` by name: its module is importable and holds it so."""
    module = sys.modules.get(obj.__module__ or "")
    if module is None or obj.__module__ == "__main__":
        return False
    found: Any = module
    for part in obj.__qualname__.split("."):
        found = getattr(found, part, None)
    return found is obj


def _names(code: types.CodeType) -> set[str]:
    """Return the names ``code`` and the code nested in it may read as globals."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


@functools.cache
def _process_token() -> str:
    import secrets

    return secrets.token_hex(8)


def _release(module: str) -> str:
    """Return what stands for ``module``'s code: its library's version and its file's digest.

    The version covers the rest of the library; the file, a module outside
    any distribution (a class's own package beside its notebooks) and a
    library edited in place.
    """
    top = module.partition(".")[0]
    version = getattr(sys.modules.get(top), "__version__", None)
    if isinstance(version, str):
        said = f"{top}=={version}"
    elif top in sys.stdlib_module_names:
        # Python's own: its version says it. Asking the installed distributions which one
        # holds `os` reads every distribution's file list: 0.7 s of CPU in a kernel's first
        # run, and sixty kernels starting a class at once waited 15 s on it.
        said = "python==" + ".".join(map(str, sys.version_info[:3]))
    elif _version(top) != "unknown":  # the usual case: the distribution is named as its module
        said = f"{top}=={_version(top)}"
    elif not _installed(getattr(sys.modules.get(top), "__file__", None)):
        said = ""  # a module of the user's own, outside site-packages: its file's digest says it
    else:
        dists = _distributions().get(top, [])
        said = ",".join(f"{dist}=={_version(dist)}" for dist in sorted(dists))
    path = getattr(sys.modules.get(module), "__file__", None)
    if path and Path(path).is_file():
        said += "|file:" + _file_digest(path)
    return said or "unknown"


def _installed(path: str | None) -> bool:
    """Whether a module's file lies where installed distributions go (site-packages)."""
    return path is not None and not {"site-packages", "dist-packages"}.isdisjoint(Path(path).parts)


@functools.cache
def _distributions() -> dict[str, list[str]]:
    return dict(importlib.metadata.packages_distributions())


@functools.cache
def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _file_digest(path: str) -> str:
    return file_digest(path)[:16]


def parts_digest(*parts: str | bytes) -> str:
    """Return the sha256 of ``parts``, each kept apart from the next by its length.

    Examples
    --------
    >>> parts_digest("a", "bc") == parts_digest("ab", "c")
    False
    """
    digest = hashlib.sha256()
    for part in parts:
        data = part if isinstance(part, bytes) else part.encode()
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


__all__ = ["code_fingerprint", "parts_digest"]
