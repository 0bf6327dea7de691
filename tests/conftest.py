"""Session-wide settings for the whole suite.

Hypothesis is imported here, first, on purpose. CPython 3.11.0-3.11.7 can raise
``SystemError: AST constructor recursion depth mismatch`` from ``ast.parse``/``compile`` once the interpreter's
recursion bookkeeping has been disturbed (gh-106905, fixed in 3.11.8). Hypothesis parses source code while it is
imported and when it describes strategies; importing it at the start of the session, before any test has run,
keeps that parsing away from the disturbed state (a run of only ``tests/replication`` or ``tests/scenarios``
otherwise imported it late and failed at random).
"""
import hypothesis  # noqa: F401
