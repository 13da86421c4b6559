"""Small top-level torch functions (functional RNN cells, grid_sampler, frobenius_norm,
binomial, autocast dtype getters, Stream/Event, GradScaler) and nn.utils.skip_init/stateless,
against torch."""

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _pair(*shape, seed=0):
    array = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return ember.tensor(array), torch.tensor(array)


def _close(e, t):
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,gates", [("rnn_tanh_cell", 1), ("rnn_relu_cell", 1),
                                        ("gru_cell", 3)])
def test_single_state_cells_match_torch(name, gates):
    (ex, tx), (eh, th) = _pair(4, 3, seed=1), _pair(4, 5, seed=2)
    (ewi, twi), (ewh, twh) = _pair(5 * gates, 3, seed=3), _pair(5 * gates, 5, seed=4)
    (ebi, tbi), (ebh, tbh) = _pair(5 * gates, seed=5), _pair(5 * gates, seed=6)
    _close(getattr(ember, name)(ex, eh, ewi, ewh, ebi, ebh),
           getattr(torch, name)(tx, th, twi, twh, tbi, tbh))
    _close(getattr(ember, name)(ex, eh, ewi, ewh), getattr(torch, name)(tx, th, twi, twh))


def test_lstm_cell_matches_torch():
    (ex, tx), (eh, th), (ec, tc) = _pair(2, 3, seed=1), _pair(2, 4, seed=2), _pair(2, 4, seed=3)
    (ewi, twi), (ewh, twh) = _pair(16, 3, seed=4), _pair(16, 4, seed=5)
    (ebi, tbi), (ebh, tbh) = _pair(16, seed=6), _pair(16, seed=7)
    for e, t in zip(ember.lstm_cell(ex, (eh, ec), ewi, ewh, ebi, ebh),
                    torch.lstm_cell(tx, (th, tc), twi, twh, tbi, tbh)):
        _close(e, t)


@pytest.mark.parametrize("interpolation", [0, 1])  # bicubic: ember has none yet
@pytest.mark.parametrize("padding", [0, 1, 2])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sampler_codes_match_torch(interpolation, padding, align_corners):
    ex, tx = _pair(1, 2, 4, 5, seed=1)
    eg, tg = _pair(1, 3, 3, 2, seed=2)
    _close(ember.grid_sampler(ex, eg, interpolation, padding, align_corners),
           torch.grid_sampler(tx, tg, interpolation, padding, align_corners))
    _close(ember.grid_sampler_2d(ex, eg, interpolation, padding, align_corners),
           torch.grid_sampler_2d(tx, tg, interpolation, padding, align_corners))


def test_frobenius_norm_matches_torch_and_warns():
    ex, tx = _pair(3, 4, 2)
    for dim, keepdim in [((0,), False), ((1, 2), True), ((-1,), False)]:
        with pytest.warns(UserWarning, match="frobenius_norm is deprecated"):
            result = ember.frobenius_norm(ex, dim, keepdim)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _close(result, torch.frobenius_norm(tx, dim, keepdim))


def test_binomial_has_binomial_moments_and_torch_edge_cases():
    ember.manual_seed(0)
    count = ember.full((20000,), 12.0)
    draws = ember.binomial(count, ember.full((20000,), 0.3)).numpy()
    # mean n p = 3.6, variance n p (1 - p) = 2.52; 20000 draws: standard errors ~0.011, ~0.03
    assert abs(draws.mean() - 3.6) < 0.06 and abs(draws.var() - 2.52) < 0.15
    assert ((draws >= 0) & (draws <= 12) & (draws == np.round(draws))).all()
    edges = (torch.tensor([0.0, 7.0, 7.0]), torch.tensor([0.4, 0.0, 1.0]))
    ember_edges = ember.binomial(ember.tensor([0.0, 7.0, 7.0]), ember.tensor([0.4, 0.0, 1.0]))
    _close(ember_edges, torch.binomial(*edges))
    assert str(ember_edges.dtype) == str(torch.binomial(*edges).dtype).replace("torch", "ember")


@pytest.mark.parametrize("name,device_type", [("get_autocast_cpu_dtype", "cpu"),
                                              ("get_autocast_gpu_dtype", "cuda")])
def test_autocast_dtype_getters_match_torch_and_warn(name, device_type):
    with pytest.warns(DeprecationWarning):
        ember_dtype = getattr(ember, name)()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch_dtype = getattr(torch, name)()
    assert str(ember_dtype).split(".")[1] == str(torch_dtype).split(".")[1]
    assert ember_dtype == ember.get_autocast_dtype(device_type)


def test_set_autocast_cpu_dtype_round_trips():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ember.set_autocast_cpu_dtype(ember.float16)
        assert ember.get_autocast_cpu_dtype() == ember.float16
        ember.set_autocast_cpu_dtype(ember.bfloat16)
        assert ember.get_autocast_cpu_dtype() == ember.bfloat16


def test_cpu_stream_and_event_answer_as_torch():
    for module in (torch, ember):
        stream, event = module.Stream(), module.Event(enable_timing=True)
        assert stream.query() and event.query() and stream == module.Stream()
        assert stream.synchronize() is None and event.synchronize() is None
        assert str(stream.device) == "cpu" and str(event.device) == "cpu"
        with pytest.raises(RuntimeError, match="cpu backend doesn't support events"):
            event.record()
        with pytest.raises(RuntimeError, match="cpu backend doesn't support events"):
            stream.record_event()
        with pytest.raises(ValueError, match="enable_timing=True"):
            module.Event().elapsed_time(module.Event())


@pytest.mark.skipif(ember.cuda.is_available(), reason="checks the behaviour without GPU")
def test_cuda_stream_and_event_without_gpu_raise_as_torch():
    for module in (torch, ember):
        with pytest.raises(RuntimeError, match="not linked with support for cuda"):
            module.Stream("cuda")
        with pytest.raises(RuntimeError, match="not linked with support for cuda"):
            module.Event("cuda")


def test_grad_scaler_is_amp_grad_scaler_as_torch():
    assert torch.GradScaler is torch.amp.GradScaler
    assert ember.GradScaler is ember.amp.GradScaler


def test_skip_init_gives_shapes_without_initialising_and_checks_as_torch():
    e = ember.nn.utils.skip_init(ember.nn.Linear, 5, 3, bias=True)
    t = torch.nn.utils.skip_init(torch.nn.Linear, 5, 3, bias=True)
    for (ename, ep), (tname, tp) in zip(e.named_parameters(), t.named_parameters()):
        assert ename == tname and tuple(ep.shape) == tuple(tp.shape)
        assert str(ep.device) == str(tp.device) and ep.requires_grad == tp.requires_grad
    for module in (torch, ember):
        with pytest.raises(RuntimeError, match="Expected a Module"):
            module.nn.utils.skip_init(int)

        class NoDevice(module.nn.Module):
            def __init__(self):
                super().__init__()

        with pytest.raises(RuntimeError, match="must support a 'device' arg"):
            module.nn.utils.skip_init(NoDevice)


def test_stateless_functional_call_warns_and_matches_torch():
    ew, tw = _pair(2, 3)
    ex, tx = _pair(4, 3, seed=1)
    results = []
    for module, weight, x in ((torch, tw, tx), (ember, ew, ex)):
        layer = module.nn.Linear(3, 2, bias=False)
        with pytest.warns(FutureWarning, match="stateless.functional_call` is deprecated"):
            results.append(module.nn.utils.stateless.functional_call(layer, {"weight": weight},
                                                                     (x,)))
    _close(results[1], results[0])
