"""Starting and stopping the SparkSession the pipeline runs on.

Theory of operation:

* ``SessionOptions`` says what to start: the master (``local[*]`` by default, any cluster
  URL), extra ``key=value`` confs, the shuffle partitions and the app name. ``start`` checks
  the environment *before* starting a JVM, because the errors Spark gives later are long Java
  stack traces or, worse, retries that look like a hang:
  - pyspark not importable -> EnvironmentProblem (exit 4) with the pip command;
  - no Java (``$JAVA_HOME/bin/java`` when JAVA_HOME is set, else ``java`` on PATH, which is
    exactly what Spark's launcher looks at) -> EnvironmentProblem with the apt/JAVA_HOME hint;
  - a master that is not one of Spark's URL forms -> UsageError (exit 2);
  - a ``spark://`` or ``k8s://`` master whose host:port does not accept a TCP connection
    within a few seconds -> EnvironmentProblem. Without this probe Spark's standalone client
    retries registration for about a minute and then gives up without raising in the driver.
* Every session runs in UTC (``spark.sql.session.timeZone``): journal timestamps are UTC
  microseconds and must not shift with the machine's zone. The web UI and Spark's own console
  progress bar are off (the CLI draws its own progress, and a UI port would collide between
  parallel test runs).
* On a local master the Python workers run the interpreter running ampsctl
  (``PYSPARK_PYTHON`` unless already set, and ``spark.pyspark.python``), so they can import
  ampsctl; on a cluster the user's own confs and environment decide.
* ``session()`` is a context manager that stops the session it started, and only that one.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ampsctl.errors import AmpsctlError, EnvironmentProblem, UsageError

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
PROBE_TIMEOUT = 5.0  # seconds to wait for a cluster master's TCP port

PYSPARK_HINT = "install the Spark extra: pip install 'ampsctl[spark]' (PySpark 4, pandas, pyarrow)"
JAVA_HINT = ("Spark needs Java 17: install it (apt-get install openjdk-17-jre-headless) "
             "or set JAVA_HOME to a Java 17 installation")

# Spark's own master URL forms (SparkContext.createTaskScheduler); anything else fails there
# with a bare "Could not parse Master URL", so it is checked here first.
_LOCAL = re.compile(r"local(\[(\*|[1-9][0-9]*)(,\s*[0-9]+)?\])?$")
_LOCAL_CLUSTER = re.compile(r"local-cluster\[[0-9]+,\s*[0-9]+,\s*[0-9]+\]$")
_MASTER_FORMS = "local, local[N], local[*], local[N,F], local-cluster[N,C,M], spark://HOST:PORT, yarn, k8s://HOST:PORT"


@dataclass(frozen=True, slots=True)
class SessionOptions:
    """What session to start. ``conf`` is applied last, so it overrides every default."""

    master: str = DEFAULT_MASTER
    conf: Mapping[str, str] = field(default_factory=dict)
    shuffle_partitions: int | None = None  # None: Spark's default (200), or what conf says
    app_name: str = "ampsctl"
    log_level: str = "FATAL"  # the JVM's log4j level: failed tasks are reported by ampsctl, not as Java stack traces


def parse_conf(items: Sequence[str] | None) -> dict[str, str]:
    """``["k=v", ...]`` (repeated ``--conf``) as a dict; a malformed item is a UsageError."""
    conf: dict[str, str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--conf {item!r} is not KEY=VALUE", hint="for example --conf spark.executor.memory=4g")
        conf[key.strip()] = value
    return conf


# Memory sizes Spark hands on as they are: spark.driver.memory becomes the driver JVM's -Xmx (a
# bad one kills the JVM before it says a word, and the user sees Java's own lines); the others
# are Spark byte strings, checked later with a JVM stack trace.
_JAVA_SIZE = re.compile(r"[1-9][0-9]*[kmgt]", re.IGNORECASE)
_BYTE_SIZE = re.compile(r"[0-9]+([kmgtp]b?|b)?", re.IGNORECASE)
_SIZES = {"spark.driver.memory": _JAVA_SIZE, "spark.executor.memory": _JAVA_SIZE,
          "spark.driver.memoryOverhead": _BYTE_SIZE, "spark.executor.memoryOverhead": _BYTE_SIZE,
          "spark.executor.pyspark.memory": _BYTE_SIZE, "spark.driver.maxResultSize": _BYTE_SIZE,
          "spark.memory.offHeap.size": _BYTE_SIZE}


def check_conf(conf: Mapping[str, str]) -> None:
    """UsageError for a conf Spark would fail on with Java's output: a memory size it cannot
    read, or ``spark.master`` (which would bypass the --master checks)."""
    for key, value in conf.items():
        if key == "spark.master":
            raise UsageError("--conf spark.master is not used: give the master with --master",
                             hint="for example --master local[4] or --master spark://HOST:7077")
        form = _SIZES.get(key)
        if form is not None and not form.fullmatch(value.strip()):
            example = "4g or 4096m" if form is _JAVA_SIZE else "512m, 4g or 0 (where 0 means no limit)"
            raise UsageError(f"--conf {key}={value!r} is not a memory size", code="BAD_CONF",
                             hint=f"a positive whole number with a unit k, m, g or t, e.g. {key}={example.split(' ')[0]} "
                                  f"({example})")


def check_pyspark() -> None:
    """Raise EnvironmentProblem when pyspark (or the pandas/pyarrow it needs here) is missing."""
    for module in ("pyspark", "pandas", "pyarrow"):
        try:
            __import__(module)
        except ImportError as exc:
            raise EnvironmentProblem(f"the Spark engine needs {module}, which is not installed ({exc})",
                                     code="NO_PYSPARK", hint=PYSPARK_HINT) from None


def find_java(environ: Mapping[str, str] | None = None) -> str:
    """The java Spark's launcher would run, or EnvironmentProblem."""
    env = os.environ if environ is None else environ
    home = env.get("JAVA_HOME")
    if home:
        java = os.path.join(home, "bin", "java")
        if os.path.isfile(java) and os.access(java, os.X_OK):
            return java
        raise EnvironmentProblem(f"JAVA_HOME is {home}, but {java} is not an executable Java",
                                 code="NO_JAVA", hint=JAVA_HINT)
    java = shutil.which("java", path=env.get("PATH"))
    if java is None:
        raise EnvironmentProblem("Java was not found: JAVA_HOME is not set and there is no java on PATH",
                                 code="NO_JAVA", hint=JAVA_HINT)
    return java


