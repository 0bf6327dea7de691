"""The certificate principal: distinguished names printed as Java prints them (RFC 2253), and Kafka's
``ssl.principal.mapping.rules`` (the cases of Kafka's ``SslPrincipalMapperTest``)."""
from __future__ import annotations

import pytest
from cryptography import x509
from cryptography.x509.oid import NameOID

from kafkalab.common.config import ConfigException
from kafkalab.security.principal import ANONYMOUS, KafkaPrincipal
from kafkalab.security.ssl_principal import (NoMatchingRule, SslPrincipalMapper, distinguished_name,
                                             principal_from_certificate)


def name(*attributes) -> x509.Name:
    return x509.Name([x509.NameAttribute(oid, value) for oid, value in attributes])


def test_the_distinguished_name_lists_the_most_specific_part_first():
    dn = name((NameOID.COUNTRY_NAME, "GB"), (NameOID.ORGANIZATION_NAME, "acme"),
              (NameOID.ORGANIZATIONAL_UNIT_NAME, "eng"), (NameOID.COMMON_NAME, "alice"))
    assert distinguished_name(dn) == "CN=alice,OU=eng,O=acme,C=GB"


def test_special_characters_are_escaped_and_unknown_attributes_are_hex():
    dn = name((NameOID.ORGANIZATION_NAME, "Acme, Inc."), (NameOID.COMMON_NAME, "#a+b<c>;\"d\\ "),
              (NameOID.EMAIL_ADDRESS, "a@b"))
    # e-mail has no RFC 2253 keyword: its OID, then '#' and the DER of the IA5String (tag 0x16, length 3)
    assert distinguished_name(dn) == ('1.2.840.113549.1.9.1=#1603614062,CN=\\#a\\+b\\<c\\>\\;\\"d\\\\\\ ,'
                                      'O=Acme\\, Inc.')


def test_a_multi_valued_rdn_is_joined_with_plus():
    dn = x509.Name([x509.RelativeDistinguishedName([x509.NameAttribute(NameOID.COMMON_NAME, "a"),
                                                    x509.NameAttribute(NameOID.USER_ID, "u1")]),
                    x509.RelativeDistinguishedName([x509.NameAttribute(NameOID.DOMAIN_COMPONENT, "org")])])
    assert distinguished_name(dn) in ("DC=org,CN=a+UID=u1", "DC=org,UID=u1+CN=a")


def test_mapping_rules_first_match_wins():
    mapper = SslPrincipalMapper(", ".join([
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
        "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
        "RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
        "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
        "DEFAULT"]))
    assert mapper.name("CN=Duke,OU=ServiceUsers,O=Org,C=US") == "duke"
    assert mapper.name("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US") == "duke@sme"
    assert mapper.name("cn=duke,ou=sme,dc=mycp,dc=com") == "DUKE@SME"
    assert mapper.name("cN=duke,OU=JavaSoft,O=Sun Microsystems") == "DUKE"
    assert mapper.name("OU=JavaSoft,O=Sun Microsystems,C=US") == "OU=JavaSoft,O=Sun Microsystems,C=US"


def test_an_escaped_comma_in_a_rule_and_a_name():
    mapper = SslPrincipalMapper("RULE:^CN=((\\\\, *|\\w)+)(,.*|$)/$1/,DEFAULT")
    assert mapper.name("CN=Tkac\\, Adam,OU=ITZ,DC=geodis,DC=cz") == "Tkac\\, Adam"


def test_a_back_reference_to_a_missing_group_stays_literal():
    assert SslPrincipalMapper("RULE:^CN=(.*?),.*$/$1-$2/").name("CN=a,O=b") == "a-$2"


def test_no_matching_rule():
    with pytest.raises(NoMatchingRule, match="No rules apply to CN=x"):
        SslPrincipalMapper("RULE:^CN=y$/y/").name("CN=x")


@pytest.mark.parametrize("rules, shown", [
    ("", "[]"), ("DEFAULT", "[DEFAULT]"), ("RULE://", "[RULE:/]"), ("RULE:/.*/L", "[RULE:/.*/L]"),
    ("  RULE:// ,  DEFAULT  ", "[RULE:/, DEFAULT]"), (",,RULE://,,,DEFAULT,,", "[RULE:/, DEFAULT]"),
    ("  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  ", "[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]"),
])
def test_rules_splitting(rules, shown):
    assert repr(SslPrincipalMapper(rules)) == f"SslPrincipalMapper(rules = {shown})"


@pytest.mark.parametrize("rules", ["default", "DEFAUL", "DEFAULT/L", "RULE:CN=(.*?),OU=ServiceUsers.*/$1",
                                   "rule:^CN=(.*?),OU=ServiceUsers.*$/$1/", "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
                                   "RULE:^CN=(.*?),OU=ServiceUsers.*$/L", "RULE:^CN=(.*?),OU=ServiceUsers.*$/LU"])
def test_invalid_rules_are_refused(rules):
    with pytest.raises(ConfigException, match="Invalid rule"):
        SslPrincipalMapper(rules)


def test_principals():
    alice = KafkaPrincipal("User", "CN=alice,OU=eng")
    assert alice == "User:CN=alice,OU=eng" and alice.name == "CN=alice,OU=eng" and alice.principal_type == "User"
    assert KafkaPrincipal.from_string("User:bob") == KafkaPrincipal("User", "bob")
    assert principal_from_certificate(None, SslPrincipalMapper()) is ANONYMOUS
    assert ANONYMOUS == "User:ANONYMOUS"
