"""``kafkalab acls`` (kafka-acls.sh) and the Admin client's ACL methods against a broker with the authorizer."""
import pytest

from kafkalab.cli import main
from kafkalab.clients import Admin
from kafkalab.clients.admin import AdminError
from kafkalab.cluster import Cluster
from kafkalab.protocol import ErrorCode
from kafkalab.security.acl import (AccessControlEntry, AclBinding, AclBindingFilter, AclOperation,
                                   AclPermissionType, PatternType, ResourcePattern, ResourcePatternFilter,
                                   ResourceType)

OPEN = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer", "super.users": "User:ANONYMOUS"}


@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=1, overrides=OPEN) as c:
        yield c


def acls(cluster, *args):
    return main(["acls", "--bootstrap-server", cluster.bootstrap_servers, *args])


def test_add_list_remove_with_kafkas_output(cluster, capsys):
    assert acls(cluster, "--add", "--allow-principal", "User:alice", "--operation", "Write", "--operation", "Read",
                "--topic", "orders") == 0
    out = capsys.readouterr().out
    pattern = "ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)"
    write = "(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)"
    read = "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"
    assert out.startswith(f"Adding ACLs for resource `{pattern}`: \n \t{write}\n\t{read} \n\n")
    assert f"Current ACLs for resource `{pattern}`: \n \t" in out
    assert acls(cluster, "--add", "--deny-principal", "User:bob", "--deny-host", "10.0.0.9", "--topic", "ord",
                "--resource-pattern-type", "prefixed") == 0
    capsys.readouterr()
    assert acls(cluster, "--list") == 0
    out = capsys.readouterr().out
    assert "ResourcePattern(resourceType=TOPIC, name=ord, patternType=PREFIXED)" in out
    assert "(principal=User:bob, host=10.0.0.9, operation=ALL, permissionType=DENY)" in out
    assert acls(cluster, "--remove", "--force", "--topic", "orders") == 0
    capsys.readouterr()
    assert acls(cluster, "--list", "--topic", "orders") == 0
    assert capsys.readouterr().out == ""


def test_usage_and_errors(cluster, capsys):
    assert acls(cluster, "--add", "--list", "--topic", "t") == 1
    assert "exactly one action" in capsys.readouterr().err
    assert acls(cluster, "--add", "--allow-principal", "User:a", "--operation", "IdempotentWrite", "--topic", "t") == 1
    assert "ResourceType TOPIC only supports operations" in capsys.readouterr().err
    assert acls(cluster, "--add", "--topic", "t") == 1
    assert "You must specify one of: --allow-principal, --deny-principal" in capsys.readouterr().err


def test_admin_acl_methods(cluster):
    binding = AclBinding(ResourcePattern(ResourceType.GROUP, "g"),
                         AccessControlEntry("User:carol", "*", AclOperation.READ, AclPermissionType.ALLOW))
    bad = AclBinding(ResourcePattern(ResourceType.CLUSTER, "nope"), binding.entry)
    with Admin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        admin.create_acls([binding])
        with pytest.raises(AdminError) as e:
            admin.create_acls([bad])
        assert e.value.errors[bad].error_code == ErrorCode.INVALID_REQUEST
        groups = AclBindingFilter(ResourcePatternFilter(ResourceType.GROUP, None, PatternType.ANY))
        assert admin.describe_acls(groups) == [binding]
        assert admin.delete_acls([groups]) == {groups: [binding]}
        assert admin.describe_acls(groups) == []


def test_remove_asks_first(cluster, capsys):
    assert acls(cluster, "--add", "--allow-principal", "User:dave", "--topic", "asked") == 0
    capsys.readouterr()
    answers = iter(["n"])
    from kafkalab.cli import acls as acls_cli, build_parser

    args = build_parser().parse_args(["acls", "--bootstrap-server", cluster.bootstrap_servers, "--remove",
                                      "--topic", "asked"])
    assert acls_cli.run(args, confirm=lambda: next(answers)) == 0
    out = capsys.readouterr().out
    assert out.startswith("Are you sure you want to delete all ACLs for resource filter "
                          "`ResourcePattern(resourceType=TOPIC, name=asked, patternType=LITERAL)`? (y/n)\n")
    assert "(principal=User:dave, host=*, operation=ALL, permissionType=ALLOW)" in out    # still there


def test_producer_and_consumer_roles(cluster, capsys):
    assert acls(cluster, "--add", "--allow-principal", "User:app", "--producer", "--idempotent", "--consumer",
                "--topic", "roles", "--group", "roles-g") == 0
    capsys.readouterr()
    with Admin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        got = {(b.pattern.resource_type, b.pattern.name, b.entry.operation) for b in admin.describe_acls()
               if b.entry.principal == "User:app"}
    T, G, C = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
    Op = AclOperation
    assert got == {(T, "roles", Op.WRITE), (T, "roles", Op.DESCRIBE), (T, "roles", Op.CREATE), (T, "roles", Op.READ),
                   (G, "roles-g", Op.READ), (C, "kafka-cluster", Op.IDEMPOTENT_WRITE)}
    assert acls(cluster, "--add", "--allow-principal", "User:app", "--consumer", "--topic", "roles") == 1
    assert "With --consumer you must specify a --topic and a --group" in capsys.readouterr().err
