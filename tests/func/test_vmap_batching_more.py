"""vmap's batching rules for convolutions, pooling, normalization, embedding, einsum, advanced
indexing and linalg (``ember/func/_batching_rules.py``): each case runs ember's vmap, checks it
took the batched path (``_vmap.last_call``), and compares with ``torch.func.vmap`` on the
same inputs; ``vmap(grad(f))`` cases batch the backward primitives too."""

import numpy as np
import pytest
import torch

import ember
from conftest import assert_same
from ember.func import _vmap

LIBS = ((ember, ember.func), (torch, torch.func))


def _data(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


def _compare(fn, in_dims, arrays, expect_path="batched", grad=False, **tol):
    """``vmap(fn)`` (or ``vmap(grad(fn))`` of its sum) on ember and torch, same inputs."""
    results = []
    for lib, func in LIBS:
        def element(*args, lib=lib):
            return fn(lib, *args)
        if grad:
            argnums = tuple(i for i, a in enumerate(arrays) if a.dtype.kind == "f")
            mapped = func.grad(lambda *args, e=element: e(*args).sum(), argnums=argnums)
        else:
            mapped = element
        results.append(func.vmap(mapped, in_dims=in_dims)(*[lib.tensor(a) for a in arrays]))
        if lib is ember:
            assert _vmap.last_call.path == expect_path, _vmap.last_call.reason
    assert_same(results[0], results[1], **tol)
    return results


def _f(lib):
    return lib.nn.functional


# ---------------------------------------------------------------- rules vs torch, and grads

B = 3
IDX = np.array([[2, 0, 1], [1, 1, 3], [0, 3, 3]])            # one row per batch element

CASES = {
    # convolutions: unbatched weight (folded into the samples), batched weight (into groups)
    "conv1d weight unbatched": (lambda lib, x, w: _f(lib).conv1d(x, w, padding=1),
                                (0, None), [(B, 2, 3, 8), (4, 3, 3)]),
    "conv2d weight batched": (lambda lib, x, w: _f(lib).conv2d(x, w, stride=2, padding=1),
                              (0, 0), [(B, 2, 3, 7, 7), (B, 4, 3, 3, 3)]),
    "conv2d groups, both batched": (lambda lib, x, w: _f(lib).conv2d(x, w, groups=3),
                                    (0, 0), [(B, 2, 3, 6, 6), (B, 6, 1, 3, 3)]),
    "conv2d input unbatched": (lambda lib, x, w: _f(lib).conv2d(x, w, dilation=2),
                               (None, 0), [(2, 3, 7, 7), (B, 4, 3, 2, 2)]),
    "conv2d no sample dim": (lambda lib, x, w: _f(lib).conv2d(x, w, padding="same"),
                             (0, None), [(B, 3, 6, 6), (2, 3, 3, 3)]),
    "conv2d 8 channels stride 1": (lambda lib, x, w: _f(lib).conv2d(x, w, padding=1),
                                   (0, 0), [(B, 2, 8, 5, 5), (B, 8, 8, 3, 3)]),
    "conv_transpose2d": (lambda lib, x, w: _f(lib).conv_transpose2d(x, w, stride=2,
                                                                    output_padding=1),
                         (0, None), [(B, 2, 3, 4, 4), (3, 2, 3, 3)]),
    "conv_transpose1d weight batched": (lambda lib, x, w: _f(lib).conv_transpose1d(
        x, w, stride=2, groups=2), (0, 0), [(B, 2, 4, 5), (B, 4, 3, 3)]),
    # pooling
    "max_pool2d": (lambda lib, x: _f(lib).max_pool2d(x, 3, stride=2, padding=1),
                   (0,), [(B, 2, 3, 7, 7)]),
    "max_pool1d indices": (lambda lib, x: _f(lib).max_pool1d(x, 2, return_indices=True)[1]
                           .double() + _f(lib).max_pool1d(x, 2), (1,), [(3, B, 7)]),
    "avg_pool2d": (lambda lib, x: _f(lib).avg_pool2d(x, 3, stride=2, padding=1,
                                                     count_include_pad=False),
                   (0,), [(B, 2, 7, 6)]),
    "adaptive pools": (lambda lib, x: _f(lib).adaptive_max_pool2d(x, (3, 2))
                       + _f(lib).adaptive_avg_pool2d(x, (3, 2)), (0,), [(B, 2, 3, 7, 5)]),
    # normalization
    "batch_norm training=False": (lambda lib, x, m, v: _f(lib).batch_norm(
        x, m, v.abs() + 0.5, v, m, training=False), (0, None, 0), [(B, 4, 3, 5), (3,), (B, 3)]),
    "layer_norm affine": (lambda lib, x, w, b: _f(lib).layer_norm(x, (2, 5), w, b),
                          (0, None, None), [(B, 4, 2, 5), (2, 5), (2, 5)]),
    "layer_norm batched weight": (lambda lib, x, w, b: _f(lib).layer_norm(x, (5,), w, b),
                                  (None, 0, 0), [(4, 5), (B, 5), (B, 5)]),
    "layer_norm plain": (lambda lib, x: _f(lib).layer_norm(x, (5,)), (0,), [(B, 4, 5)]),
    "group_norm": (lambda lib, x, w: _f(lib).group_norm(x, 2, w, w), (0, None),
                   [(B, 2, 4, 5), (4,)]),
    # lookups, einsum, indexing
    "embedding batched indices": (lambda lib, w, i: _f(lib).embedding(i, w), (None, 0),
                                  [(5, 3), "idx"]),
    "embedding batched weight": (lambda lib, w, i: _f(lib).embedding(i[0], w), (0, None),
                                 [(B, 5, 3), "idx"]),
    "embedding both batched": (lambda lib, w, i: _f(lib).embedding(i, w), (0, 0),
                               [(B, 5, 3), "idx"]),
    "einsum matmul": (lambda lib, x, y: lib.einsum("ij,jk->ik", x, y), (0, None),
                      [(B, 2, 4), (4, 3)]),
    "einsum both batched, trace": (lambda lib, x, y: lib.einsum("ij,jk->ik", x, y)
                                   + lib.einsum("ii", y[:, :4]), (0, 0),
                                   [(B, 2, 4), (B, 4, 4)]),
    "einsum ellipsis": (lambda lib, x, y: lib.einsum("...ij,...j->...i", x, y), (1, 0),
                        [(2, B, 3, 4), (B, 4)]),
    "index leading": (lambda lib, x, i: x[i], (0, None), [(B, 4, 5), "idx"]),
    "index after a slice": (lambda lib, x, i: x[:, i[:2], 1:], (0, 0), [(B, 4, 5, 3), "idx"]),
    "index apart": (lambda lib, x, i: x[i, :, i.flip(0)], (0, 0), [(B, 4, 2, 4), "idx"]),
    "index batched only": (lambda lib, x, i: x[1:, i], (None, 0), [(4, 4), "idx"]),
    "index_select batched index": (lambda lib, x, i: x.index_select(1, i), (0, 0),
                                   [(B, 2, 4), "idx"]),
    "where masked_fill": (lambda lib, x, y: lib.where(y > 0, x, y).masked_fill(x < -0.5, 2.0),
                          (0, None), [(B, 3, 4), (4,)]),
    # linalg
    "inv": (lambda lib, a: lib.linalg.inv(a) * 2, (0,), [(B, 3, 3)]),
    "det slogdet": (lambda lib, a: lib.linalg.det(a) + lib.linalg.slogdet(a)[1], (0,),
                    [(B, 3, 3)]),
    "solve vector": (lambda lib, a, b: lib.linalg.solve(a, b), (0, 0), [(B, 3, 3), (B, 3)]),
    "solve matrix, a unbatched": (lambda lib, a, b: lib.linalg.solve(a, b), (None, 0),
                                  [(3, 3), (B, 3, 2)]),
    "cholesky": (lambda lib, a: lib.linalg.cholesky(a @ a.mT + lib.eye(3, dtype=a.dtype)),
                 (0,), [(B, 3, 3)]),
    "eigh values, projector": (lambda lib, a: _eigh_parts(lib, a + a.mT), (0,), [(B, 3, 3)]),
    "svd values, projector": (lambda lib, a: _svd_parts(lib, a), (0,), [(B, 4, 3)]),
}


def _eigh_parts(lib, a):
    """Eigenvalues and a sign-free use of the eigenvectors (|v|, as LAPACK's signs are
    arbitrary)."""
    values, vectors = lib.linalg.eigh(a)
    return values.sum() + (vectors.abs() * values).sum(0)


def _svd_parts(lib, a):
    u, s, vh = lib.linalg.svd(a, full_matrices=False)
    return s + (u.abs().sum(0) * s) + (vh ** 2).sum(-1)


def _arrays(shapes):
    return [IDX.copy() if s == "idx" else a for s, a in
            zip(shapes, _data(*[(1,) if s == "idx" else s for s in shapes]))]


@pytest.mark.parametrize("case", sorted(CASES))
def test_forward_rules_vs_torch(case):
    fn, in_dims, shapes = CASES[case]
    _compare(fn, in_dims, _arrays(shapes))


# torch refuses gradients of the running statistics.
GRAD_CASES = sorted(set(CASES) - {"max_pool1d indices", "index_select batched index",
                                  "batch_norm training=False"})


@pytest.mark.parametrize("case", GRAD_CASES)
def test_grad_rules_vs_torch(case):
    """vmap(grad(sum of f)) with respect to every floating argument: the backward primitives
    batch too."""
    fn, in_dims, shapes = CASES[case]
    _compare(fn, in_dims, _arrays(shapes), grad=True)


def test_batch_norm_grad_and_det_grad():
    """batch_norm's input and weight gradients batch, and so does det's (its backward's
    linalg_inv_h runs on every matrix at once); results vs torch's."""
    def norm(lib, x, w, m):
        return lib.nn.functional.batch_norm(x, m.detach(), m.detach().abs() + 0.5, w, w,
                                            training=False)
    _compare(norm, (0, None, 0), _data((B, 4, 3, 5), (3,), (B, 3)), grad=True)
    _compare(lambda lib, a: lib.linalg.det(a), (0,), _data((B, 3, 3)), grad=True)


# ---------------------------------------------------------------- per-sample CNN gradients


def _cnn_pair():
    ember.manual_seed(0)
    e_nn, t_nn = ember.nn, torch.nn

    def build(nn):
        return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(8, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(2),
                             nn.Flatten(), nn.LayerNorm(32), nn.Linear(32, 5)).double()
    e_model, t_model = build(e_nn), build(t_nn)
    t_model.load_state_dict({k: torch.from_numpy(v.numpy().copy())
                             for k, v in e_model.state_dict().items()})
    return e_model, t_model


def test_per_sample_gradients_of_a_cnn_are_batched():
    """torch.func's per-sample-gradient pattern on a small CNN takes the batched path; its
    gradients are torch's and the forced loop's."""
    e_model, t_model = _cnn_pair()
    (x,) = _data((6, 3, 8, 8), seed=1)
    labels = np.random.default_rng(2).integers(0, 5, size=6)
    grads = []
    for (lib, func), model in zip(LIBS, (e_model, t_model)):
        params = {k: v.detach() for k, v in model.named_parameters()}

        def sample_loss(params, sample, target, model=model, lib=lib, func=func):
            out = func.functional_call(model, params, (sample.unsqueeze(0),))
            return lib.nn.functional.cross_entropy(out, target.unsqueeze(0))

        compute = func.vmap(func.grad(sample_loss), in_dims=(None, 0, 0))
        grads.append(compute(params, lib.tensor(x), lib.tensor(labels)))
        if lib is ember:
            assert _vmap.last_call.path == "batched", _vmap.last_call.reason
            _vmap.last_call.enabled = False
            try:
                looped = compute(params, lib.tensor(x), lib.tensor(labels))
            finally:
                _vmap.last_call.enabled = True
    assert sorted(grads[0]) == sorted(grads[1])
    for name in grads[1]:
        assert_same(grads[0][name], grads[1][name])
        assert_same(looped[name], grads[1][name])


def test_batch_norm_module_in_eval_mode():
    """A BatchNorm2d module in eval mode, called through functional_call with its
    (detached) parameters and buffers, torch.func's pattern."""
    (x,) = _data((B, 2, 3, 4, 4))
    results = []
    for (lib, func), model in zip(LIBS, (ember.nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3))):
        model.double().eval()
        model.running_mean.fill_(0.3)
        model.running_var.fill_(2.0)
        state = {k: v.detach() for k, v in model.state_dict().items()}
        state["weight"] = lib.linspace(0.5, 2.0, 3, dtype=lib.float64)
        call = func.vmap(lambda u, state=state, model=model, func=func:
                         func.functional_call(model, state, (u,)))
        results.append(call(lib.tensor(x)))
        if lib is ember:
            assert _vmap.last_call.path == "batched", _vmap.last_call.reason
    assert_same(*results)


