"""ember.quasirandom.SobolEngine against torch.quasirandom.SobolEngine: the direction numbers,
the points (unscrambled and scrambled with a seed, bit for bit), the engine's state through
draw/fast_forward/reset, and its errors."""

import numpy as np
import pytest
import torch

import ember
from ember.quasirandom import SobolEngine


def _same_points(e, t):
    assert e.dtype.name == str(t.dtype).removeprefix("torch.")
    assert e.shape == tuple(t.shape)
    np.testing.assert_array_equal(e.numpy(), t.numpy())


@pytest.mark.parametrize("dimension", [1, 2, 7, 300])
def test_direction_numbers_are_torchs(dimension):
    np.testing.assert_array_equal(SobolEngine(dimension).sobolstate.numpy(),
                                  torch.quasirandom.SobolEngine(dimension).sobolstate.numpy())


def test_last_dimensions_are_torchs():
    # the rows with the longest polynomials, at the end of Joe and Kuo's table
    e, t = SobolEngine(21201), torch.quasirandom.SobolEngine(21201)
    np.testing.assert_array_equal(e.sobolstate.numpy()[-50:], t.sobolstate.numpy()[-50:])
    _same_points(e.draw(3), t.draw(3))


@pytest.mark.parametrize("scramble,seed", [(False, None), (True, 0), (True, 12345)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_draws_equal_torch(scramble, seed, dtype):
    e = SobolEngine(5, scramble=scramble, seed=seed)
    t = torch.quasirandom.SobolEngine(5, scramble=scramble, seed=seed)
    e_dtype, t_dtype = getattr(ember, dtype), getattr(torch, dtype)
    _same_points(e.draw(1, dtype=e_dtype), t.draw(1, dtype=t_dtype))   # the first point alone
    _same_points(e.draw(15, dtype=e_dtype), t.draw(15, dtype=t_dtype))
    _same_points(e.draw_base2(4, dtype=e_dtype), t.draw_base2(4, dtype=t_dtype))
    _same_points(e.draw(100, dtype=e_dtype), t.draw(100, dtype=t_dtype))
    assert e.num_generated == t.num_generated
    np.testing.assert_array_equal(e.quasi.numpy(), t.quasi.numpy())


def test_scrambled_state_equals_torch_for_a_seed():
    e = SobolEngine(9, scramble=True, seed=3)
    t = torch.quasirandom.SobolEngine(9, scramble=True, seed=3)
    np.testing.assert_array_equal(e.sobolstate.numpy(), t.sobolstate.numpy())
    np.testing.assert_array_equal(e.shift.numpy(), t.shift.numpy())


def test_unseeded_scramble_uses_the_global_generator():
    ember.manual_seed(11)
    torch.manual_seed(11)
    _same_points(SobolEngine(3, scramble=True).draw(8), torch.quasirandom.SobolEngine(
        3, scramble=True).draw(8))


@pytest.mark.parametrize("skip", [0, 1, 5, 8])
def test_fast_forward_reset_and_out(skip):
    e, t = SobolEngine(4), torch.quasirandom.SobolEngine(4)
    e.fast_forward(skip)
    t.fast_forward(skip)
    _same_points(e.draw(6), t.draw(6))
    e.fast_forward(3)
    t.fast_forward(3)
    _same_points(e.draw(2), t.draw(2))
    e_out, t_out = ember.zeros(1), torch.zeros(1)
    assert e.reset().draw(5, out=e_out) is e_out
    t.reset().draw(5, out=t_out)
    _same_points(e_out, t_out)


def test_continuing_draws_equal_one_long_draw():
    engine, long = SobolEngine(3), SobolEngine(3).draw(10)
    pieces = ember.cat([engine.draw(1), engine.draw(4), engine.draw(5)])
    np.testing.assert_array_equal(pieces.numpy(), long.numpy())


def test_points_are_balanced():
    # the closed-form property of a Sobol sequence: any 2**m first points put exactly one
    # point in each of the 2**m intervals [k/2**m, (k+1)/2**m) in every dimension
    points = SobolEngine(6, scramble=True, seed=1).draw_base2(5).numpy()
    cells = np.floor(points * 32).astype(int)
    for column in cells.T:
        assert sorted(column) == list(range(32))


def test_errors_match_torch():
    for dimension in (0, 21202):
        with pytest.raises(ValueError) as expected:
            torch.quasirandom.SobolEngine(dimension)
        with pytest.raises(ValueError, match=r"\[1, 21201\]") as got:
            SobolEngine(dimension)
        assert str(got.value) == str(expected.value)
    e, t = SobolEngine(2), torch.quasirandom.SobolEngine(2)
    e.draw(3)
    t.draw(3)
    with pytest.raises(ValueError) as expected:
        t.draw_base2(2)
    with pytest.raises(ValueError) as got:
        e.draw_base2(2)
    assert str(got.value) == str(expected.value)
    with pytest.raises(RuntimeError) as expected:
        t.draw(2, dtype=torch.float16)
    with pytest.raises(RuntimeError) as got:
        e.draw(2, dtype=ember.float16)
    assert str(got.value) == str(expected.value)


def test_repr_matches_torch():
    for kwargs in ({}, {"scramble": True}, {"scramble": True, "seed": 4}):
        assert repr(SobolEngine(3, **kwargs)) == repr(torch.quasirandom.SobolEngine(3, **kwargs))


def test_docstring_examples_run():
    import doctest

    import ember.quasirandom

    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(
        optionflags=doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(ember.quasirandom, globs={"ember": ember}):
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
