"""The authorizer's decision core: Kafka's rules, the implied operations, the patterns and the index walk."""
import random

import pytest

from kafkalab.protocol import ApiException, ErrorCode
from kafkalab.security.acl import (AccessControlEntry, AclBinding, AclBindingFilter, AclOperation,
                                   AclPermissionType, PatternType, ResourcePattern, ResourcePatternFilter,
                                   ResourceType, from_pascal_case, pascal_case)
from kafkalab.security.authorizer import (AclIndex, AuthorizerCore, decision_table, parse_super_users,
                                          validate_binding)
from kafkalab.security.principal import KafkaPrincipal, parse_principal

ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
Op, RT = AclOperation, ResourceType
TOPIC = RT.TOPIC


def acl(name, principal, op, perm=ALLOW, host="*", rtype=TOPIC, pattern=PatternType.LITERAL):
    return AclBinding(ResourcePattern(rtype, name, pattern), AccessControlEntry(principal, host, op, perm))


def core(*bindings, **kw):
    c = AuthorizerCore(**kw)
    for b in bindings:
        c.index.add(b)
    return c


def test_enum_codes_are_kafkas():
    assert (RT.TOPIC, RT.GROUP, RT.CLUSTER, RT.TRANSACTIONAL_ID) == (2, 3, 4, 5)
    assert (PatternType.ANY, PatternType.MATCH, PatternType.LITERAL, PatternType.PREFIXED) == (1, 2, 3, 4)
    assert (Op.ALL, Op.READ, Op.DESCRIBE, Op.CLUSTER_ACTION, Op.IDEMPOTENT_WRITE) == (2, 3, 8, 9, 12)
    assert (AclPermissionType.DENY, AclPermissionType.ALLOW) == (2, 3)
    assert pascal_case(RT.TRANSACTIONAL_ID) == "TransactionalId"
    assert pascal_case(Op.DESCRIBE_CONFIGS) == "DescribeConfigs"
    assert from_pascal_case(Op, "IdempotentWrite") is Op.IDEMPOTENT_WRITE
    assert from_pascal_case(RT, "TOPIC") is RT.TOPIC


def test_principal_parsing():
    assert str(KafkaPrincipal("User", "alice")) == "User:alice"
    assert parse_principal("User:CN=x,O=y") == KafkaPrincipal("User", "CN=x,O=y")
    with pytest.raises(ValueError, match="principalType:principalName"):
        parse_principal("alice")


def test_super_users_bypass_acls_even_a_deny():
    c = core(acl("t", "User:admin", Op.ALL, DENY), super_users=parse_super_users("User:admin; User:ops"))
    assert c.super_users == {"User:admin", "User:ops"}
    d = c.explain(KafkaPrincipal("User", "admin"), "1.2.3.4", Op.WRITE, TOPIC, "t")
    assert d.allowed and d.rule == "super user"


def test_deny_beats_allow():
    c = core(acl("t", "User:alice", Op.WRITE), acl("t", "User:*", Op.WRITE, DENY, host="10.0.0.9"))
    assert c.authorize("User:alice", "10.0.0.1", Op.WRITE, TOPIC, "t")
    d = c.explain("User:alice", "10.0.0.9", Op.WRITE, TOPIC, "t")
    assert not d.allowed and d.rule == "deny acl" and d.acl.host == "10.0.0.9"


def test_implied_describe_from_allow_only():
    c = core(acl("t", "User:alice", Op.READ), acl("t", "User:bob", Op.ALTER_CONFIGS))
    assert c.authorize("User:alice", "h", Op.DESCRIBE, TOPIC, "t")
    assert not c.authorize("User:alice", "h", Op.WRITE, TOPIC, "t")
    assert c.authorize("User:bob", "h", Op.DESCRIBE_CONFIGS, TOPIC, "t")
    assert not c.authorize("User:bob", "h", Op.DESCRIBE, TOPIC, "t")     # ALTER_CONFIGS is not ALTER
    # A DENY READ does not deny DESCRIBE.
    c2 = core(acl("t", "User:alice", Op.DESCRIBE), acl("t", "User:alice", Op.READ, DENY))
    assert c2.authorize("User:alice", "h", Op.DESCRIBE, TOPIC, "t")
    assert not c2.authorize("User:alice", "h", Op.READ, TOPIC, "t")


