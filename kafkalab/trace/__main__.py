"""``python -m kafkalab.trace CLIENT [ACTION] [--first]``: capture a real client and print what it sent.

CLIENT is kcat, confluent-kafka, kafka-python or aiokafka; ACTION is metadata (default) or produce; --first
answers nothing (:func:`~kafkalab.trace.first_request_only`) and shows the very first request only.
"""
import argparse

from kafkalab.trace import CLIENTS, capture, first_request_only

ap = argparse.ArgumentParser(prog="python -m kafkalab.trace", description=__doc__.splitlines()[0])
ap.add_argument("client", choices=CLIENTS)
ap.add_argument("action", nargs="?", default="metadata", choices=("metadata", "produce"))
ap.add_argument("--first", action="store_true", help="record the first request only, answer nothing")
args = ap.parse_args()
result = capture(args.client, args.action, reply=first_request_only if args.first else None)
print(f"{args.client} {result.client_version}: {len(result)} request(s), {len(result.connections)} "
      f"connection(s), client {result.ended}")
for r in result:
    print(" ", r.summary())
