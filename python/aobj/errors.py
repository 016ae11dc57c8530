"""Errors of the aobj client: one exception class per AOBJ error code.

Every failure a call reports is an ``aobj.Error``; its subclass names the AOBJ code in
CamelCase (``aobj.NoSuchKey`` for ``NO_SUCH_KEY``, ``aobj.DescriptorTooSmall`` ...), so that

    try:
        client.get("demo", "missing")
    except aobj.NoSuchKey:
        ...

works as it does with boto3's ``client.exceptions.NoSuchKey``. Every error carries:

* ``code``: the AOBJ code number (the spec's Table 3, section 11.2);
* ``name``: its registry name, ``"NO_SUCH_KEY"``;
* ``s3_code``: the S3 error name, ``"NoSuchKey"``;
* ``retryable``: whether the same request may succeed if sent again (AOBJ-ERR-007);
* ``message``: what the server or the client library said;
* ``transport``: for a call that got no reply from any AOBJ server (``INTERNAL``), why
  ("connection refused", "no answer within the deadline", ...); empty otherwise.
"""

from __future__ import annotations

from . import _aobj

__all__ = ["Error"]


class Error(Exception):
    """A failed aobj call; see the module docstring for its attributes."""

    code: int = 1
    name: str = "INTERNAL"
    s3_code: str = "InternalError"
    retryable: bool = True

    def __init__(self, message: str = "", transport: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.transport = transport

    def __str__(self) -> str:
        if self.transport:  # no AOBJ server answered (AOBJ-ERR-006)
            return (f"{self.name} ({self.s3_code}): no reply from the server: {self.transport} "
                    f"(is aobj-server running there?) [{self.message}]")
        return f"{self.name} ({self.s3_code}): {self.message}"

    def __reduce__(self):
        return (_rebuild, (self.code, self.message, self.transport))


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


_BY_CODE: dict[int, type[Error]] = {}
for _code, _name, _s3, _retryable in _aobj.error_registry():
    if _code == 0:
        continue
    _cls = type(_camel(_name), (Error,), {
        "code": _code, "name": _name, "s3_code": _s3, "retryable": _retryable,
        "__doc__": f"AOBJ error {_name} (code {_code}, S3 {_s3}; "
                   f"{'retryable' if _retryable else 'not retryable'}).",
        "__module__": __name__,
    })
    _BY_CODE[_code] = _cls
    globals()[_cls.__name__] = _cls
    __all__.append(_cls.__name__)
del _code, _name, _s3, _retryable, _cls


def _from_status(code: int, message: str, transport: str = "") -> Error:
    """The exception of one failed call (used by the C++ binding)."""
    cls = _BY_CODE.get(code)
    if cls is None:  # a code this build does not know (grease, a newer server)
        err = Error(message, transport)
        err.code = code
        return err
    return cls(message, transport)


def _rebuild(code: int, message: str, transport: str) -> Error:
    return _from_status(code, message, transport)