def test_all_operation_and_wildcards():
    c = core(acl("*", "User:*", Op.ALL))
    assert c.authorize("User:anyone", "h", Op.DELETE, TOPIC, "whatever")
    assert not c.authorize("User:anyone", "h", Op.READ, RT.GROUP, "whatever")   # another resource type


def test_allow_everyone_only_when_no_acl_applies():
    c = core(acl("t", "User:alice", Op.READ), allow_everyone_if_no_acl_found=True)
    d = c.explain("User:bob", "h", Op.WRITE, TOPIC, "other")
    assert d.allowed and d.rule == "no acl found"
    d = c.explain("User:bob", "h", Op.READ, TOPIC, "t")       # t has ACLs, none for bob
    assert not d.allowed and d.rule == "no matching allow acl"
    assert not core().authorize("User:bob", "h", Op.READ, TOPIC, "x")


def test_prefixed_and_literal_patterns():
    c = core(acl("orders-", "User:alice", Op.WRITE, pattern=PatternType.PREFIXED))
    assert c.authorize("User:alice", "h", Op.WRITE, TOPIC, "orders-eu")
    assert c.authorize("User:alice", "h", Op.WRITE, TOPIC, "orders-")
    assert not c.authorize("User:alice", "h", Op.WRITE, TOPIC, "orders")
    c.index.add(acl("orders-eu", "User:alice", Op.WRITE, DENY))
    assert not c.authorize("User:alice", "h", Op.WRITE, TOPIC, "orders-eu")
    assert c.authorize("User:alice", "h", Op.WRITE, TOPIC, "orders-eu2")      # literal is exact


def test_the_backwards_walk_of_the_docstring():
    index = AclIndex()
    for name in ["a", "or", "orders-", "orders-eu", "ordinal", "p"]:
        index.add(acl(name, "User:x", Op.READ, pattern=PatternType.PREFIXED))
    assert index.prefixes_of(TOPIC, "orders-us") == ["orders-", "or"]
    assert index.prefixes_of(TOPIC, "b") == []
    assert index.prefixes_of(RT.GROUP, "orders-us") == []


def test_the_walk_agrees_with_a_scan():
    rnd = random.Random(16)
    names = {"".join(rnd.choice("abc") for _ in range(rnd.randint(1, 5))) for _ in range(300)}
    index = AclIndex()
    for n in names:
        index.add(acl(n, "User:x", Op.READ, pattern=PatternType.PREFIXED))
    for _ in range(300):
        probe = "".join(rnd.choice("abc") for _ in range(rnd.randint(0, 7)))
        assert sorted(index.prefixes_of(TOPIC, probe)) == sorted(n for n in names if probe.startswith(n))


def test_cache_follows_changes():
    c = core(acl("t", "User:alice", Op.READ))
    assert c.authorize("User:alice", "h", Op.READ, TOPIC, "t")
    c.index.remove(acl("t", "User:alice", Op.READ))
    assert not c.authorize("User:alice", "h", Op.READ, TOPIC, "t")
    c.index.replace(ResourcePattern(TOPIC, "t-", PatternType.PREFIXED),
                    [AccessControlEntry("User:alice", "*", Op.READ, ALLOW)])
    assert c.authorize("User:alice", "h", Op.READ, TOPIC, "t-1")
    c.index.replace(ResourcePattern(TOPIC, "t-", PatternType.PREFIXED), [])
    assert not c.authorize("User:alice", "h", Op.READ, TOPIC, "t-1") and len(c.index) == 0