# ---------------------------------------------------------------- what still loops


def test_dropout_still_loops():
    """Random draws are the loop's (randomness modes); torch's numbers differ by generator,
    so the reference is dropout's closed form: each value is 0 or x / (1 - p)."""
    (x,) = _data((4, 50))
    out = ember.vmap(lambda u: ember.nn.functional.dropout(u, 0.5),
                     randomness="different")(ember.tensor(x))
    assert _vmap.last_call.path == "loop"
    kept = out.numpy() != 0
    np.testing.assert_allclose(out.numpy()[kept], 2 * x[kept])
    assert not (kept.all(1) | ~kept.any(1)).any()


def test_eigh_backward_branch_is_guarded():
    """eigh's backward skips the eigenvector term when its gradient is zero: a batch where
    only element 0's is zero falls back to the loop, with torch's results."""
    (a,) = _data((B, 3, 3))
    scale = np.array([0.0, 1.0, 2.0])

    def fn(lib, m, s):
        values, vectors = lib.linalg.eigh(m + m.mT)
        return values.sum() + s * (vectors[:, 0] * vectors[:, 1]).sum()
    e, _ = _compare(fn, (0, 0), [a, scale], expect_path="loop", grad=True)
    assert "differs" in _vmap.last_call.reason


def test_batched_index_out_of_range_raises_the_elements_error():
    x = ember.tensor(_data((B, 4))[0])
    index = ember.tensor([[0], [1], [9]])
    with pytest.raises(IndexError) as batched_error:
        ember.vmap(lambda u, i: u.index_select(0, i))(x, index)
    with pytest.raises(IndexError) as eager_error:
        x[2].index_select(0, index[2])
    assert str(batched_error.value) == str(eager_error.value)


