"""The example programs run a few steps and learn; the digits demo reaches >= 97% accuracy."""

import importlib.util
import os
import sys

import pytest

import ember

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")


def load_example(name):
    """Import ``examples/<name>.py`` (a folder of programs, not a package)."""
    path = os.path.abspath(os.path.join(EXAMPLES, f"{name}.py"))
    spec = importlib.util.spec_from_file_location(f"ember_example_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def _restore_threads():
    """Examples set the BLAS thread count as programs do; give the next test its own back."""
    threads = ember.get_num_threads()
    yield
    ember.set_num_threads(threads)


def _falls(losses, k=5, factor=0.9):
    first, last = sum(losses[:k]) / k, sum(losses[-k:]) / k
    return last < factor * first, (first, last)


def test_mlp_digits(capsys):
    result = load_example("mlp_digits").main(["--steps", "40"])
    falls, values = _falls(result["losses"])
    assert len(result["losses"]) == 40 and falls, values
    assert "test accuracy" in capsys.readouterr().out


def test_cnn_digits(tmp_path, capsys):
    path = str(tmp_path / "cnn.pt")
    result = load_example("cnn_digits").main(["--steps", "60", "--save-model", path])
    falls, values = _falls(result["losses"])
    assert len(result["losses"]) == 60 and falls, values
    assert os.path.exists(path) and f"saved to {path}" in capsys.readouterr().out


def test_vae(tmp_path, capsys):
    result = load_example("vae").main(["--steps", "40", "--out", str(tmp_path)])
    falls, values = _falls(result["losses"])
    assert falls, values
    assert (tmp_path / "recon.png").exists() and (tmp_path / "samples.png").exists()


def test_dcgan_samples_approach_the_data(tmp_path, capsys):
    history = load_example("dcgan").main(["--steps", "40", "--out", str(tmp_path)])
    assert len(history["loss_D"]) == 40
    # the generated images' statistics move towards the real ones
    assert history["gap"][-1] < 0.9 * history["gap"][0], history["gap"]
    assert (tmp_path / "samples.png").exists()


def test_dcgan_on_fake_data(capsys):
    history = load_example("dcgan").main(["--steps", "3", "--fake", "--batch-size", "16"])
    assert len(history["loss_G"]) == 3 and all(v == v for v in history["loss_G"])


def test_char_gpt(capsys):
    result = load_example("char_gpt").main(
        ["--steps", "40", "--eval-interval", "40", "--layers", "1", "--block-size", "32",
         "--sample-chars", "30", "--prompt", "It was"])
    falls, values = _falls(result["losses"], factor=0.85)
    assert falls, values
    assert result["sample"].startswith("It was") and len(result["sample"]) == 36
    assert "--- sample ---" in capsys.readouterr().out


def test_lstm_lm(capsys):
    result = load_example("lstm_lm").main(["--steps", "40", "--epochs", "10"])
    falls, values = _falls(result["losses"])
    assert len(result["losses"]) == 40 and falls, values
    assert result["sample"].startswith("It was") and "perplexity" in capsys.readouterr().out


def test_hogwild_shared_model_improves(capsys):
    result = load_example("hogwild").main(["--processes", "2", "--steps", "30"])
    assert len(result["worker_losses"]) == 2
    assert all(len(losses) == 30 for losses in result["worker_losses"])
    # the parent never received weights: the shared parameters themselves improved
    assert result["accuracy_after"] > result["accuracy_before"] + 0.3, result
    assert result["loss_after"] < 0.8 * result["loss_before"], result


# ---------------------------------------------------------------- on the webgpu device

needs_webgpu = pytest.mark.skipif(not ember.webgpu.is_available(),
                                  reason="webgpu unavailable (no wgpu, or no Vulkan adapter)")

# few steps and small sizes: lavapipe (CI's Vulkan on the CPU) is slow
WEBGPU_RUNS = {
    "mlp_digits": ["--steps", "20"],
    "cnn_digits": ["--steps", "40", "--lr", "1e-2"],
    "vae": ["--steps", "20"],
    "dcgan": ["--steps", "20", "--batch-size", "16"],
    "char_gpt": ["--steps", "20", "--eval-interval", "20", "--layers", "1", "--block-size",
                 "16", "--sample-chars", "5", "--prompt", "It"],
    "lstm_lm": ["--steps", "20", "--epochs", "2", "--bptt", "16", "--hidden", "64",
                "--sample-chars", "10"],
}


@needs_webgpu
@pytest.mark.parametrize("name", list(WEBGPU_RUNS))
def test_example_learns_on_webgpu(name, tmp_path, monkeypatch, capsys):
    """Each example trains with ``--device webgpu`` (a counted CPU fallback is allowed)."""
    monkeypatch.delenv("EMBER_WEBGPU_STRICT", raising=False)
    result = load_example(name).main(WEBGPU_RUNS[name] + ["--device", "webgpu"])
    if name == "dcgan":
        # a GAN's losses need not fall: the generated images' statistics approach the data's
        assert all(v == v for v in result["loss_G"] + result["loss_D"]), result
        assert result["gap"][-1] < result["gap"][0], result["gap"]
        return
    losses = result["losses"]
    assert all(abs(v) < float("inf") for v in losses), losses
    falls, values = _falls(losses)
    assert falls, values
    if "sample" in result:  # the language models sample text after the prompt
        assert result["sample"].startswith("It"), result["sample"]


# ---------------------------------------------------------------- the demo


def test_digits_demo_reaches_97_percent(tmp_path, capsys):
    from ember.examples import digits

    result = digits.main(["--out", str(tmp_path), "--no-progress", "--seed", "0"])
    out = capsys.readouterr().out
    assert result["accuracy"] >= 0.97, result["history"]
    assert f"test accuracy: {result['accuracy']:.4f}" in out
    plot = os.path.join(str(tmp_path), "learning_curve.png")
    assert f"learning curve: {plot}" in out and os.path.getsize(plot) > 1000
    state = ember.load(os.path.join(str(tmp_path), "checkpoint.pt"))
    assert set(state) >= {"model", "optimizer", "scheduler", "epoch", "history"}
    assert state["epoch"] == 12 and len(state["history"]) == 12
    model = digits.DigitsCNN()
    model.load_state_dict(state["model"])
    _, test_loader = digits.make_loaders(32)
    assert digits.evaluate(model, test_loader, "cpu") == result["accuracy"]


def test_digits_demo_resume_continues_the_same_run(tmp_path, capsys):
    from ember.examples import digits

    quiet = {"progress": False, "log": lambda *a: None}
    full = digits.train(epochs=2, out=str(tmp_path / "full"), **quiet)
    digits.train(epochs=2, out=str(tmp_path / "split"), stop_after=1, **quiet)
    resumed = digits.train(epochs=2, out=str(tmp_path / "split"), resume=True, **quiet)
    assert resumed["history"] == full["history"]
    with pytest.raises(SystemExit, match="--epochs 2"):
        digits.train(epochs=3, out=str(tmp_path / "split"), resume=True, **quiet)
    with pytest.raises(SystemExit, match="no checkpoint"):
        digits.train(epochs=2, out=str(tmp_path / "none"), resume=True, **quiet)