def test_filters_match_like_kafka():
    index = AclIndex()
    for b in [acl("orders", "User:a", Op.READ), acl("*", "User:b", Op.READ), acl("ord", "User:c", Op.READ,
              pattern=PatternType.PREFIXED), acl("g", "User:a", Op.READ, rtype=RT.GROUP)]:
        index.add(b)
    match = AclBindingFilter(ResourcePatternFilter(TOPIC, "orders", PatternType.MATCH))
    assert [b.entry.principal for b in index.bindings(match)] == ["User:b", "User:c", "User:a"]   # sorted by name
    literal = AclBindingFilter(ResourcePatternFilter(TOPIC, "orders", PatternType.LITERAL))
    assert [b.entry.principal for b in index.bindings(literal)] == ["User:a"]
    assert len(index.bindings()) == 4
    assert AclBindingFilter(ResourcePatternFilter(RT.UNKNOWN)).indefinite_field() == "Resource type is UNKNOWN."


@pytest.mark.parametrize("binding, message", [
    (acl("x", "User:a", Op.READ, rtype=RT.CLUSTER), "The only valid name for the CLUSTER resource is kafka-cluster"),
    (acl("", "User:a", Op.READ), "Invalid empty resource name"),
    (acl("t", "User:a", Op.ANY), "ACL binding contains unknown elements"),
    (acl("t", "User:a", Op.READ, pattern=PatternType.MATCH), "Invalid pattern type: MATCH"),
    (acl("t", "alice", Op.READ), "principalType:principalName"),
])
def test_invalid_bindings_are_invalid_request(binding, message):
    with pytest.raises(ApiException, match=message) as e:
        validate_binding(binding)
    assert e.value.error_code == ErrorCode.INVALID_REQUEST


def test_decision_table_rows():
    c = core(acl("t", "User:alice", Op.WRITE), acl("t", "User:alice", Op.WRITE, DENY, host="10.0.0.9"),
             super_users={"User:admin"})
    rows = decision_table(c, [("User:alice", "10.0.0.1", Op.WRITE, TOPIC, "t"),
                              ("User:alice", "10.0.0.9", Op.WRITE, TOPIC, "t"),
                              ("User:admin", "10.0.0.9", Op.DELETE, TOPIC, "t")])
    assert [(r["result"], r["rule"]) for r in rows] == [("ALLOWED", "allow acl"), ("DENIED", "deny acl"),
                                                       ("ALLOWED", "super user")]
    assert rows[1]["acl"] == ("(pattern=ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL), "
                              "entry=(principal=User:alice, host=10.0.0.9, operation=WRITE, permissionType=DENY))")


def test_authorize_by_resource_type_for_idempotent_producers():
    c = core(acl("t", "User:alice", Op.WRITE), acl("u", "User:bob", Op.WRITE, DENY))
    assert c.authorize_by_resource_type("User:alice", "h", Op.WRITE, TOPIC)
    assert not c.authorize_by_resource_type("User:bob", "h", Op.WRITE, TOPIC)
    assert not c.authorize_by_resource_type("User:carol", "h", Op.WRITE, TOPIC)
    c.allow_everyone_if_no_acl_found = True
    assert c.authorize_by_resource_type("User:carol", "h", Op.WRITE, TOPIC)      # no DENY for carol anywhere
    assert not c.authorize_by_resource_type("User:bob", "h", Op.WRITE, TOPIC)
    c.index.add(acl("*", "User:alice", Op.WRITE, DENY))
    assert not c.authorize_by_resource_type("User:alice", "h", Op.WRITE, TOPIC)


def test_audit_messages_in_both_authorizers_shapes():
    from kafkalab.security.authorizer import audit_message

    c = core(acl("alp", "User:bob", Op.READ, DENY, pattern=PatternType.PREFIXED), super_users={"User:admin"})
    denied = c.explain("User:bob", "127.0.0.1", Op.READ, TOPIC, "alpha")
    assert audit_message(denied, "Fetch", 1) == (
        "Principal = User:bob is Denied Operation = Read from host = 127.0.0.1 on resource = Topic:LITERAL:alpha "
        "for request = Fetch with resourceRefCount = 1")
    assert audit_message(denied, "Fetch", 1, standard=True) == (
        "Principal = User:bob is Denied operation = READ from host = 127.0.0.1 on resource = Topic:LITERAL:alpha "
        "for request = Fetch with resourceRefCount = 1 based on rule MatchingAcl(acl=StandardAcl[resourceType=TOPIC, "
        "resourceName=alp, patternType=PREFIXED, principal=User:bob, host=*, operation=READ, permissionType=DENY])")
    assert audit_message(c.explain("User:x", "h", Op.READ, TOPIC, "zzz"), "Fetch", 1, standard=True).endswith(
        "based on rule DefaultDeny")
    assert audit_message(c.explain("User:admin", "h", Op.READ, TOPIC, "zzz"), "Fetch", 1, standard=True).endswith(
        "based on rule SuperUser")


