"""kafka-python 3.0 emits ~200 DeprecationWarnings (importlib.resources.read_text) while it is imported; import it
once here, quietly, before the test modules of this room do."""
import warnings

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka.record.default_records  # noqa: F401
