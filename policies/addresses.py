"""How much of the public internet a set of address ranges admits, counted with ``ipaddress``.

A rule that looked for 0.0.0.0/0 alone passes 0.0.0.0/1 + 128.0.0.0/1, which admit the same addresses. Rules
count the public addresses the union of the ranges covers instead, leaving out the special-purpose ranges
(RFC 6890, IANA's special-purpose registries: private, loopback, link-local, CGNAT, documentation, multicast,
reserved), and refuse a union that covers more than one /16 of public IPv4 (65,536 addresses, more than any
office or VPN egress needs; a /8 threshold let 1.0.0.0/9, eight million addresses, through) or one /48 of public
IPv6 (the prefix one site is given).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

NOT_PUBLIC = {
    4: [
        ipaddress.ip_network(cidr)
        for cidr in (
            "0.0.0.0/8",
            "10.0.0.0/8",
            "100.64.0.0/10",
            "127.0.0.0/8",
            "169.254.0.0/16",
            "172.16.0.0/12",
            "192.0.0.0/24",
            "192.0.2.0/24",
            "192.168.0.0/16",
            "198.18.0.0/15",
            "198.51.100.0/24",
            "203.0.113.0/24",
            "224.0.0.0/3",  # multicast 224/4 and reserved 240/4
        )
    ],
    6: [
        ipaddress.ip_network(cidr)
        for cidr in ("::/3", "4000::/2", "8000::/1")  # everything outside global unicast 2000::/3
    ]
    + [ipaddress.ip_network(cidr) for cidr in ("2001:db8::/32", "2001::/23")],
}
PUBLIC_LIMIT = {4: 2**16, 6: 2**80}


def networks(ranges: Iterable[object]) -> list[Network]:
    """The valid CIDR ranges among `ranges` (host bits allowed, as GCP accepts them); others are skipped."""
    found = []
    for cidr in ranges:
        if isinstance(cidr, str):
            try:
                found.append(ipaddress.ip_network(cidr.strip(), strict=False))
            except ValueError:
                continue
    return found


def public_addresses(ranges: Iterable[object], version: int) -> int:
    """Public addresses of one IP version that the union of `ranges` covers."""
    union = list(ipaddress.collapse_addresses(n for n in networks(ranges) if n.version == version))
    total = 0
    for network in union:
        pieces = [network]
        for excluded in NOT_PUBLIC[version]:
            pieces = [rest for piece in pieces for rest in _without(piece, excluded)]
        total += sum(piece.num_addresses for piece in pieces)
    return total


def admits_the_internet(ranges: Iterable[object]) -> bool:
    """Whether the ranges together cover more public addresses than one /16 (IPv4) or one /48 (IPv6)."""
    ranges = list(ranges)
    return any(public_addresses(ranges, version) > limit for version, limit in PUBLIC_LIMIT.items())


def share_shown(ranges: Iterable[object]) -> str:
    """The public share the ranges cover, in words: "100% of public IPv4"."""
    ranges = list(ranges)
    shares = []
    for version in (4, 6):
        covered = public_addresses(ranges, version)
        if covered > PUBLIC_LIMIT[version]:
            every = public_addresses(["0.0.0.0/0" if version == 4 else "::/0"], version)
            shares.append(f"{covered / every * 100:.3g}% of public IPv{version}")
    return ", ".join(shares)


def _without(network: Network, excluded: Network) -> list[Network]:
    if not network.overlaps(excluded):
        return [network]
    if network.subnet_of(excluded):  # type: ignore[arg-type]
        return []
    return list(network.address_exclude(excluded))  # type: ignore[arg-type]