def test_singular_element_raises_torchs_batched_error():
    a = np.stack([np.eye(3)] * B)
    a[1] = 0.0
    errors = []
    for lib, func in LIBS:
        with pytest.raises(Exception) as error:
            func.vmap(lib.linalg.inv)(lib.tensor(a))
        errors.append(error.value)
    assert type(errors[0]).__name__ == "LinAlgError"
    assert str(errors[0]) == str(errors[1])


@pytest.mark.parametrize("shapes", [[(B, 5, 0), (0, 4)], [(B, 0, 2), (2, 4)]],
                         ids=["empty inner dim", "no rows"])
def test_matmul_of_empty_matrices_with_one_side_batched(shapes):
    """The one-GEMM path (left side batched, right side one matrix) on empty operands."""
    _compare(lambda lib, x, w: lib.matmul(x, w), (0, None), _data(*shapes))


# ---------------------------------------------------------------- ops that used to loop

POSITIVE = "positive"     # an input drawn in (0.5, 2): rates, concentrations, probabilities


def _cross(lib, a, b):
    return lib.linalg.cross(a, b, dim=-1) + lib.cross(a.mT, b.mT, dim=0).mT


def _searchsorted_both(lib, seq, values):
    return lib.searchsorted(seq.sort(-1).values, values, right=True)


