"""torch.distributed.run's Python API in ember (LaunchConfig, elastic_launch, the elastic
error report, logs specs, argument helpers), checked against torch's helpers and by running
real workers."""

import argparse
import os
import sys

import pytest
import torch.distributed.run as theirs

import ember.distributed.run as ours
from ember.distributed.elastic.multiprocessing import DefaultLogsSpecs, Std
from ember.distributed.elastic.multiprocessing.errors import ChildFailedError, ProcessFailure
from ember.distributed.launcher import LaunchConfig, elastic_launch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _tasks_surface  # noqa: E402  (workers must be importable by the spawned processes)


def _config(tmp_path, **options):
    settings = {"min_nodes": 1, "max_nodes": 1, "nproc_per_node": 2, "rdzv_backend": "c10d",
                "rdzv_endpoint": "localhost:0", "max_restarts": 0, "monitor_interval": 0.05,
                "logs_specs": DefaultLogsSpecs(log_dir=str(tmp_path))}
    return LaunchConfig(**{**settings, **options})


def test_elastic_launch_runs_function_workers(tmp_path):
    results = elastic_launch(_config(tmp_path), _tasks_surface.launched_worker)(10)
    assert results == {0: (0, 2, 0), 1: (10, 2, 1)}


def test_failure_report_names_the_rank_and_the_exception(tmp_path):
    with pytest.raises(ChildFailedError) as caught:
        elastic_launch(_config(tmp_path), _tasks_surface.failing_worker)()
    rank, failure = caught.value.get_first_failure()
    assert rank == 1 and failure.exitcode == 1 and failure.local_rank == 1
    assert "ValueError: worker one has no data" in failure.message
    assert "failing_worker FAILED" in str(caught.value)


def test_max_restarts_restarts_the_group(tmp_path):
    results = elastic_launch(_config(tmp_path, max_restarts=1),
                             _tasks_surface.fails_first_attempt)()
    assert results == {0: 1, 1: 1}
    with pytest.raises(ChildFailedError):
        elastic_launch(_config(tmp_path, run_id="again"), _tasks_surface.fails_first_attempt)()


def test_redirected_and_teed_logs(tmp_path, capfd):
    specs = DefaultLogsSpecs(log_dir=str(tmp_path), redirects=Std.from_str("0:1"),
                             tee=Std.from_str("1:1"))
    config = _config(tmp_path, logs_specs=specs, run_id="logs")
    elastic_launch(config, _tasks_surface.launched_worker)(1)
    folder = tmp_path / "logs" / "attempt_0"
    assert (folder / "0" / "stdout.log").read_text() == "hello from 0\n"
    assert (folder / "1" / "stdout.log").read_text() == "hello from 1\n"
    shown = capfd.readouterr().out
    assert "[default_role1]:hello from 1" in shown and "hello from 0" not in shown


def test_program_workers_through_the_command_line(tmp_path):
    script = tmp_path / "show.py"
    script.write_text("import os\nprint(os.environ['RANK'], os.environ['LOCAL_WORLD_SIZE'])\n")
    code = ours.main(["--standalone", "--nproc-per-node=2", f"--log-dir={tmp_path}",
                      "--redirects=1", str(script)])
    assert code == 0
    # --standalone gives the run a fresh id, as torch's: one folder under the log dir
    (run_folder,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    outputs = sorted((run_folder / "attempt_0" / str(r) / "stdout.log").read_text()
                     for r in range(2))
    assert outputs == ["0 2\n", "1 2\n"]


def test_helpers_match_torch(monkeypatch):
    for nnodes in ("2", "1:4"):
        assert ours.parse_min_max_nnodes(nnodes) == theirs.parse_min_max_nnodes(nnodes)
    for module in (ours, theirs):
        with pytest.raises(RuntimeError, match="MIN:MAX"):
            module.parse_min_max_nnodes("1:2:3")
        with pytest.raises(ValueError, match="Unsupported nproc_per_node value: many"):
            module.determine_local_world_size("many")
    assert ours.determine_local_world_size("3") == theirs.determine_local_world_size("3")
    assert ours.determine_local_world_size("cpu") == theirs.determine_local_world_size("cpu")
    args = ["--nnodes=2", "--node-rank=1", "--master-addr=10.0.0.1", "--master-port=1234",
            "--nproc-per-node=2", "-m", "pkg.train", "--lr", "0.1"]
    mine, expected = ours.parse_args(args), theirs.parse_args(args)
    assert ours.get_rdzv_endpoint(mine) == theirs.get_rdzv_endpoint(expected) == "10.0.0.1:1234"
    assert ours.get_use_env(mine) is theirs.get_use_env(expected) is True
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    config, cmd, cmd_args = ours.config_from_args(mine)
    torch_config, torch_cmd, torch_cmd_args = theirs.config_from_args(expected)
    assert (cmd, cmd_args) == (torch_cmd, torch_cmd_args)
    for field in ("min_nodes", "max_nodes", "nproc_per_node", "rdzv_endpoint", "rdzv_backend",
                  "rdzv_configs", "max_restarts", "role", "start_method"):
        assert getattr(config, field) == getattr(torch_config, field), field
    assert ours.REMAINDER == theirs.REMAINDER == argparse.REMAINDER


def test_environment_actions_match_torch(monkeypatch):
    monkeypatch.setenv("PET_NPROC_PER_NODE", "4")
    monkeypatch.setenv("PET_STANDALONE", "1")
    for module in (ours, theirs):
        parsed = module.parse_args(["train.py"])
        assert (parsed.nproc_per_node, parsed.standalone) == ("4", True)
    assert list(ours.Std.__members__) == list(theirs.Std.__members__)
    assert [m.name for m in ours.Std] == [m.name for m in theirs.Std]
    assert ours.Std.from_str("0:1,1:2") == {0: ours.Std.OUT, 1: ours.Std.ERR}
    assert ours.macros.substitute(["--rank=${local_rank}"], "2") == \
        theirs.macros.substitute(["--rank=${local_rank}"], "2") == ["--rank=2"]


def test_failure_report_layout_matches_torch():
    from torch.distributed.elastic.multiprocessing.errors import (
        ChildFailedError as TorchChildFailedError,
    )
    from torch.distributed.elastic.multiprocessing.errors import (
        ProcessFailure as TorchProcessFailure,
    )

    def without_time(text):
        return [line for line in text.splitlines() if "time" not in line]

    mine = ChildFailedError("train.py", {1: ProcessFailure(1, 123, 3, "")})
    expected = TorchChildFailedError("train.py", {1: TorchProcessFailure(1, 123, 3, "")})
    assert without_time(mine.format_msg()) == without_time(expected.format_msg())


def test_run_script_path_runs_in_this_interpreter(tmp_path, monkeypatch):
    script = tmp_path / "script.py"
    out = tmp_path / "out.txt"
    script.write_text(f"import sys\nopen({str(out)!r}, 'w').write(' '.join(sys.argv[1:]))\n")
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    ours.run_script_path(str(script), "a", "b")
    assert out.read_text() == "a b"
