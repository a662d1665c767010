"""SSRF guard: never let a crawled URL make the fetcher talk to an internal address.

A page can link (or redirect) to ``http://169.254.169.254/`` or to a name that resolves to
``10.0.0.5``; fetching it would let the web read the cluster's metadata service or intranet.
The check runs on *resolved* addresses, so names are no way around it:

* direct connections: every new connection resolves the host itself, refuses it when any
  address is blocked, and connects to the checked address (not to a second resolution, which
  DNS rebinding could change) — see :func:`guarded_connection_class`;
* through a proxy: the proxy resolves and connects (it is trusted configuration), so the
  target is checked before the request when it is an IP literal or, with
  ``fetcher.proxy_resolve_targets``, when its name resolves here (once per host and
  partition); a name that does not resolve here is left to the proxy. Names under the
  special-use TLDs ``.test``, ``.example`` and ``.invalid`` (RFC 6761: never in the public
  DNS) are not looked up at all: they are the replay web's made-up hosts, and a lookup can
  only fail — slowly, with a resolver that drops queries under load (seen here: 5 s each).

``fetcher.allow_private`` exempts CIDR ranges or exact host names.
"""
from __future__ import annotations

import ipaddress
import socket
import threading
from typing import Sequence

from urllib3.connection import HTTPConnection
from urllib3.exceptions import NameResolutionError, NewConnectionError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

UNRESOLVABLE_SUFFIXES = (".test", ".example", ".invalid")

# Ranges the address properties below do not cover: carrier-grade NAT (reaches a provider's
# internal hosts) and the cloud metadata endpoints, listed explicitly although link-local and
# unique-local already contain them, so the intent survives any change of those properties.
_EXTRA_BLOCKED = tuple(ipaddress.ip_network(n) for n in (
    "100.64.0.0/10", "169.254.169.254/32", "fd00:ec2::254/128"))


class BlockedAddress(Exception):
    """The target resolves to an address the guard refuses (deliberately not an OSError, so
    urllib3 passes it through instead of reporting a connection error)."""

    def __init__(self, host: str, address: str):
        super().__init__(f"blocked address {address} for {host}")
        self.host = host
        self.address = address


class AddressGuard:
    """Decides which addresses and hosts may be contacted."""

    def __init__(self, block_private: bool, allow_private: Sequence[str] = (),
                 resolve_proxied: bool = True):
        self.enabled = block_private
        self.resolve_proxied = resolve_proxied
        self._allowed_nets = []
        self._allowed_hosts = set()
        for entry in allow_private:
            try:
                self._allowed_nets.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                self._allowed_hosts.add(entry.strip().lower().rstrip("."))
        self._target_cache: dict[str, str | None] = {}
        self._lock = threading.Lock()

    def is_blocked(self, address: str | IPAddress) -> bool:
        """True for private, loopback, link-local, multicast, unspecified, reserved, CGNAT
        and metadata addresses (IPv4-mapped IPv6 is judged as the IPv4 it carries)."""
        if not self.enabled:
            return False
        ip = ipaddress.ip_address(address) if isinstance(address, str) else address
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        if any(ip in net for net in self._allowed_nets):
            return False
        return (ip.is_private or ip.is_loopback or ip.is_link_local or ip.is_multicast
                or ip.is_unspecified or ip.is_reserved
                or any(ip in net for net in _EXTRA_BLOCKED))

    def host_allowed(self, host: str) -> bool:
        """Exempt by name in ``allow_private`` (or the guard is off)."""
        return not self.enabled or host.lower().rstrip(".") in self._allowed_hosts

    def resolve(self, host: str, port: int) -> list[str]:
        """Addresses to connect to for a direct connection; raises :class:`BlockedAddress` when
        any of them is blocked (a name mixing public and internal addresses is an attack),
        ``socket.gaierror`` when the name does not resolve."""
        infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)
        addresses = list(dict.fromkeys(info[4][0] for info in infos))
        if not self.host_allowed(host):
            for address in addresses:
                if self.is_blocked(address):
                    raise BlockedAddress(host, address)
        return addresses

    def check_proxied_target(self, host: str) -> str | None:
        """For a request through the proxy: the blocked address of ``host``, or None when it may
        be requested. IP literals are judged as they are; names are resolved here once per
        partition (cached) and left to the proxy when they do not resolve (or when
        ``resolve_proxied`` is off)."""
        if self.host_allowed(host):
            return None
        host = host.strip("[]").lower().rstrip(".")  # "localhost." is localhost
        with self._lock:
            if host in self._target_cache:
                return self._target_cache[host]
        verdict = self._judge_target(host)
        with self._lock:
            self._target_cache[host] = verdict
        return verdict

    def _judge_target(self, host: str) -> str | None:
        try:
            return host if self.is_blocked(ipaddress.ip_address(host)) else None
        except ValueError:
            pass
        if not self.resolve_proxied or host.endswith(UNRESOLVABLE_SUFFIXES):
            return None
        try:
            infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError, OSError):
            return None
        for info in infos:
            if self.is_blocked(info[4][0]):
                return info[4][0]
        return None


class _GuardedConnection:
    """Mixin for urllib3 connections: resolve through the guard, then connect to the checked
    address by handing urllib3 the IP literal (so it does no second lookup)."""

    guard: AddressGuard

    def _new_conn(self):
        try:
            addresses = self.guard.resolve(self._dns_host, self.port)
        except socket.gaierror as exc:
            raise NameResolutionError(self.host, self, exc) from exc
        name = self._dns_host
        error: Exception | None = None
        try:
            for address in addresses:
                self._dns_host = address
                try:
                    return super()._new_conn()
                except NewConnectionError as exc:
                    error = exc
        finally:
            self._dns_host = name
        raise error or NewConnectionError(self, f"no address for {name}")


def guarded_connection_class(base: type[HTTPConnection], guard: AddressGuard) -> type:
    """A subclass of urllib3's HTTP(S)Connection bound to ``guard`` (one per partition)."""
    return type(f"Guarded{base.__name__}", (_GuardedConnection, base), {"guard": guard})