def check_master(master: str, *, timeout: float = PROBE_TIMEOUT) -> None:
    """UsageError for a master Spark cannot parse; EnvironmentProblem when a cluster master is unreachable."""
    text = master.strip()
    if _LOCAL.match(text) or _LOCAL_CLUSTER.match(text) or text == "yarn":
        return
    if text.startswith("spark://"):
        # A standalone HA master lists several host:port pairs: one reachable is enough.
        hosts = [part.strip() for part in text[len("spark://"):].split(",")]
        addresses = [_host_port(master, part, None) for part in hosts]
        _probe(master, addresses, timeout)
        return
    if text.startswith("k8s://"):
        url = text[len("k8s://"):]
        parts = urlsplit(url if "://" in url else "https://" + url)
        if not parts.hostname:
            raise UsageError(f"--master {master!r} names no Kubernetes API server", hint=f"Spark masters: {_MASTER_FORMS}")
        _probe(master, [(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))], timeout)
        return
    raise UsageError(f"--master {master!r} is not a Spark master URL", code="BAD_MASTER",
                     hint=f"Spark masters: {_MASTER_FORMS}")


def _host_port(master: str, part: str, default: int | None) -> tuple[str, int]:
    host, sep, port = part.rpartition(":")
    if not sep or not host or not port.isdigit():
        if default is None:
            raise UsageError(f"--master {master!r}: {part!r} is not HOST:PORT", code="BAD_MASTER",
                             hint="a standalone master is spark://HOST:PORT (usually port 7077)")
        return part, default
    return host.strip("[]"), int(port)


def _probe(master: str, addresses: list[tuple[str, int]], timeout: float) -> None:
    problems = []
    for host, port in addresses:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                return
        except OSError as exc:
            problems.append(f"{host}:{port}: {exc.strerror or exc}")
    raise EnvironmentProblem(f"the Spark master {master} cannot be reached ({'; '.join(problems)})",
                             code="MASTER_UNREACHABLE",
                             hint="check the --master URL and that the cluster is up, or drop --master to run on local[*]")


