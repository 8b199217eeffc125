"""The exception family (`tf.errors`): one class per canonical status code, each carrying
the node it concerns so messages can name it."""

from __future__ import annotations

OK = 0
CANCELLED = 1
UNKNOWN = 2
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
NOT_FOUND = 5
ALREADY_EXISTS = 6
PERMISSION_DENIED = 7
RESOURCE_EXHAUSTED = 8
FAILED_PRECONDITION = 9
ABORTED = 10
OUT_OF_RANGE = 11
UNIMPLEMENTED = 12
INTERNAL = 13
UNAVAILABLE = 14
DATA_LOSS = 15
UNAUTHENTICATED = 16


class OpError(Exception):
    """A failure while running (or placing) the graph. `node_def` and `op` name the node."""

    error_code = UNKNOWN

    def __init__(self, node_def, op, message: str, error_code: int | None = None):
        super().__init__(message)
        self._node_def = node_def
        self._op = op
        self._message = message
        if error_code is not None:
            self.error_code = error_code

    @property
    def message(self) -> str:
        return self._message

    @property
    def node_def(self):
        return self._node_def

    @property
    def op(self):
        return self._op

    def __str__(self) -> str:
        return self._message


def _subclass(name: str, code: int) -> type:
    cls = type(name, (OpError,), {"error_code": code, "__module__": __name__})

    def __init__(self, node_def, op, message, *args):
        OpError.__init__(self, node_def, op, message, code)

    cls.__init__ = __init__
    return cls


CancelledError = _subclass("CancelledError", CANCELLED)
UnknownError = _subclass("UnknownError", UNKNOWN)
InvalidArgumentError = _subclass("InvalidArgumentError", INVALID_ARGUMENT)
DeadlineExceededError = _subclass("DeadlineExceededError", DEADLINE_EXCEEDED)
NotFoundError = _subclass("NotFoundError", NOT_FOUND)
AlreadyExistsError = _subclass("AlreadyExistsError", ALREADY_EXISTS)
PermissionDeniedError = _subclass("PermissionDeniedError", PERMISSION_DENIED)
ResourceExhaustedError = _subclass("ResourceExhaustedError", RESOURCE_EXHAUSTED)
FailedPreconditionError = _subclass("FailedPreconditionError", FAILED_PRECONDITION)
AbortedError = _subclass("AbortedError", ABORTED)
OutOfRangeError = _subclass("OutOfRangeError", OUT_OF_RANGE)
UnimplementedError = _subclass("UnimplementedError", UNIMPLEMENTED)
InternalError = _subclass("InternalError", INTERNAL)
UnavailableError = _subclass("UnavailableError", UNAVAILABLE)
DataLossError = _subclass("DataLossError", DATA_LOSS)
UnauthenticatedError = _subclass("UnauthenticatedError", UNAUTHENTICATED)

_BY_CODE = {cls.error_code: cls for cls in (
    CancelledError, UnknownError, InvalidArgumentError, DeadlineExceededError, NotFoundError,
    AlreadyExistsError, PermissionDeniedError, ResourceExhaustedError, FailedPreconditionError,
    AbortedError, OutOfRangeError, UnimplementedError, InternalError, UnavailableError,
    DataLossError, UnauthenticatedError)}


def exception_type_from_error_code(code: int) -> type:
    return _BY_CODE[code]


def error_code_from_exception_type(cls: type) -> int:
    return cls.error_code
