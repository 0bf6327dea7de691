"""ElectionType: the byte values of ElectLeaders v1+, Kafka's refusal of any other, the tool's names."""
import pytest

from kafkalab.protocol.election_type import ElectionType


def test_values_and_refusal():
    assert (ElectionType.of(0), ElectionType.of(1)) == (ElectionType.PREFERRED, ElectionType.UNCLEAN)
    with pytest.raises(ValueError, match=r"^Value 5 must be one of \[PREFERRED, UNCLEAN\]$"):
        ElectionType.of(5)


def test_names_in_any_case():
    assert ElectionType.parse("preferred") is ElectionType.PREFERRED
    assert ElectionType.parse("Unclean") is ElectionType.UNCLEAN
    with pytest.raises(ValueError):
        ElectionType.parse("clean")