def build_conf(options: SessionOptions) -> dict[str, str]:
    """Every conf the session starts with: ampsctl's defaults, then ``options.conf``."""
    conf = {
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # Python Data Source reads and applyInPandas hand Arrow batches to Python: keep them
        # moderate so one 64 MiB segment does not become one huge batch in a worker.
        "spark.sql.execution.arrow.maxRecordsPerBatch": "10000",
    }
    # Quiet JVM logging from the first line on (setLogLevel only acts once the JVM is up).
    settings = Path(__file__).resolve().parent.parent / "data" / "log4j2-ampsctl.properties"
    conf["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile={settings.as_uri()}"
    if options.shuffle_partitions is not None:
        conf["spark.sql.shuffle.partitions"] = str(options.shuffle_partitions)
    if options.master.startswith("local"):
        conf["spark.pyspark.python"] = sys.executable
        conf["spark.pyspark.driver.python"] = sys.executable
        # The driver JVM is the whole cluster here and gathers the compacted records that go
        # into a SOW file: Spark's 1 GiB default fails on a few million keys.
        conf["spark.driver.memory"] = local_driver_memory()
    conf.update(options.conf)
    return conf


def local_driver_memory() -> str:
    """A local master's driver heap: a quarter of this machine's memory, 1 to 16 GiB."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # no sysconf (not POSIX): Spark's own default
        return "1g"
    return f"{min(max(total // 4 >> 30, 1), 16)}g"


def start(options: SessionOptions | None = None) -> SparkSession:
    """A new (or the process's existing) SparkSession, after checking the environment."""
    options = options or SessionOptions()
    check_master(options.master)  # usage errors first: they need neither pyspark nor Java
    check_conf(options.conf)
    check_pyspark()
    find_java()
    from pyspark.sql import SparkSession

    if options.master.startswith("local"):
        # PySpark's driver picks the worker interpreter from PYSPARK_PYTHON (default
        # "python3" on PATH, which may lack ampsctl); the conf alone is not enough.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.master(options.master).appName(options.app_name)
    for key, value in build_conf(options).items():
        builder = builder.config(key, value)
    existing = SparkSession.getActiveSession()
    try:
        spark = builder.getOrCreate()
    except Exception as exc:  # pyspark raises PySparkRuntimeError, Py4JError or a Java exception here
        # Java was found above: a JVM that exits at once is its settings' fault (Java printed why)
        raise EnvironmentProblem(f"Spark could not start on {options.master}: {_first_line(exc)}",
                                 code="SPARK_START", hint="check --master and --conf (Java's own message, if any, is above); "
                                 "rerun with --traceback for Spark's") from exc
    try:
        spark.sparkContext.setLogLevel(options.log_level)
        register_sources(spark)  # the first use of the SQL session state: a bad spark.sql.* conf fails here
    except Exception as exc:
        if existing is None:  # not a session someone else is using
            spark.stop()
        raise _conf_error(exc, options.master) from exc
    return spark


def _conf_error(exc: Exception, master: str) -> AmpsctlError:
    """The error for a session whose SQL state cannot be built (``spark.sql.shuffle.partitions=abc``)."""
    text = _root_cause(exc)
    found = re.search(r"\[INVALID_CONF_VALUE[^\]]*\] (.*?)(?: SQLSTATE: \w+)?$", text, re.MULTILINE)
    if found is not None:
        return UsageError(f"Spark refused a --conf value: {found[1]}", code="BAD_CONF",
                          hint="fix or drop that --conf")
    return EnvironmentProblem(f"Spark could not start on {master}: {text.splitlines()[0][:300] if text else type(exc).__name__}",
                              code="SPARK_START", hint="check --master and --conf; rerun with --traceback for Spark's own message")


def _root_cause(exc: BaseException) -> str:
    """The message of the innermost Java cause of a PySpark exception (its own text names only the outermost)."""
    origin = getattr(exc, "_origin", None)  # the Java Throwable behind a pyspark CapturedException
    try:
        while origin is not None and origin.getCause() is not None:
            origin = origin.getCause()
        message = origin.getMessage() if origin is not None else None
    except Exception:  # the gateway is gone: use the Python text
        message = None
    return (message or str(exc)).strip()


def register_sources(spark: SparkSession) -> None:
    """Register ampsctl's Python data sources (``ampsctl-journal``, ``ampsctl-sow``) with ``spark``."""
    from ampsctl.pipeline import journal_source, sow_source

    journal_source.register(spark)
    sow_source.register(spark)


def stop(spark: SparkSession) -> None:
    """Stop ``spark`` and its JVM-side context."""
    spark.stop()


@contextmanager
def session(options: SessionOptions | None = None) -> Iterator[SparkSession]:
    """``start`` then, on leaving, ``stop``."""
    spark = start(options)
    try:
        yield spark
    finally:
        stop(spark)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]


def describe(spark: SparkSession) -> dict[str, Any]:
    """The facts a run summary reports about its session."""
    context = spark.sparkContext
    return {"master": context.master, "spark_version": spark.version,
            "default_parallelism": context.defaultParallelism}