def _lu_parts(lib, a):
    lu, pivots = lib.linalg.lu_factor(a)
    p, l, u = lib.lu_unpack(lu, pivots)
    return lu.sum(-1) + p.sum(0) @ l + u.sum(-2)


SHAPE_CASES = {
    "roll two dims": (lambda lib, x: lib.roll(x, (1, -2), (0, 1)), (0,), [(B, 4, 5)]),
    "roll flattened": (lambda lib, x: lib.roll(x, 3), (1,), [(4, B, 5)]),
    "repeat adds dims": (lambda lib, x: x.repeat(2, 1, 3), (0,), [(B, 4, 2)]),
    "tile": (lambda lib, x: lib.tile(x, (2,)), (0,), [(B, 2, 3)]),
    "repeat_interleave": (lambda lib, x: x.repeat_interleave(2, dim=1), (0,), [(B, 3, 2)]),
    "repeat_interleave sizes": (lambda lib, x: lib.repeat_interleave(
        x, lib.tensor([1, 0, 3]), dim=0), (0,), [(B, 3, 2)]),
    "unfold": (lambda lib, x: x.unfold(1, 3, 2), (0,), [(B, 4, 7)]),
    "as_strided": (lambda lib, x: x.as_strided((2, 3), (1, 2), 1), (0,), [(B, 12)]),
    "as_strided of a view": (lambda lib, x: x[1:].as_strided((3, 2), (2, 1)), (0,), [(B, 10)]),
    "view dtype": (lambda lib, x: x.view(lib.int32).double(), (0,), [(B, 3, 2)]),
    "pad constant": (lambda lib, x: _f(lib).pad(x, (1, 2, 0, 1), value=0.5), (0,),
                     [(B, 3, 4)]),
    "pad reflect": (lambda lib, x: _f(lib).pad(x, (2, 1), mode="reflect"), (0,), [(B, 2, 5)]),
    "pad circular 2d": (lambda lib, x: _f(lib).pad(x, (1, 1, 2, 0), mode="circular"), (0,),
                        [(B, 2, 3, 4)]),
    "pad replicate": (lambda lib, x: _f(lib).pad(x, (2, 2), mode="replicate"), (0,),
                      [(B, 2, 3)]),
    "cross, one side unbatched": (_cross, (0, None), [(B, 4, 3), (4, 3)]),
    "view_as_real and back": (lambda lib, x: lib.view_as_complex(
        lib.view_as_real(lib.complex(x, x.flip(-1))) * 2), (0,), [(B, 3, 2)]),
    "frexp": (lambda lib, x: lib.frexp(x)[0] * lib.frexp(x)[1], (0,), [(B, 5)]),
    "isin": (lambda lib, x, t: lib.isin(x.round(), t.round()).double(), (0, None),
             [(B, 6), (4,)]),
    "quantile": (lambda lib, x, q: lib.quantile(x, q, dim=1, keepdim=True), (0, None),
                 [(B, 3, 5), "quantiles"]),
    "nanquantile scalar": (lambda lib, x: lib.nanquantile(x, 0.3, dim=0), (1,), [(4, B, 3)]),
    "searchsorted shared sequence": (lambda lib, s, v: lib.searchsorted(s.sort().values, v),
                                     (None, 0), [(6,), (B, 2, 3)]),
    "searchsorted batched sequence": (_searchsorted_both, (0, 0), [(B, 6), (B, 2, 3)]),
    "searchsorted batched rows": (_searchsorted_both, (0, None), [(B, 2, 6), (2, 3)]),
    "nuclear norm": (lambda lib, x: lib.linalg.matrix_norm(x, "nuc"), (0,), [(B, 3, 4)]),
    "pinv": (lambda lib, a: lib.linalg.pinv(a), (0,), [(B, 3, 4)]),
    "lstsq": (lambda lib, a, b: lib.linalg.lstsq(a, b).solution, (0, None),
              [(B, 4, 3), (4, 2)]),
    "lstsq gelsd": (lambda lib, a, b: lib.linalg.lstsq(a, b, driver="gelsd")[3], (0, 0),
                    [(B, 4, 3), (B, 4, 2)]),
    "lu_factor, lu_unpack": (_lu_parts, (0,), [(B, 3, 3)]),
    "matrix_exp": (lambda lib, a: lib.linalg.matrix_exp(a), (0,), [(B, 3, 3)]),
    "eigvals": (lambda lib, a: lib.linalg.eigvals(a @ a.mT).real.sort().values, (0,),
                [(B, 3, 3)]),
    "fft": (lambda lib, x: lib.fft.fft(x, dim=0).abs() + lib.fft.rfft2(x).abs().sum(),
            (1,), [(4, B, 6)]),
    "irfft": (lambda lib, x: lib.fft.irfft(lib.fft.rfft(x), n=6), (0,), [(B, 2, 6)]),
    "scatter_reduce": (lambda lib, x, i: x.scatter_reduce(0, i, x[:3] * 2, "amax"),
                       (0, 0), [(B, 4), "idx"]),
    "gammainc": (lambda lib, a, x: lib.special.gammainc(a, x), (0, None),
                 [POSITIVE, (5,)]),
}


