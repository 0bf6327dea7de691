"""kafkalab.coordinator -- the broker's coordinators: the (classic) group coordinator and the transaction
coordinator.

The coordinators are sans-IO: they take requests as plain arguments, keep state, and report decisions through
callbacks. The broker (``kafkalab.server``) owns the I/O: it feeds them requests, appends the records they
produce to ``__consumer_offsets`` / ``__transaction_state`` and reads those topics back for them. This room imports
the protocol, the record format and the clocks, never the network or the server (the transaction coordinator's
marker sender is handed its connections).
"""
