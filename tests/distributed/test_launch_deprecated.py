"""``python -m ember.distributed.launch`` (the deprecated launcher) against
``python -m torch.distributed.launch``: the ranks' arguments and environment, and the warning."""

import os
import subprocess
import sys
import textwrap

from _harness import SRC, free_port

ROOT = os.path.dirname(SRC)


def ranks_view(package, script, *flags):
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    result = subprocess.run([sys.executable, "-m", f"{package}.distributed.launch",
                             "--nproc-per-node=2", f"--master-port={free_port()}", *flags,
                             str(script), "x"], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return sorted(result.stdout.split()), result.stderr


def test_launch_passes_local_rank_as_torch(tmp_path):
    script = tmp_path / "show.py"
    script.write_text(textwrap.dedent("""
        import os, sys
        os.write(1, (os.environ["LOCAL_RANK"] + ":" + ",".join(sys.argv[1:]) + "\\n").encode())
    """))
    for flags in ((), ("--use-env",)):
        ours, our_err = ranks_view("ember", script, *flags)
        theirs, their_err = ranks_view("torch", script, *flags)
        assert ours == theirs
        assert "FutureWarning: The module torch.distributed.launch is deprecated" in our_err
        assert "FutureWarning: The module torch.distributed.launch is deprecated" in their_err
    assert ours == ["0:x", "1:x"]  # --use-env: LOCAL_RANK only


def test_launch_no_python_requires_use_env():
    import pytest

    from ember.distributed.launch import launch, parse_args

    with pytest.raises(ValueError, match="must also set the '--use-env' flag"):
        launch(parse_args(["--nproc-per-node=1", "--no-python", "true"]))