def _more_arrays(shapes):
    rng = np.random.default_rng(3)
    out = []
    for s in shapes:
        if s == "quantiles":
            out.append(np.array([0.1, 0.5, 0.75]))
        elif s == POSITIVE:
            out.append(rng.uniform(0.5, 2.0, size=(B, 5)))
        elif s == "idx":
            out.append(IDX.copy() % 4)
        else:
            out.append(rng.standard_normal(s))
    return out


@pytest.mark.parametrize("case", sorted(SHAPE_CASES))
def test_rules_of_ops_that_used_to_loop(case):
    fn, in_dims, shapes = SHAPE_CASES[case]
    _compare(fn, in_dims, _more_arrays(shapes))


GRAD_MORE = sorted(set(SHAPE_CASES) - {"view dtype", "frexp", "isin", "searchsorted shared sequence",
                                       "searchsorted batched sequence", "searchsorted batched rows",
                                       "lu_factor, lu_unpack", "eigvals", "lstsq gelsd",
                                       "view_as_real and back", "repeat_interleave sizes",
                                       "gammainc", "quantile", "nanquantile scalar"})


@pytest.mark.parametrize("case", GRAD_MORE)
def test_grads_of_ops_that_used_to_loop(case):
    """vmap(grad(sum of f)): the backward primitives of these ops (roll back, the pad and
    repeat adjoints, strided scatters...) batch too."""
    fn, in_dims, shapes = SHAPE_CASES[case]
    _compare(fn, in_dims, _more_arrays(shapes), grad=True)


