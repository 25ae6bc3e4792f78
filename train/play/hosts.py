"""The names ``llama-rl serve`` answers to: what a host name may be, and its one spelling.

Written once for the command line (``--host``, ``--allow-host``) and the server (the
``Host`` header it compares, the ``--allow-host`` a refused page suggests), so that a name
one of them takes the other takes too. The standard library only: the command line reads
it before it knows whether the ``web`` extra is installed.
"""

from __future__ import annotations

import ipaddress
import re

__all__ = ["LOCAL_HOSTS", "allowed_host", "host_name", "listen_host", "requested_name", "normal_host", "is_loopback"]

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
"""The host names a server on this machine answers to."""

_NAME = re.compile(r"[a-z0-9_][a-z0-9_.\-]*")
"""A host name, lowercase: letters, digits, ``-``, ``_`` (``my_pc``, a Windows computer's
name) and ``.``; an IPv4 address is one too."""

_SCOPE = re.compile(r"[A-Za-z0-9_.\-]+")
"""An IPv6 address's interface (``eth0`` in ``fe80::1%eth0``, ``12`` on Windows), as typed:
interface names are case-sensitive."""


def normal_host(text: str) -> str:
    """The one spelling of a host name, in which names are compared: lowercase, an IPv6
    address without its brackets and compressed (``[::1]``, ``[0:0::1]`` and ``LOCALHOST``
    are ``::1``, ``::1`` and ``localhost``, as a browser writes them in its ``Host``
    header); an IPv6 address's interface keeps its case (``FE80::1%ETH0`` is
    ``fe80::1%ETH0``)."""
    name = text.strip()
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    address, sign, scope = name.partition("%")
    name = address.lower() + sign + scope
    if ":" in address:
        try:
            return ipaddress.IPv6Address(name).compressed
        except ValueError:  # no address: host_name refuses it
            pass
    return name


def host_name(text: str) -> str | None:
    """``text`` as a host name or IP address, in its one spelling (:func:`normal_host`);
    ``None`` where it is neither (a port, a scheme, a space, an empty one: a ``Host``
    header so written never names this server)."""
    name = normal_host(text)
    if ":" not in name:
        return name if _NAME.fullmatch(name) else None
    if "%" in name:  # a scope (fe80::1%eth0) is not one a browser sends
        return None
    try:
        ipaddress.IPv6Address(name)
    except ValueError:
        return None
    return name


def allowed_host(text: str) -> str | None:
    """``text`` as a name the server may be reached by (``--allow-host``), in the spelling a
    browser's ``Host`` header gives it: :func:`host_name`'s, with a name in another script
    written in IDNA (``bücher.local`` is ``xn--bcher-kva.local``); ``None`` where it is no
    such name."""
    name = normal_host(text)
    if name.isascii():
        return host_name(name)
    try:
        return host_name(name.encode("idna").decode("ascii"))
    except UnicodeError:  # a label too long or empty, as getaddrinfo would say
        return None


def listen_host(text: str) -> str | None:
    """``text`` as an address the server can listen on, in its one spelling; ``None`` where
    it is none (a port, a scheme, a space, an empty one). What :func:`host_name` takes, and
    what it refuses but ``getaddrinfo`` binds: an IPv6 address with its interface
    (``fe80::1%eth0``, which no browser sends) and a name in another script
    (``bücher.local``, written in IDNA as ``getaddrinfo`` and a browser write it:
    ``xn--bcher-kva.local``)."""
    name = normal_host(text)
    address, sign, scope = name.partition("%")
    if sign and ":" in address and _SCOPE.fullmatch(scope) and host_name(address) is not None:
        return name
    return allowed_host(name)


def requested_name(host: str) -> str:
    """The name requests give in their ``Host`` header for a server listening on ``host``
    (one :func:`listen_host` returned): the address without its interface (``fe80::1%eth0``
    is reached as ``fe80::1``)."""
    return host.partition("%")[0]


def is_loopback(name: str) -> bool:
    """Whether ``name`` (in its one spelling) is this machine alone: one of
    :data:`LOCAL_HOSTS` or a loopback address (``127.0.0.2``)."""
    try:
        return name in LOCAL_HOSTS or ipaddress.ip_address(name).is_loopback
    except ValueError:  # a host name, not an address
        return False
