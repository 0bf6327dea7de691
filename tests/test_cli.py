"""The ``kafkalab`` command line: decode frames from hex, files and stdin."""
import subprocess
import sys
from pathlib import Path

from kafkalab.cli import main

GOLDEN = Path(__file__).parent / "golden"


def test_decode_request_from_hex(capsys):
    assert main(["decode", "00 03 00 0c 00 00 00 07 00 01 63 00 00 01 00 00"]) == 0
    out = capsys.readouterr().out
    assert "MetadataRequest v12" in out and "correlation_id" in out and "decoded OK" in out


def test_decode_failure_points_at_the_byte(capsys):
    assert main(["decode", "00 03 00 0c 00 00 00 07 00 05 63"]) == 1  # client_id claims 5 bytes, 1 follows
    out = capsys.readouterr().out
    assert "^" in out and "DECODE ERROR" in out


def test_decode_golden_file_with_records(capsys):
    assert main(["decode", str(GOLDEN / "confluent-kafka-Produce-v9-gzip.bin"), "--records"]) == 0
    out = capsys.readouterr().out
    assert "ProduceRequest v9" in out and "records" in out


def test_decode_response_needs_its_api(capsys):
    # v0-format UNSUPPORTED_VERSION reply to ApiVersions (protocol-compat.md 5.1), with its size prefix
    frame = "00 00 00 10 00 00 00 07 00 23 00 00 00 01 00 12 00 00 00 02"
    assert main(["decode", frame, "--response", "18", "0", "--size-prefix"]) == 0
    assert "error_code" in capsys.readouterr().out


def test_console_script_runs_from_stdin():
    frame = bytes.fromhex("00 03 00 0c 00 00 00 07 00 01 63 00 00 01 00 00".replace(" ", ""))
    out = subprocess.run([sys.executable, "-m", "kafkalab.cli", "decode", "-"], input=frame, capture_output=True,
                         check=True).stdout.decode()
    assert "MetadataRequest v12" in out


def test_broker_started_line_names_the_bound_listener(tmp_path):
    # With INFO hidden the command prints the started line itself; like Kafka's, it names the endpoints the
    # broker listens on (listeners, with the port bound), not the advertised ones.
    import os
    import signal
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    proc = subprocess.Popen([sys.executable, "-m", "kafkalab.cli", "broker", "--log-level", "WARNING",
                             "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
                             "--override", f"advertised.listeners=PLAINTEXT://localhost:{port}",
                             "--override", f"log.dirs={tmp_path / 'kafka-logs'}"],
                            cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        while line and "started" not in line:
            line = proc.stderr.readline()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    assert line.strip() == f"[KafkaServer id=0] started (listeners: PLAINTEXT://127.0.0.1:{port})"


def test_broker_command_exits_1_when_the_broker_halts():
    # Every log dir failed: the broker halts itself (Kafka's Exit.halt(1)) and `kafkalab broker` exits with 1.
    import asyncio

    from kafkalab.cli.broker import _serve

    class HaltingBroker:
        broker_id = 0
        socket_server = type("Sockets", (), {"bound_endpoints": staticmethod(lambda: [])})()
        shut_down = False

        async def startup(self):
            self.halted = asyncio.Event()
            asyncio.get_running_loop().call_later(0.01, self.halted.set)

        async def shutdown(self):
            self.shut_down = True

    broker = HaltingBroker()
    assert asyncio.run(asyncio.wait_for(_serve(broker), 10)) == 1
    assert broker.shut_down        # (a no-op on a halted broker, which is no longer running)


def test_broker_refuses_an_authorizer_class_it_does_not_serve(tmp_path, capsys):
    from kafkalab.cli import main

    assert main(["broker", "--override", "authorizer.class.name=com.example.MyAuthorizer",
                 "--override", f"log.dirs={tmp_path / 'kafka-logs'}"]) == 1
    assert "java.lang.ClassNotFoundException: com.example.MyAuthorizer" in capsys.readouterr().err
