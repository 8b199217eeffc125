"""Serving the workbench as a service: a production WSGI server (waitress), a guard that
checks every request's Host header, optional bearer-token auth and a request-size limit, and
a clear warning when asked to bind beyond this machine."""

from __future__ import annotations

import hmac
import ipaddress
import sys
from collections.abc import Iterable
from http.cookies import SimpleCookie
from urllib.parse import parse_qs

TOKEN_ENV = "WORKBENCH_AUTH_TOKEN"
TOKEN_COOKIE = "workbench_token"
MAX_REQUEST_BYTES = 1 << 20     # Dash callbacks send small JSON bodies; anything bigger is abuse


def _address(host: str):
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None             # a host name


def is_loopback(host: str) -> bool:
    address = _address(host)
    return host == "localhost" or (address is not None and address.is_loopback)


def is_wildcard(host: str) -> bool:
    """The "every interface" address of IPv4 or IPv6."""
    address = _address(host)
    return address is not None and address.is_unspecified


def bind_warning(host: str, token: str | None) -> str | None:
    """What to tell the user before binding `host`, or None for a loopback address."""
    if is_loopback(host):
        return None
    reach = "every network this machine is on" if is_wildcard(host) else host
    auth = ("requests must carry the auth token" if token else
            "ANYONE who can reach it can read every run; pass --auth-token "
            f"(or set {TOKEN_ENV}) to require a token")
    return f"WARNING: serving on {host} exposes the workbench to {reach}: {auth}."


def allowed_host_names(host: str, port: int, extra: Iterable[str] = ()) -> set[str]:
    """Host header values to accept: the bind address (loopback names for a loopback bind),
    each with and without the port, plus the user's allow-list (for a reverse proxy)."""
    names = {"localhost", "127.0.0.1", "[::1]"} if is_loopback(host) else {host}
    if is_wildcard(host):
        names = set()           # a wildcard bind answers only to the names the user allows
    names.update(extra)
    return names | {f"{name}:{port}" for name in names}


class RequestGuard:
    """WSGI middleware: 400 for a Host header not in `allowed_hosts` (DNS rebinding), 401
    without the token when one is set (Authorization: Bearer, the cookie, or ?token= which
    sets the cookie), 413 for a body over MAX_REQUEST_BYTES. Errors never echo server paths."""

    def __init__(self, app, allowed_hosts: set[str], token: str | None = None,
                 max_bytes: int = MAX_REQUEST_BYTES):
        self._app = app
        self._allowed = {h.lower() for h in allowed_hosts}
        self._token = token or None
        self._max_bytes = max_bytes

    def __call__(self, environ, start_response):
        host = environ.get("HTTP_HOST", "").lower()
        if host not in self._allowed:
            return _refuse(start_response, "400 Bad Request",
                           "Unknown Host header; start the workbench with --allow-host for "
                           "the name you use.")
        if not self._content_length_ok(environ):
            return _refuse(start_response, "413 Payload Too Large",
                           f"Request body larger than {self._max_bytes} bytes.")
        if self._token is None:
            return self._app(environ, start_response)
        given, from_query = _presented_token(environ)
        if given is None or not hmac.compare_digest(given, self._token):
            return _refuse(start_response, "401 Unauthorized",
                           "This workbench needs its auth token (open it once with "
                           "?token=<token>, or send Authorization: Bearer <token>).")
        if not from_query:
            return self._app(environ, start_response)

        def with_cookie(status, headers, exc_info=None):
            cookie = f"{TOKEN_COOKIE}={self._token}; HttpOnly; SameSite=Strict; Path=/"
            return start_response(status, [*headers, ("Set-Cookie", cookie)], exc_info)
        return self._app(environ, with_cookie)

    def _content_length_ok(self, environ) -> bool:
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return False
        return 0 <= length <= self._max_bytes


def _presented_token(environ) -> tuple[str | None, bool]:
    header = environ.get("HTTP_AUTHORIZATION", "")
    if header.startswith("Bearer "):
        return header[len("Bearer "):], False
    cookie = SimpleCookie(environ.get("HTTP_COOKIE", ""))
    if TOKEN_COOKIE in cookie:
        return cookie[TOKEN_COOKIE].value, False
    query = parse_qs(environ.get("QUERY_STRING", "")).get("token")
    return (query[0], True) if query else (None, False)


def _refuse(start_response, status: str, message: str):
    body = message.encode("utf-8")
    start_response(status, [("Content-Type", "text/plain; charset=utf-8"),
                            ("Content-Length", str(len(body)))])
    return [body]


def serve_wsgi(wsgi_app, host: str, port: int, allowed_hosts: Iterable[str] = (),
               token: str | None = None) -> None:
    """Serves `wsgi_app` with waitress (a maintained, pure-Python production WSGI server that
    runs the same on every platform; Flask's server is for development only) behind the
    RequestGuard."""
    import waitress

    warning = bind_warning(host, token)
    if warning:
        print(warning, file=sys.stderr, flush=True)
    guarded = RequestGuard(wsgi_app, allowed_host_names(host, port, allowed_hosts), token)
    waitress.serve(guarded, host=host, port=port, threads=8, ident="workbench",
                   max_request_body_size=MAX_REQUEST_BYTES)
