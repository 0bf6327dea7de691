"""The Fetch handler's per-version rules that need no broker: the magic each version can carry, and the storage
error old consumers do not know."""
from __future__ import annotations

import pytest

from kafkalab.protocol import ErrorCode
from kafkalab.server.apis.fetch_conversion import FetchConversion, down_convert_magic


@pytest.mark.parametrize("version,magic", [(0, 0), (1, 0), (2, 1), (3, 1), (4, None), (17, None)])
def test_down_convert_magic(version, magic):
    assert down_convert_magic(version) == magic


@pytest.mark.parametrize("version,code", [(5, ErrorCode.NOT_LEADER_OR_FOLLOWER), (6, ErrorCode.KAFKA_STORAGE_ERROR)])
def test_storage_error_is_not_leader_before_v6(version, code):
    conversion = FetchConversion(broker=None, request=None, version=version, from_follower=False, fetch_data={})
    assert conversion.error_code(ErrorCode.KAFKA_STORAGE_ERROR) == code
    assert conversion.error_code(ErrorCode.OFFSET_OUT_OF_RANGE) == ErrorCode.OFFSET_OUT_OF_RANGE