def test_quantile_grad_loops_unless_the_elements_agree():
    """quantile's backward reads the sorted positions from the values themselves: vmap's
    replay guards them and loops when the elements differ (results vs torch either way)."""
    for case in ("quantile", "nanquantile scalar"):
        fn, in_dims, shapes = SHAPE_CASES[case]
        _compare(fn, in_dims, _more_arrays(shapes), grad=True, expect_path="loop")
        assert "differs" in _vmap.last_call.reason
    (x,) = _more_arrays([(4, 3)])
    _compare(lambda lib, u: lib.quantile(u, 0.4, dim=0), (0,), [np.stack([x] * B)], grad=True)


def test_median_of_all_elements_batches_with_nans():
    """The median of all elements, and its gradient, which goes to the NaN elements where
    the median is NaN: chosen per batch element."""
    x = np.array([[1.0, np.nan, 3.0, 0.0], [4.0, 2.0, 3.0, 1.0], [np.nan, np.nan, 1.0, 2.0]])
    _compare(lambda lib, u: lib.stack([lib.median(u), lib.nanmedian(u)]), (0,), [x])
    _compare(lambda lib, u: lib.median(u) + lib.nanmedian(u), (0,), [x], grad=True)
    _compare(lambda lib, u: lib.median(u), (1,), [np.array([[3, 1], [1, 7], [2, 2]])])


