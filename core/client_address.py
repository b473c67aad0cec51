"""The address of the client that sent a request, trusting ``X-Forwarded-For`` only from our own proxies.

``X-Forwarded-For`` is a list each proxy extends with the address it received the request from
(nginx: ``$proxy_add_x_forwarded_for``); whatever the client itself sent comes first. So it is read from
the right: starting at ``REMOTE_ADDR``, as long as the hop we are at is one of ``TRUSTED_PROXIES``
(addresses or networks), step to the address that hop reported. The first address that is not a trusted
proxy is the client. A request that did not come through a trusted proxy is its ``REMOTE_ADDR``, whatever
headers it carries; a malformed entry stops the walk at the last trusted hop.
"""

from __future__ import annotations

import ipaddress
from functools import cache
from typing import Any

from django.conf import settings

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@cache
def _networks(spec: tuple[str, ...]) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(item, strict=False) for item in spec)


def parse_proxies(items: list[str]) -> tuple[str, ...]:
    """Validate ``TRUSTED_PROXIES`` entries (addresses or CIDR networks); raises ``ValueError``."""
    for item in items:
        ipaddress.ip_network(item, strict=False)
    return tuple(items)


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    text = text.strip()
    if text.startswith("[") and "]" in text:  # [v6]:port
        text = text[1 : text.index("]")]
    elif text.count(":") == 1:  # v4:port
        text = text.split(":", 1)[0]
    try:
        addr = ipaddress.ip_address(text)
    except ValueError:
        return None
    mapped = getattr(addr, "ipv4_mapped", None)
    return mapped or addr


def _trusted(addr: Any, networks: tuple[Network, ...]) -> bool:
    return any(addr.version == net.version and addr in net for net in networks)


def client_address(request: Any) -> str:
    """The client's address (see the module's docstring); ``"unknown"`` when there is none."""
    remote = request.META.get("REMOTE_ADDR", "") or ""
    networks = _networks(tuple(getattr(settings, "RL_ARENA_TRUSTED_PROXIES", ()) or ()))
    current = _address(remote)
    if current is None:
        return remote or "unknown"
    if not networks or not _trusted(current, networks):
        return str(current)
    hops = [h for h in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if h.strip()]
    for hop in reversed(hops):
        reported = _address(hop)
        if reported is None:
            break
        current = reported
        if not _trusted(current, networks):
            break
    return str(current)
