"""Who may change the web app for everyone: switch the model that answers every candidate, or make the server
open a connection of the visitor's choosing (the settings panel's connection test).

The rule (docs/security.md):

- ``INTERVIEWER_ADMIN_TOKEN`` set: an admin action needs that token, compared in constant time, wherever the
  app runs and whoever asks.
- Unset: admin actions exist only in single-user local mode: the app is bound to this machine, has no share
  link and no login, is not set up as one replica of a shared deployment (no ``INTERVIEWER_DATABASE_URL``, no
  ``INTERVIEWER_OWNER_SECRET``), and the request itself came straight from a browser on this machine: no
  header a proxy adds and a ``Host`` naming this machine. Headers can only take the right away, never grant it.

The client's address is never consulted: behind a reverse proxy on the same machine every visitor connects
from 127.0.0.1.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass

from interviewer.config import Settings
from interviewer.errors import InputError
from interviewer.netguard import is_local_only

# Headers a reverse proxy or a tunnel adds (RFC 7239 and the de facto X- ones); nginx's deploy/nginx.conf sets
# X-Forwarded-For and X-Forwarded-Proto.
PROXY_HEADERS = (
    "forwarded",
    "x-forwarded-for",
    "x-forwarded-host",
    "x-forwarded-proto",
    "x-forwarded-port",
    "x-real-ip",
    "via",
)
SHARED = (
    "the model is set by whoever runs the server, for everyone: one visitor cannot switch it or make the "
    "server connect elsewhere"
)
NEEDS_TOKEN = SHARED + ". An operator gives the deployment's admin token (INTERVIEWER_ADMIN_TOKEN) in the box"
NO_TOKEN = (
    SHARED
    + ". To manage a shared app from the page, start it with INTERVIEWER_ADMIN_TOKEN set; or restart it "
    "with --base-url"
)


def single_user_local(settings: Settings, *, share: bool, login: bool) -> bool:
    """Whether the app as launched is one person's, on this machine, with no admin token needed."""
    return (
        is_local_only(settings.host)
        and not share
        and not login
        and settings.database_url is None
        and settings.owner_secret is None
    )


def _names_this_machine(host_header: str) -> bool:
    host = host_header.strip().lower()
    if host.startswith("["):
        host = host[1 : host.find("]")] if "]" in host else host
    elif host.count(":") == 1:
        host = host.partition(":")[0]
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def looks_direct(headers: Mapping[str, str]) -> bool:
    """Whether a request came straight from a browser on this machine (no proxy header, a loopback Host).

    A proxy on this machine, or a web page that rebound its own name to 127.0.0.1, fails one of the two.
    """
    names = {k.lower(): v for k, v in headers.items()}
    return not any(h in names for h in PROXY_HEADERS) and _names_this_machine(names.get("host", ""))


@dataclass(frozen=True)
class AdminGate:
    """Decides admin actions for one app process."""

    token: str | None = None  # the deployment's admin credential, when configured
    local: bool = False  # single-user local mode: no token needed (for direct requests only)

    @property
    def asks_for_token(self) -> bool:
        """Whether the page shows the admin token box."""
        return self.token is not None

    def check(self, given: object, headers: Mapping[str, str] | None) -> None:
        """Return if this request may take an admin action, else InputError saying who can.

        ``given``: the token the visitor typed (any type a client sent); ``headers``: the request's.
        """
        if self.token is not None:
            if not isinstance(given, str) or not given:
                raise InputError(NEEDS_TOKEN)
            if not hmac.compare_digest(given.encode("utf-8", "replace"), self.token.encode("utf-8")):
                raise InputError(NEEDS_TOKEN)
            return
        if self.local and headers is not None and looks_direct(headers):
            return
        raise InputError(NO_TOKEN)
