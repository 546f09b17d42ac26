"""The pipeline's SparkSession: defaults, environment checks and master URLs."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

from ampsctl.errors import EnvironmentProblem, ExitCode, UsageError
from ampsctl.pipeline.session import SessionOptions, build_conf, check_master, find_java, local_driver_memory, parse_conf


def test_fixture_session_is_utc_local2_without_ui(spark) -> None:
    conf = spark.sparkContext.getConf()
    assert spark.sparkContext.master == "local[2]"
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    assert conf.get("spark.ui.enabled") == "false"
    assert spark.sparkContext.uiWebUrl is None
    assert int(spark.conf.get("spark.sql.shuffle.partitions")) <= 8
    # A timestamp renders in UTC whatever the machine's zone is.
    row = spark.sql("SELECT CAST(TIMESTAMP_MICROS(0) AS STRING) AS t").first()
    assert row.t == "1970-01-01 00:00:00"


def test_python_workers_run_this_interpreter(spark) -> None:
    # The workers must import ampsctl: they run the interpreter that runs the tests.
    found = spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("sys").executable).collect()
    assert found == [sys.executable]


def test_user_conf_overrides_defaults() -> None:
    conf = build_conf(SessionOptions(master="local[2]", shuffle_partitions=3, conf={"spark.sql.session.timeZone": "Europe/Paris"}))
    assert conf["spark.sql.session.timeZone"] == "Europe/Paris"
    assert conf["spark.sql.shuffle.partitions"] == "3"
    assert conf["spark.driver.memory"] == local_driver_memory()
    assert build_conf(SessionOptions(master="local[2]", conf={"spark.driver.memory": "3g"}))["spark.driver.memory"] == "3g"
    assert "spark.driver.memory" not in build_conf(SessionOptions(master="yarn"))  # a cluster's own settings decide
    assert parse_conf(["a.b=1", "c= x=y"]) == {"a.b": "1", "c": " x=y"}
    with pytest.raises(UsageError):
        parse_conf(["novalue"])


@pytest.mark.parametrize("master", ["local", "local[1]", "local[*]", "local[2,3]", "local-cluster[2, 1, 1024]", "yarn"])
def test_master_forms_accepted(master: str) -> None:
    check_master(master)


@pytest.mark.parametrize("master", ["", "lokal[2]", "local[0]", "spark://nohostport", "http://x:7077", "k8s://"])
def test_bad_master_is_a_usage_error(master: str) -> None:
    with pytest.raises(UsageError) as info:
        check_master(master)
    assert info.value.exit_code == ExitCode.USAGE
    assert "master" in info.value.message


def test_unreachable_master_fails_fast() -> None:
    # A port nobody listens on: bind one, close it, and use its number.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    began = time.monotonic()
    with pytest.raises(EnvironmentProblem) as info:
        check_master(f"spark://127.0.0.1:{port}", timeout=2)
    assert time.monotonic() - began < 30
    assert info.value.exit_code == ExitCode.ENVIRONMENT
    assert f"127.0.0.1:{port}" in info.value.message


def test_find_java_follows_java_home_then_path(tmp_path) -> None:
    with pytest.raises(EnvironmentProblem) as info:
        find_java({"JAVA_HOME": str(tmp_path), "PATH": os.environ.get("PATH", "")})
    assert "JAVA_HOME" in info.value.message and "openjdk-17" in (info.value.hint or "")
    with pytest.raises(EnvironmentProblem):
        find_java({"PATH": str(tmp_path)})
    assert os.path.basename(find_java({"PATH": os.environ["PATH"]})) == "java"


def test_start_without_java_raises_environment_problem(tmp_path) -> None:
    # In a fresh interpreter (the fixture's JVM is already running here): no JAVA_HOME, no java on PATH.
    env = {key: value for key, value in os.environ.items() if key != "JAVA_HOME"}
    env["PATH"] = str(tmp_path)
    code = ("from ampsctl.pipeline.session import start\n"
            "from ampsctl.errors import EnvironmentProblem\n"
            "try:\n    start()\nexcept EnvironmentProblem as exc:\n    print(exc.code, exc.exit_code)\n")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["NO_JAVA", "4"], done.stderr
