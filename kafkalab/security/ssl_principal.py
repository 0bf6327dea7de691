"""From a client certificate to a principal: the distinguished name as Kafka prints it, then the mapping rules.

Theory of operation
-------------------
On an SSL listener with client authentication the broker knows the client by its certificate. Kafka's
``DefaultKafkaPrincipalBuilder`` takes the certificate's subject as Java prints it
(``X500Principal.getName()``, the RFC 2253 form) and passes it through ``ssl.principal.mapping.rules``; the
result is the name of a ``User`` principal. Without a client certificate (``ssl.client.auth=none``, or
``requested`` and the client sent none) the principal is ``User:ANONYMOUS``.

**The distinguished name** (:func:`distinguished_name`): the relative names in *reverse* order of the
certificate (most specific first: ``CN=alice,OU=eng,O=acme,C=GB``), attributes of one multi-valued RDN
joined by ``+``; the keywords ``CN, C, L, ST, O, OU, STREET, DC, UID``, any other attribute as its dotted OID
with the value's DER encoding in hex (``1.2.840.113549.1.9.1=#16...`` for an e-mail address); the
characters ``, + " \\ < > ;`` backslash-escaped, as are a leading ``#`` or space and a trailing space.

**The rules** (:class:`SslPrincipalMapper`): a comma-separated list; ``DEFAULT`` gives the distinguished name
unchanged; ``RULE:pattern/replacement/`` (optionally ending ``L`` or ``U`` for lower or upper case) applies
when the regular expression matches the *whole* name, and the name is then rewritten with ``$1``-style
references (a reference to a group that does not exist stays literal). The first rule that applies wins; if
none does the connection cannot be authenticated (``NoMatchingRule``). Example: ``RULE:^CN=(.*?),OU=.*$/$1/L``
turns ``CN=Alice,OU=eng`` into ``alice``.

Mirrors: ``clients/.../common/security/ssl/SslPrincipalMapper.java``,
``clients/.../common/security/authenticator/DefaultKafkaPrincipalBuilder.java`` (``applySslPrincipalMapper``)
and Java's ``javax.security.auth.x500.X500Principal.getName(RFC2253)``.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Optional

from kafkalab.common.config import ConfigException

from .principal import ANONYMOUS, USER_TYPE, KafkaPrincipal

if TYPE_CHECKING:       # cryptography is imported when a certificate is read, not when a broker starts
    from cryptography import x509

__all__ = ["SslPrincipalMapper", "NoMatchingRule", "distinguished_name", "principal_from_certificate"]

#: The attribute keywords Java's RFC 2253 printing uses, by OID; other attributes print as OID=#hex.
_KEYWORDS = {"2.5.4.3": "CN", "2.5.4.6": "C", "2.5.4.7": "L", "2.5.4.8": "ST", "2.5.4.10": "O", "2.5.4.11": "OU",
             "2.5.4.9": "STREET", "0.9.2342.19200300.100.1.25": "DC", "0.9.2342.19200300.100.1.1": "UID"}
_SPECIAL = set(',+"\\<>;')


def _escape(value: str) -> str:
    out = []
    for i, ch in enumerate(value):
        if ch in _SPECIAL or (i == 0 and ch in "# ") or (i == len(value) - 1 and ch == " "):
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def _der_length(n: int) -> bytes:
    if n < 0x80:
        return bytes([n])
    body = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(body)]) + body


def _der_value(attribute: x509.NameAttribute) -> bytes:
    """The attribute's value as DER (tag, length, contents), as Java hex-prints an unknown attribute."""
    tag = attribute._type.value          # the ASN.1 string type the certificate used (cryptography's _ASN1Type)
    value = attribute.value
    if isinstance(value, bytes):         # a BIT STRING (x500UniqueIdentifier)
        contents = b"\x00" + value
    elif tag == 30:                      # BMPString
        contents = value.encode("utf-16-be")
    elif tag == 28:                      # UniversalString
        contents = value.encode("utf-32-be")
    else:
        contents = value.encode("utf-8")
    return bytes([tag]) + _der_length(len(contents)) + contents


def _attribute(attribute: x509.NameAttribute) -> str:
    keyword = _KEYWORDS.get(attribute.oid.dotted_string)
    if keyword is None:
        return f"{attribute.oid.dotted_string}=#{_der_value(attribute).hex()}"
    return f"{keyword}={_escape(str(attribute.value))}"


