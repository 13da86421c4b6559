"""torch.func's model helpers and rearrange against torch.func."""

import numpy as np
import pytest
import torch
import torch.func as tf

import ember
import ember.func as ef

PATTERNS = [
    ("b c (h w) -> b h w c", (2, 3, 4), {"h": 2}),
    ("b c h -> h b c", (2, 3, 4), {}),
    ("b c h -> b (c h)", (2, 3, 4), {}),
    ("b ... -> ... b", (2, 3, 4), {}),
    ("b (c1 c2) h -> c2 b h c1", (2, 6, 1), {"c1": 2}),
    ("b c 1 -> b c", (2, 3, 1), {}),
    ("b c -> b 1 c ()", (2, 3), {}),
    ("... -> (...)", (2, 3, 4), {}),
]


@pytest.mark.parametrize("pattern, shape, sizes", PATTERNS)
def test_rearrange_matches_torch(pattern, shape, sizes):
    data = np.arange(np.prod(shape)).reshape(shape).astype(np.float32)
    ours = ef.rearrange(ember.tensor(data), pattern, **sizes)
    theirs = tf.rearrange(torch.tensor(data), pattern, **sizes)
    assert list(ours.shape) == list(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_rearrange_of_a_list_and_errors():
    ours = ef.rearrange([ember.ones(2, 3)] * 4, "n a b -> a (n b)")
    theirs = tf.rearrange([torch.ones(2, 3)] * 4, "n a b -> a (n b)")
    assert list(ours.shape) == list(theirs.shape)
    for bad in ("a b -> a", "a b c -> a b c", "(a b) -> a b"):
        with pytest.raises(Exception):  # noqa: B017 - torch raises einops' own error type
            tf.rearrange(torch.ones(2, 3), bad)
        with pytest.raises(ValueError):
            ef.rearrange(ember.ones(2, 3), bad)


def test_stack_module_state_matches_torch():
    theirs = [torch.nn.Linear(3, 2) for _ in range(4)]
    ours = [ember.nn.Linear(3, 2) for _ in range(4)]
    for o, t in zip(ours, theirs):
        o.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    p_ours, b_ours = ef.stack_module_state(ours)
    p_theirs, b_theirs = tf.stack_module_state(theirs)
    assert p_ours.keys() == p_theirs.keys() and b_ours.keys() == b_theirs.keys()
    for name in p_ours:
        np.testing.assert_array_equal(p_ours[name].detach().numpy(),
                                      p_theirs[name].detach().numpy())
        assert p_ours[name].is_leaf and p_ours[name].requires_grad
    data = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    out = ef.vmap(lambda p, b, x: ef.functional_call(ours[0], (p, b), (x,)),
                  (0, 0, None))(p_ours, b_ours, ember.tensor(data))
    expected = tf.vmap(lambda p, b, x: tf.functional_call(theirs[0], (p, b), (x,)),
                       (0, 0, None))(p_theirs, b_theirs, torch.tensor(data))
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-5,
                               atol=1e-6)


def test_stack_module_state_errors_match_torch():
    for lib, funcs in ((ember, ef), (torch, tf)):
        with pytest.raises(RuntimeError, match="at least one model"):
            funcs.stack_module_state([])
        models = [lib.nn.Linear(2, 2), lib.nn.Linear(2, 2).eval()]
        with pytest.raises(RuntimeError, match="training/eval mode"):
            funcs.stack_module_state(models)


def test_batch_norm_replacement_functionalize_and_unwrap():
    ours = ef.replace_all_batch_norm_modules_(ember.nn.Sequential(ember.nn.BatchNorm1d(3)))
    theirs = tf.replace_all_batch_norm_modules_(torch.nn.Sequential(torch.nn.BatchNorm1d(3)))
    for o, t in zip(ours.modules(), theirs.modules()):
        if isinstance(t, torch.nn.BatchNorm1d):
            assert o.running_mean is None and t.running_mean is None
            assert o.track_running_stats == t.track_running_stats is False
    assert ef.functionalize(lambda x: x.add_(1))(ember.zeros(2)).tolist() == \
        tf.functionalize(lambda x: x.add_(1))(torch.zeros(2)).tolist()
    with pytest.raises(RuntimeError):
        ef.functionalize(lambda x: x, remove="everything")
    x = ember.ones(1)
    assert ef.debug_unwrap(x) is x
