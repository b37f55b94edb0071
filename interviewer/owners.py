"""Who owns a session in the web app: server-issued, signed owner tokens that a browser cannot forge.

A browser keeps a token ``web:<random>.<signature>``; the server checks the HMAC (key: a secret made once in
the data dir, mode 0600) and uses ``web:<random>`` as the owner. Anything else a browser sends (``local``,
``user:alice``, a token signed with another key) is ignored and a fresh owner is issued, so the CLI's
sessions (owner ``local``) and a logged-in user's (``user:<name>``, only from the login itself) are never
reachable by typing their owner string.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from interviewer.errors import ConfigError, InputError

SECRET_NAME = "owner-secret"
WEB = "web:"
CLI_OWNER = "local"
_LEGACY = "browser:"  # unsigned tokens of earlier versions: 128 random bits, honoured once and re-signed
# A token this server issues is about 60 characters; anything much longer was not issued here, and is not
# worth hashing (or storing as a legacy owner id).
MAX_TOKEN_CHARS = 256


def checked_token(token: object) -> str | None:
    """``token`` if it is a string (or None); InputError for anything else a client put in its place."""
    if token is None or isinstance(token, str):
        return token
    raise InputError(
        f"the owner token must be a string, not {type(token).__name__}: reload the page "
        "(an API client passes the token the server returned, unchanged)"
    )


def load_secret(data_dir: Path) -> bytes:
    """The signing key in ``data_dir`` (created on first use, readable by this user only)."""
    path = data_dir / SECRET_NAME
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(fd, "wb") as f:
                f.write(secrets.token_bytes(32))
        if path.stat().st_mode & 0o077:
            path.chmod(0o600)
        key = path.read_bytes()
    except OSError as e:
        raise ConfigError(f"cannot use the owner key at {path} ({e.strerror}): check the data dir") from e
    if len(key) < 32:
        raise ConfigError(f"the owner key at {path} is damaged (too short): delete it to make a new one")
    return key


@dataclass(frozen=True)
class Resolved:
    owner: str  # the owner id sessions are stored under
    token: str  # what the browser keeps (unchanged, or a freshly signed one)


def owner_in(token: str) -> str:
    """The owner id a signed token names (not verified: for logs and tests, never for access)."""
    return token.rpartition(".")[0] if token.startswith((WEB, _LEGACY)) and "." in token else token


class OwnerTokens:
    def __init__(self, key: bytes) -> None:
        self._key = key

    @classmethod
    def for_data_dir(cls, data_dir: Path) -> OwnerTokens:
        return cls(load_secret(data_dir))

    def _sign(self, owner: str) -> str:
        mac = hmac.new(self._key, owner.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(mac[:24]).decode().rstrip("=")

    def issue(self) -> str:
        owner = WEB + secrets.token_urlsafe(16)
        return f"{owner}.{self._sign(owner)}"

    def verify(self, token: str | None) -> str | None:
        """The owner a token stands for, or None if the token was not issued by this server."""
        token = checked_token(token)
        if not token or len(token) > MAX_TOKEN_CHARS or not token.startswith(WEB):
            return None
        owner, dot, sig = token.rpartition(".")
        if not dot or not hmac.compare_digest(sig, self._sign(owner)):
            return None
        return owner

    def resolve(self, token: object, username: str | None = None) -> Resolved:
        """The owner of a request: the login when there is one, else the browser's token if it is genuine.

        Raises:
            InputError: ``token`` is not a string (a client sent a number, a list or an object in its place).
        """
        token = checked_token(token)
        if username:  # the login decides; the browser keeps the (public) name, which owns nothing by itself
            return Resolved(f"user:{username}", f"user:{username}")
        owner = self.verify(token)
        if owner is not None:
            return Resolved(owner, token or "")
        if (
            token
            and token.startswith(_LEGACY)
            and len(_LEGACY) + 22 <= len(token) <= MAX_TOKEN_CHARS
            and "." not in token
        ):
            # A browser of an earlier version: its random token was the secret; keep its sessions.
            return Resolved(token, f"{token}.{self._sign(token)}")
        fresh = self.issue()
        return Resolved(self.verify(fresh) or "", fresh)