def distinguished_name(name: x509.Name) -> str:
    """``name`` printed as Java's ``X500Principal.getName()`` prints it (RFC 2253)."""
    return ",".join("+".join(_attribute(a) for a in rdn) for rdn in reversed(name.rdns))


class NoMatchingRule(ValueError):
    """No rule of ``ssl.principal.mapping.rules`` applies to a distinguished name."""


_RULE = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_RULE_SPLITTER = re.compile(r"\s*(" + _RULE + r")\s*(,\s*|$)")
_RULE_PARSER = re.compile(_RULE)
_BACK_REFERENCE = re.compile(r"\$(\d+)")


class _Rule:
    def __init__(self, pattern: Optional[str] = None, replacement: str = "", case: str = ""):
        self.pattern = None if pattern is None else re.compile(pattern)
        self.replacement, self.case = replacement, case

    def apply(self, dn: str) -> Optional[str]:
        if self.pattern is None:
            return dn
        match = self.pattern.fullmatch(dn)
        if match is None:
            return None
        groups = self.pattern.groups
        result = self.pattern.sub(lambda m: _expand(self.replacement, m, groups), dn)
        if self.case == "L":
            return result.lower()
        return result.upper() if self.case == "U" else result

    def __repr__(self) -> str:
        if self.pattern is None:
            return "DEFAULT"
        return f"RULE:{self.pattern.pattern}/{self.replacement}" + (f"/{self.case}" if self.case else "")


def _expand(replacement: str, match: re.Match, groups: int) -> str:
    """Java's ``replaceAll`` replacement: ``$n`` is group n (the longest prefix of the digits naming a group
    that exists; none: the ``$`` stays literal), ``\\x`` is a literal x."""
    out, i = [], 0
    while i < len(replacement):
        ch = replacement[i]
        if ch == "\\" and i + 1 < len(replacement):
            out.append(replacement[i + 1])
            i += 2
            continue
        m = _BACK_REFERENCE.match(replacement, i) if ch == "$" else None
        if m is None:
            out.append(ch)
            i += 1
            continue
        digits = m.group(1)
        while len(digits) > 1 and int(digits) > groups:
            digits = digits[:-1]
        if int(digits) > groups:
            out.append("$")
            i += 1
            continue
        out.append(match.group(int(digits)) or "")
        i += 1 + len(digits)
    return "".join(out)


class SslPrincipalMapper:
    """``ssl.principal.mapping.rules`` parsed; :meth:`name` maps a distinguished name."""

    def __init__(self, rules: Optional[str] = "DEFAULT"):
        self.rules = _parse_rules(_split_rules("DEFAULT" if rules is None else rules))

    def name(self, dn: str) -> str:
        for rule in self.rules:
            result = rule.apply(dn)
            if result is not None:
                return result
        raise NoMatchingRule(f"No rules apply to {dn}, rules {self.rules}")

    def __repr__(self) -> str:
        return f"SslPrincipalMapper(rules = {self.rules})"


def _split_rules(text: str) -> list[str]:
    return [m.group(1) for m in _RULE_SPLITTER.finditer(text.strip())]


def _parse_rules(texts: list[str]) -> list[_Rule]:
    rules = []
    for text in texts:
        m = _RULE_PARSER.match(text)
        if m is None:
            raise ConfigException(f"Invalid rule: {text}")
        if m.end() != len(text):
            raise ConfigException(f"Invalid rule: `{text}`, unmatched substring: `{text[m.end():]}`")
        if m.group(1) is not None:
            rules.append(_Rule())
        elif m.group(2) is not None:
            try:
                rules.append(_Rule(m.group(2), m.group(4), m.group(6)))
            except re.error as e:
                raise ConfigException(f"Invalid rule: {text}: {e}") from None
    return rules


def principal_from_certificate(der: Optional[bytes], mapper: SslPrincipalMapper) -> KafkaPrincipal:
    """The principal of a TLS connection whose peer sent the certificate ``der`` (None: no certificate,
    ``User:ANONYMOUS``). Raises :class:`NoMatchingRule` when no mapping rule applies."""
    if der is None:
        return ANONYMOUS
    from cryptography import x509
    cert = x509.load_der_x509_certificate(der)
    return KafkaPrincipal(USER_TYPE, mapper.name(distinguished_name(cert.subject)))
