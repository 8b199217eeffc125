"""The serving guard: Host header checks (DNS rebinding), bearer-token auth, the request size
limit, and the warning for a non-loopback bind; requests go through the real WSGI stack."""

from __future__ import annotations

import pytest
from werkzeug.test import Client
from werkzeug.wrappers import Response

from workbench import cli
from workbench.serving import (
    MAX_REQUEST_BYTES,
    RequestGuard,
    allowed_host_names,
    bind_warning,
    is_loopback,
)


def _hello(environ, start_response):
    return Response("hello")(environ, start_response)


def _client(token=None, host="127.0.0.1", extra=()):
    return Client(RequestGuard(_hello, allowed_host_names(host, 8050, extra), token))


def test_loopback_names_pass_and_foreign_hosts_are_refused():
    client = _client()
    for host in ("127.0.0.1:8050", "localhost:8050", "LOCALHOST", "[::1]:8050"):
        assert client.get("/", headers={"Host": host}).status_code == 200
    refused = client.get("/", headers={"Host": "evil.example:8050"})
    assert refused.status_code == 400 and b"--allow-host" in refused.data


def test_a_reverse_proxy_name_is_accepted_when_allowed():
    client = _client(host="0.0.0.0", extra=["workbench.internal"])
    assert client.get("/", headers={"Host": "workbench.internal"}).status_code == 200
    assert client.get("/", headers={"Host": "0.0.0.0:8050"}).status_code == 400


def test_token_required_by_header_cookie_or_query():
    client = _client(token="s3cret")
    host = {"Host": "127.0.0.1:8050"}
    assert client.get("/", headers=host).status_code == 401
    assert client.get("/", headers={**host, "Authorization": "Bearer wrong"}).status_code == 401
    assert client.get("/", headers={**host, "Authorization": "Bearer s3cret"}).status_code == 200
    first = client.get("/?token=s3cret", headers=host)
    assert first.status_code == 200
    assert "workbench_token=s3cret" in first.headers["Set-Cookie"]
    assert client.get("/", headers=host).status_code == 200       # the cookie is kept


def test_oversized_bodies_are_refused_before_the_app_sees_them():
    client = _client()
    big = client.post("/", data=b"x" * (MAX_REQUEST_BYTES + 1),
                      headers={"Host": "127.0.0.1:8050"})
    assert big.status_code == 413
    assert client.post("/", data=b"{}", headers={"Host": "127.0.0.1:8050"}).status_code == 200


@pytest.mark.parametrize("host, loopback", [("127.0.0.1", True), ("localhost", True),
                                            ("::1", True), ("0.0.0.0", False),
                                            ("192.168.1.5", False)])
def test_binding_beyond_loopback_warns(host, loopback):
    assert is_loopback(host) is loopback
    warning = bind_warning(host, None)
    assert (warning is None) is loopback
    if not loopback:
        assert "--auth-token" in warning
        assert "auth token" in bind_warning(host, "t")


def test_cli_takes_the_serving_options():
    args = cli.build_parser().parse_args(["serve", "--logdir", "runs", "--allow-host", "a",
                                          "--allow-host", "b", "--auth-token", "t"])
    assert args.allow_host == ["a", "b"] and args.auth_token == "t"


def test_pages_show_the_logdir_relative_to_where_the_server_started(tmp_path, monkeypatch):
    from workbench.app import create_app
    (tmp_path / "runs").mkdir()
    monkeypatch.chdir(tmp_path)
    shell = str(create_app(tmp_path / "runs").layout())     # built for each page load
    assert "logdir: runs" in shell and str(tmp_path) not in shell
