"""Where agent images live between machines: the registry settings and its HTTP API (stdlib only).

``AGENT_REGISTRY`` is ``host[:port][/prefix]`` (``127.0.0.1:5000``, ``registry.example.org/arena``),
optionally with ``http://`` or ``https://`` in front to say how *our* code speaks to it; without a scheme,
loopback hosts use ``http`` and every other host ``https`` (what Docker engines do by default). Empty, unset
or ``none``: no registry, agent images stay in the engine that built them. ``AGENT_REGISTRY_USERNAME`` and
``AGENT_REGISTRY_PASSWORD`` (or ``AGENT_REGISTRY_PASSWORD_FILE``) are the credentials, when it needs any.
``AGENT_REGISTRY_API_URL`` (optional, same form, path ignored) is where this process reaches the registry's
HTTP API when that is not where the Docker engine reaches it (docker-compose: the engine on the host,
``127.0.0.1:5000``; the worker in a container, ``http://registry:5000``).

The variables are read by ``run_duel.settings``; ``AGENT_REGISTRY=none`` says "no registry" explicitly
(``./prepare_dev.sh`` uses a local registry when the variable is empty).

Docker image references never carry the scheme: ``RegistryConfig.repository("rl-arena-agent")`` is
``127.0.0.1:5000/rl-arena-agent``.
"""

from __future__ import annotations

import base64
import ipaddress
import re
import urllib.error
import urllib.request
from dataclasses import dataclass

from envsettings import SettingsError
from run_duel.settings import run_duel_settings

#: ``host[:port]`` then an optional lowercase path (Distribution's repository-name grammar, simplified).
_REGISTRY_RE = re.compile(
    r"^(?P<host>[A-Za-z0-9.-]+|\[[0-9A-Fa-f:]+\])(?::(?P<port>[0-9]{1,5}))?"
    r"(?P<prefix>(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*)$"
)


class RegistryConfigError(SettingsError):
    """A registry setting cannot be used (the message names the variable)."""


def _is_loopback(host: str) -> bool:
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class RegistryConfig:
    """A parsed ``AGENT_REGISTRY`` and its credentials."""

    host: str  # host[:port], as Docker names it in image references
    prefix: str = ""  # path under the host ("" or "arena/agents"), no slashes around
    scheme: str = "https"
    loopback: bool = False  # this machine's registry (127.0.0.1, localhost, ::1)
    username: str = ""
    password: str = ""
    api_url: str = ""  # where *this process* reaches the HTTP API, when not at scheme://host (compose)

    @classmethod
    def parse(
        cls, value: str, *, username: str = "", password: str = "", api_url: str = ""
    ) -> RegistryConfig:
        """Parse ``[http://|https://]host[:port][/prefix]``; raises ``RegistryConfigError``."""
        raw = value.strip()
        scheme = ""
        for candidate in ("http://", "https://"):
            if raw.lower().startswith(candidate):
                scheme, raw = candidate[:-3], raw[len(candidate) :]
        raw = raw.rstrip("/")
        match = _REGISTRY_RE.match(raw)
        if not match or (match["port"] and not 0 < int(match["port"]) < 65536):
            raise RegistryConfigError(
                f"AGENT_REGISTRY={value!r} is not [http://|https://]host[:port][/prefix] "
                "(e.g. 127.0.0.1:5000 or registry.example.org/arena; path in lowercase)"
            )
        host = match["host"] + (f":{match['port']}" if match["port"] else "")
        if not ("." in host or ":" in host or host == "localhost"):
            # Docker reads "name/..." as a Docker Hub namespace unless the first part looks like a host.
            raise RegistryConfigError(
                f"AGENT_REGISTRY={value!r}: the host must hold a dot or a port, or be localhost "
                "(Docker would read a bare name as a Docker Hub namespace)"
            )
        if bool(username) != bool(password):
            raise RegistryConfigError(
                "set both AGENT_REGISTRY_USERNAME and AGENT_REGISTRY_PASSWORD, or neither"
            )
        if api_url.strip():
            try:
                api_url = cls.parse(api_url).base_url
            except RegistryConfigError as exc:
                raise RegistryConfigError(f"AGENT_REGISTRY_API_URL: {exc}") from None
        return cls(
            api_url=api_url,
            host=host,
            prefix=match["prefix"].strip("/"),
            scheme=scheme or ("http" if _is_loopback(match["host"]) else "https"),
            loopback=_is_loopback(match["host"]),
            username=username,
            password=password,
        )

    @classmethod
    def from_env(cls) -> RegistryConfig | None:
        """The registry of the settings (``run_duel.settings``); ``None`` when none is set."""
        conf = run_duel_settings()
        if not conf.registry:
            return None
        return cls.parse(
            conf.registry,
            username=conf.registry_username,
            password=conf.registry_password,
            api_url=conf.registry_api_url,
        )

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:5000``: where the Distribution API (``/v2/``) answers for this process
        (``AGENT_REGISTRY_API_URL`` when set: in docker-compose the engine pulls from the host's
        ``127.0.0.1:5000`` while a worker container reaches the same registry as ``http://registry:5000``)."""
        return self.api_url or f"{self.scheme}://{self.host}"

    def repository(self, name: str) -> str:
        """The image repository ``name`` in this registry: ``host[:port][/prefix]/name``."""
        return "/".join(part for part in (self.host, self.prefix, name) if part)

    def auth_config(self) -> dict[str, str] | None:
        """Credentials in the Docker SDK's ``auth_config`` form, or ``None``."""
        if not self.username:
            return None
        return {"username": self.username, "password": self.password, "serveraddress": self.host}

    def _request(self, method: str, path: str, *, timeout: float, accept: str = "") -> int:
        """Send one request to the registry; return the HTTP status (4xx/5xx included).

        Raises ``OSError`` (``urllib.error.URLError`` included) when nothing answers."""
        request = urllib.request.Request(self.base_url + path, method=method)  # noqa: S310 - http(s) only
        if accept:
            request.add_header("Accept", accept)
        if self.username:
            token = base64.b64encode(f"{self.username}:{self.password}".encode()).decode()
            request.add_header("Authorization", f"Basic {token}")
        # A loopback registry (or one named by AGENT_REGISTRY_API_URL: a private address) is never reached
        # through a proxy of the environment.
        direct = self.loopback or bool(self.api_url)
        opener = urllib.request.build_opener(*([urllib.request.ProxyHandler({})] if direct else []))
        try:
            with opener.open(request, timeout=timeout) as response:
                return int(response.status)
        except urllib.error.HTTPError as exc:
            return int(exc.code)

    def ping(self, *, timeout: float) -> str | None:
        """``None`` when ``GET /v2/`` answers 200 or 401 (it answers, and wants credentials); else why not."""
        try:
            status = self._request("GET", "/v2/", timeout=timeout)
        except (OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            return f"the agent registry {self.base_url} does not answer: {reason}"
        if status in (200, 401):
            return None
        return f"the agent registry {self.base_url} answers GET /v2/ with HTTP {status}"
