"""Property test: random chains of view operators on random shapes give torch's values, shapes,
strides and storage offsets, and a write through the final view lands in the base as in torch."""

import numpy as np
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember
from conftest import assert_same


def _step(data, e, t):
    """Draw one view op that applies to the current shape; run it on both. Returns the new
    pair, whether the op can make elements alias, and the op's description."""
    shape = tuple(t.shape)
    ndim = len(shape)
    choices = ["unsqueeze", "reshape", "view"]
    if ndim:
        choices += ["transpose", "permute", "narrow", "flatten", "movedim", "unflatten",
                    "split", "unfold", "chunk"]
        if any(s > 0 for s in shape):
            choices.append("select")
        if 1 in shape:
            choices += ["squeeze", "expand"]
    if ndim >= 2:
        choices.append("diagonal")
    name = data.draw(st.sampled_from(choices))
    dim = data.draw(st.integers(-ndim, ndim - 1)) if ndim else 0
    overlap = False
    if name == "unsqueeze":
        d = data.draw(st.integers(-ndim - 1, ndim))
        args = (d,)
    elif name == "transpose":
        args = (dim, data.draw(st.integers(-ndim, ndim - 1)))
    elif name == "permute":
        args = tuple(data.draw(st.permutations(range(ndim))))
    elif name == "narrow":
        size = shape[dim]
        start = data.draw(st.integers(-size, size)) if size else 0
        real = start + size if start < 0 else start
        args = (dim, start, data.draw(st.integers(0, size - real)))
    elif name == "select":
        dim = data.draw(st.sampled_from([i for i, s in enumerate(shape) if s > 0]))
        args = (dim, data.draw(st.integers(-shape[dim], shape[dim] - 1)))
    elif name == "flatten":
        a, b = sorted((dim % ndim, data.draw(st.integers(0, ndim - 1))))
        args = (a, b)
    elif name == "movedim":
        args = (dim, data.draw(st.integers(-ndim, ndim - 1)))
    elif name == "unflatten":
        size = shape[dim]
        factor = data.draw(st.sampled_from([f for f in range(1, 5) if f and size % f == 0]
                                           or [1]))
        args = (dim, (factor, -1) if size else (0, 3))
    elif name == "squeeze":
        ones = [i for i, s in enumerate(shape) if s == 1]
        args = (tuple(data.draw(st.lists(st.sampled_from(ones), min_size=1, max_size=2,
                                         unique=True))),)
    elif name == "expand":
        args = tuple(data.draw(st.integers(1, 3)) if s == 1 else -1 for s in shape)
        overlap = any(a > 1 for a in args)
    elif name == "diagonal":
        d1, d2 = data.draw(st.permutations(range(ndim)))[:2]
        args = (data.draw(st.integers(-3, 3)), d1, d2)
    elif name == "split":
        piece = data.draw(st.integers(1, 3))
        count = max(-(-shape[dim] // piece), 1)
        which = data.draw(st.integers(0, count - 1))
        e, t = e.split(piece, dim)[which], t.split(piece, dim)[which]
        return e, t, False, f"split({piece}, {dim})[{which}]"
    elif name == "chunk":
        chunks = data.draw(st.integers(1, 3))
        pieces = t.chunk(chunks, dim)
        which = data.draw(st.integers(0, len(pieces) - 1))
        return e.chunk(chunks, dim)[which], pieces[which], False, f"chunk({chunks})[{which}]"
    elif name == "unfold":
        size = data.draw(st.integers(0, shape[dim]))
        step = data.draw(st.integers(1, 3))
        args = (dim, size, step)
        overlap = step < size
    else:  # reshape / view to a random factorisation of numel
        numel = int(np.prod(shape))
        new = [numel] if numel else [0]
        if numel and data.draw(st.booleans()):
            f = data.draw(st.sampled_from([f for f in range(1, numel + 1) if numel % f == 0]))
            new = [f, -1]
        if data.draw(st.booleans()):
            new.insert(data.draw(st.integers(0, len(new))), 1)
        args = tuple(new)
    try:
        t_new = getattr(t, name)(*args)
    except (RuntimeError, IndexError) as error:
        try:
            getattr(e, name)(*args)
        except type(error):
            return None, None, False, name
        raise AssertionError(f"torch raised {error!r} for {name}{args}, ember did not") \
            from error
    return getattr(e, name)(*args), t_new, overlap, f"{name}{args}"


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shape=st.lists(st.integers(0, 4), min_size=0, max_size=4), data=st.data())
def test_random_view_chains_match_torch(shape, data):
    numel = int(np.prod(shape))
    e_base = ember.arange(numel, dtype=ember.float64).reshape(shape).clone()
    t_base = torch.arange(numel, dtype=torch.float64).reshape(shape).clone()
    e, t = e_base, t_base
    overlap = False
    history = []
    for _ in range(data.draw(st.integers(1, 5))):
        e_next, t_next, aliases, step = _step(data, e, t)
        history.append(step)
        if e_next is None:
            break
        e, t = e_next, t_next
        overlap = overlap or aliases
        assert_same(e, t)
        assert tuple(e.stride()) == tuple(t.stride()), history
        assert e.storage_offset() == t.storage_offset(), history
        assert e.is_contiguous() == t.is_contiguous(), history
    shares = t.untyped_storage().data_ptr() == t_base.untyped_storage().data_ptr()
    assert (e.untyped_storage().data_ptr() == e_base.untyped_storage().data_ptr()) == shares, \
        history
    if not shares or overlap or t.numel() == 0:
        return
    fresh = -1.0 - np.arange(t.numel(), dtype=np.float64).reshape(tuple(t.shape))
    e.copy_(ember.tensor(fresh))
    t.copy_(torch.tensor(fresh))
    assert_same(e_base, t_base)
    assert e._version == e_base._version