def test_as_strided_offset_counts_from_each_element():
    """torch's rule: an element's storage offset counts from that element's own start, not
    the batch's (each element reads its own values)."""
    x = np.arange(3 * 12, dtype=np.float64).reshape(3, 12)
    results = _compare(lambda lib, u: u.as_strided((2, 2), (1, 2), 3), (0,), [x])
    np.testing.assert_array_equal(results[0][2].numpy(), x[2, 3:7].reshape(2, 2).T)


def test_as_strided_outside_the_element_raises_torchs_error():
    """Within vmap a view may reach only its own element's memory (torch's check)."""
    x = np.arange(12 * 2, dtype=np.float64).reshape(12, 2)
    errors = []
    for lib, func in LIBS:
        with pytest.raises(RuntimeError) as error:   # elements (2,) with stride 1, 2 apart
            func.vmap(lambda u: u.as_strided((2, 2), (1, 2), 1), in_dims=1)(lib.tensor(x).t())
        errors.append(str(error.value))
    assert errors[0] == errors[1]


NN_CASES = {
    "batch_norm training": (lambda lib, x, w: _f(lib).batch_norm(x, None, None, w, w * 0.5,
                                                                 training=True),
                            (0, None), [(B, 4, 3, 5), (3,)]),
    "batch_norm training, batched weight": (
        lambda lib, x, w: _f(lib).batch_norm(x, None, None, w, None, training=True), (0, 0),
        [(B, 4, 3), (B, 3)]),
    "unfold (im2col)": (lambda lib, x: _f(lib).unfold(x, (2, 3), padding=1, stride=2), (0,),
                        [(B, 2, 3, 5, 6)]),
    "fold (col2im)": (lambda lib, x: _f(lib).fold(x, (4, 5), (2, 2)), (1,), [(2, B, 8, 12)]),
    "binary_cross_entropy": (lambda lib, x, t: _f(lib).binary_cross_entropy(
        x.sigmoid(), t.sigmoid(), reduction="none"), (0, None), [(B, 4, 3), (4, 3)]),
}


@pytest.mark.parametrize("case", sorted(NN_CASES))
@pytest.mark.parametrize("grad", [False, True], ids=["forward", "grad"])
def test_nn_rules_of_ops_that_used_to_loop(case, grad):
    fn, in_dims, shapes = NN_CASES[case]
    _compare(fn, in_dims, _more_arrays(shapes), grad=grad)


@pytest.mark.parametrize("kind,path", [("RNN", "batched"), ("GRU", "loop")])
def test_recurrent_layers_under_vmap(kind, path):
    """An Elman RNN's steps (``h @ W^T + b`` folded over the batch's rows, tanh) batch; the
    GRU's fused cell declines (its workspace), so vmap loops with that reason. torch's vmap
    has no rule for its RNN kernels: its per-element results are the reference."""
    ember.manual_seed(0)
    e_rnn = getattr(ember.nn, kind)(3, 4, batch_first=True).double()
    t_rnn = getattr(torch.nn, kind)(3, 4, batch_first=True).double()
    t_rnn.load_state_dict({k: torch.from_numpy(v.numpy().copy())
                           for k, v in e_rnn.state_dict().items()})
    (x,) = _more_arrays([(B, 2, 5, 3)])
    with ember.no_grad():
        out = ember.func.vmap(lambda u: e_rnn(u)[0])(ember.tensor(x))
    assert _vmap.last_call.path == path, _vmap.last_call.reason
    if path == "loop":
        assert "workspace" in _vmap.last_call.reason
    with torch.no_grad():
        expected = torch.stack([t_rnn(u)[0] for u in torch.tensor(x)])
    assert_same(out, expected)
