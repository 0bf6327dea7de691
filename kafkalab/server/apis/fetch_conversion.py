"""What the Fetch handler does to each partition's answer for an older fetch version: down-conversion, zstd, errors.

Theory of operation
-------------------
The log stores RecordBatch v2 only. Fetch v0-1 can carry only magic 0 and v2-3 only magic 0-1, so for those
versions every partition's records go through :class:`~kafkalab.records.conversion.LazyDownConversionRecords`
(KIP-283; Kafka converts for them unconditionally since the message format follows
``inter.broker.protocol.version`` >= 3.0) -- unless the topic says ``message.downconversion.enable=false``: then a
consumer (never a follower) gets UNSUPPORTED_VERSION for that partition. A topic whose ``compression.type`` is
zstd cannot be read before Fetch v10 (UNSUPPORTED_COMPRESSION_TYPE), nor can a zstd batch be down-converted
(the same error, or an overflow message once part of the answer has been sent). Before v6 a storage error is
reported as NOT_LEADER_OR_FOLLOWER, the code those clients know.

Converted records are counted in ``FetchMessageConversionsPerSec`` (per topic and for all), and the request
carries the time and memory the conversions took (``MessageConversionsTimeMs``, ``TemporaryMemoryBytes``).
kafkalab converts when the response is built rather than while it is written; the bytes are the same.

Mirrors: ``KafkaApis.handleFetchRequest``'s ``maybeConvertFetchedData``, ``maybeDownConvertStorageError`` and
``updateRecordConversionStats``.
"""
from __future__ import annotations

from kafkalab.protocol import ErrorCode, response_class, ApiKey
from kafkalab.records.conversion import LazyDownConversionRecords, RecordValidationStats, UnsupportedCompressionTypeError
from kafkalab.server.broker_topic_stats import FETCH_MESSAGE_CONVERSIONS

__all__ = ["FetchConversion", "down_convert_magic"]

PartitionData = response_class(ApiKey.FETCH).PartitionData


def down_convert_magic(version: int):
    """The magic a Fetch of ``version`` can carry when it is below 2, else None (no conversion)."""
    if version <= 1:
        return 0
    if version <= 3:
        return 1
    return None


def _error_part(partition: int, code: int):
    return PartitionData(partition_index=partition, error_code=code, high_watermark=-1, last_stable_offset=-1,
                         log_start_offset=-1, records=b"")


class FetchConversion:
    """One Fetch request's conversions: :meth:`error_code` and :meth:`convert` per partition, :meth:`finish` once."""

    def __init__(self, broker, request, version: int, from_follower: bool, fetch_data: dict):
        self.broker = broker
        self.request = request
        self.version = version
        self.from_follower = from_follower
        self.fetch_data = fetch_data
        self.magic = down_convert_magic(version)
        self.stats: dict = {}

    def error_code(self, code: int) -> int:
        """Kafka's ``maybeDownConvertStorageError``."""
        if code == ErrorCode.KAFKA_STORAGE_ERROR and self.version <= 5:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return code

    def _config(self, tp):
        partition = self.broker.replica_manager.partitions.get(tp)
        log = partition.log if partition is not None else None
        return log.config if log is not None else None

    def convert(self, tp, part, read=None):
        """``part`` as this version must see it; ``read`` is the storage read (FetchDataInfo) behind it."""
        config = self._config(tp)
        if config is None:
            return part
        if config.compression_type == "zstd" and self.version < 10:
            return _error_part(tp[1], ErrorCode.UNSUPPORTED_COMPRESSION_TYPE)
        if self.magic is None:
            return part
        if not self.from_follower and not config.message_downconversion_enable:
            return _error_part(tp[1], ErrorCode.UNSUPPORTED_VERSION)
        records = read.records if read is not None and read.slices else b""
        info = self.fetch_data.get(tp)
        first_offset = info.fetch_offset if info is not None else 0
        try:
            lazy = LazyDownConversionRecords(tp, records, self.magic, first_offset)
        except UnsupportedCompressionTypeError:
            return _error_part(tp[1], ErrorCode.UNSUPPORTED_COMPRESSION_TYPE)
        data, stats = lazy.to_bytes()
        self.stats[tp] = self.stats.get(tp, RecordValidationStats()).add(stats)
        return part._replace(records=data)

    def finish(self) -> None:
        """Count what was converted (``KafkaApis.updateRecordConversionStats``)."""
        for (topic, _), stats in self.stats.items():
            if stats.num_records_converted > 0:
                self.broker.broker_topic_stats.mark(FETCH_MESSAGE_CONVERSIONS, topic, stats.num_records_converted)
            self.request.message_conversions_time_ns += stats.conversion_time_nanos
            self.request.temporary_memory_bytes += stats.temporary_memory_bytes
        self.stats.clear()
