"""Which model-server URLs the settings panel may reach: a connection test must not become a port scanner.

:func:`check_url` allows http(s) URLs whose host resolves to public addresses, or to this machine when the
caller allows loopback, and refuses private, link-local (cloud metadata at 169.254.169.254), multicast and
reserved ranges unless the host was configured by whoever runs the server (``--base-url``,
``INTERVIEWER_*_URL``). The web app asks it only for an admin's request (:mod:`interviewer.admin`): anyone else
is refused before any address is resolved.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from urllib.parse import urlparse

from interviewer.errors import InputError

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def _host_port(url: str) -> tuple[str, int | None]:
    p = urlparse(url)
    try:
        port = p.port
    except ValueError:
        port = None
    return (p.hostname or "").lower(), port


def _addresses(host: str) -> list[Address]:
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError) as e:
        raise InputError(f"cannot resolve the host {host!r} ({e}): check the base URL") from e
    return [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]


def _kind(addr: Address) -> str | None:
    """Why an address is off limits, or None for a public address (loopback is judged by the caller)."""
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return _kind(addr.ipv4_mapped)
    if addr.is_loopback:
        return "loopback"
    if addr.is_link_local:
        return "link-local (cloud metadata lives there)"
    if addr.is_unspecified or addr.is_multicast or addr.is_reserved:
        return "reserved"
    if addr.is_private or addr in ipaddress.ip_network("100.64.0.0/10"):
        return "private"
    return None


def check_url(url: str, *, configured: Iterable[str | None] = (), allow_loopback: bool = True) -> str:
    """``url`` normalised if the settings panel may reach it, else InputError saying why.

    ``configured``: URLs the operator set; their host and port are always allowed.
    ``allow_loopback``: this machine's own servers (true when only this machine can reach the app).
    """
    url = url.strip().rstrip("/")
    p = urlparse(url)
    if p.scheme not in ("http", "https") or not p.hostname:
        raise InputError(f"{url!r} is not an http(s) URL such as http://127.0.0.1:8000/v1")
    if p.username or p.password:
        raise InputError("put the API key in its own box, not in the URL")
    host, port = _host_port(url)
    if (host, port) in {_host_port(c) for c in configured if c}:
        return url
    for addr in _addresses(host):
        kind = _kind(addr)
        if kind is None or (kind == "loopback" and allow_loopback):
            continue
        raise InputError(
            f"{host} is a {kind} address ({addr}): the settings panel only reaches public model servers"
            + (" or this machine" if allow_loopback else "")
            + ". To use a server on your network, start the app with --base-url pointing at it"
        )
    return url


def is_local_only(host: str | None) -> bool:
    """Whether an app bound to ``host`` is reachable from this machine only."""
    host = (host or "127.0.0.1").strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def exposure_check(*, share: bool, auth: bool, confirmed: bool) -> None:
    """A public share link without a login would let anyone on the internet use the app: refuse unless meant."""
    if share and not auth and not confirmed:
        raise InputError(
            "--share without --auth publishes the app to anyone who gets the link: they could run code in "
            "the sandbox and use the model on this machine. Add --auth USER:PASSWORD, or, if you really "
            "mean an open app, add --public-without-login"
        )