# Many ACLs that all match User:alice reading orders-eu from 10.0.0.1, on every kind of pattern that applies.
_MATCHING = [acl(name, principal, op, perm, host, pattern=pattern)
             for name, pattern in (("orders-eu", PatternType.LITERAL), ("orders-", PatternType.PREFIXED),
                                   ("ord", PatternType.PREFIXED), ("*", PatternType.LITERAL))
             for principal in ("User:alice", "User:*") for host in ("10.0.0.1", "*")
             for op, perm in ((Op.READ, ALLOW), (Op.ALL, ALLOW))]
_DENIES = [acl("orders-", "User:*", Op.READ, DENY, pattern=PatternType.PREFIXED),
           acl("*", "User:alice", Op.ALL, DENY), acl("ord", "User:alice", Op.READ, DENY, "10.0.0.1",
                                                     pattern=PatternType.PREFIXED)]
_EXPLAIN_SCRIPT = """
import random, sys
sys.path.insert(0, {root!r})
from tests.security.test_authorizer import _MATCHING, _DENIES, core, Op, TOPIC
for bindings in (_MATCHING, _MATCHING + _DENIES):
    bindings = list(bindings)
    random.Random({seed}).shuffle(bindings)
    d = core(*bindings).explain("User:alice", "10.0.0.1", Op.READ, TOPIC, "orders-eu")
    print(d.result, d.pattern, d.acl)
"""


def test_explain_names_the_same_acl_whatever_the_insertion_or_hash_order():
    """Kafka's StandardAuthorizer scans the applying ACLs in its sort order (literal name, prefixes longest
    first, then ``*``; in a pattern by operation, principal, host) and names the first matching DENY or the last
    matching ALLOW. The answer must not depend on the order ACLs were added or on PYTHONHASHSEED."""
    for seed in range(5):
        shuffled = list(_MATCHING)
        random.Random(seed).shuffle(shuffled)
        d = core(*shuffled).explain("User:alice", "10.0.0.1", Op.READ, TOPIC, "orders-eu")
        assert d.allowed and d.rule == "allow acl"
        # the last of the scan: the literal "*" pattern; READ (3) after ALL (2); "User:*" before "User:alice"
        # and "*" before "10.0.0.1" (code points) -> the last one is (READ, User:alice, 10.0.0.1)
        assert (d.pattern, d.acl) == (ResourcePattern(TOPIC, "*"),
                                      AccessControlEntry("User:alice", "10.0.0.1", Op.READ, ALLOW)), seed
        d = core(*shuffled, *_DENIES).explain("User:alice", "10.0.0.1", Op.READ, TOPIC, "orders-eu")
        # the first DENY of the scan: prefixes longest first, so orders- before ord before *
        assert (d.rule, d.pattern, d.acl) == ("deny acl", ResourcePattern(TOPIC, "orders-", PatternType.PREFIXED),
                                              AccessControlEntry("User:*", "*", Op.READ, DENY)), seed


def test_explain_is_the_same_under_other_hash_seeds():
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    outputs = set()
    for seed in ("0", "1", "2"):
        out = subprocess.run([sys.executable, "-c", _EXPLAIN_SCRIPT.format(root=root, seed=seed)],
                             env={**os.environ, "PYTHONHASHSEED": seed}, capture_output=True, text=True, check=True,
                             cwd=root)
        outputs.add(out.stdout)
    assert len(outputs) == 1, outputs
