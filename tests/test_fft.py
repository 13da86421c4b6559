"""ember.fft (and ember.stft/istft) against torch.fft: values, dtypes, shapes, errors, gradients."""

import doctest
import warnings

import numpy as np
import pytest
import torch

import ember
from conftest import assert_grads_match, assert_same, make_pair, to_torch

DTYPES = ["float32", "float64", "complex64", "complex128"]
NORMS = [None, "backward", "ortho", "forward"]
ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
N_D = ["fft2", "ifft2", "fftn", "ifftn", "rfft2", "irfft2", "rfftn", "irfftn", "hfft2",
       "ihfft2", "hfftn", "ihfftn"]


def _data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def _tol(dtype):
    """Tolerances for a result of ``dtype`` (a name, or a torch dtype)."""
    single = ("float32", "complex64", torch.float32, torch.complex64)
    return (1e-5, 1e-5) if dtype in single else (1e-10, 1e-10)


def _compare(fname, array, kwargs, ember_mod=ember.fft, torch_mod=torch.fft):
    """Run ``fname`` on both libraries: same values/dtype/shape, or the same exception type."""
    e, t = make_pair(array)
    try:
        expected = getattr(torch_mod, fname)(t, **kwargs)
    except Exception as err:  # torch refuses: ember must refuse with the same type
        with pytest.raises(type(err)):
            getattr(ember_mod, fname)(e, **kwargs)
        return None
    actual = getattr(ember_mod, fname)(e, **kwargs)
    rtol, atol = _tol(expected.dtype)
    assert_same(actual, expected.resolve_conj(), rtol=rtol, atol=atol)
    return actual


# ---------------------------------------------------------------- values


ONE_D_CASES = [((7,), {}), ((8,), {"n": 5}), ((7,), {"n": 12}), ((4, 6), {"dim": 0}),
               ((4, 6), {"n": 9, "dim": -2}), ((3, 5, 4), {"dim": 1, "n": 4}),
               ((2, 3, 4, 5), {"dim": -1})]


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fname", ONE_D)
@pytest.mark.parametrize("case", range(len(ONE_D_CASES)))
def test_one_dimensional(fname, dtype, norm, case):
    shape, kwargs = ONE_D_CASES[case]
    _compare(fname, _data(shape, dtype, case), dict(kwargs, norm=norm))


N_D_CASES = [((4, 6), {}), ((5, 7), {"s": (3, 10)}), ((3, 4, 5), {"dim": (0, 2)}),
             ((3, 4, 5), {"s": (6, -1), "dim": (2, 0)}), ((2, 3, 4, 5), {"dim": (-3, -1)}),
             ((2, 3, 4, 5), {"s": (2, 4, 7)}), ((3, 5), {"dim": 0}), ((4, 3), {"s": (5,)})]


@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fname", N_D)
@pytest.mark.parametrize("case", range(len(N_D_CASES)))
def test_multi_dimensional(fname, dtype, norm, case):
    shape, kwargs = N_D_CASES[case]
    if fname.endswith("2") and "dim" in kwargs and len(np.atleast_1d(kwargs["dim"])) != 2:
        kwargs = {k: v for k, v in kwargs.items() if k != "dim"}
    if fname.endswith("2") and "s" in kwargs and len(kwargs["s"]) != 2:
        kwargs = {k: v for k, v in kwargs.items() if k != "s"}
    _compare(fname, _data(shape, dtype, case), dict(kwargs, norm=norm))


REAL_ONLY = ("rfft", "rfft2", "rfftn", "ihfft", "ihfft2", "ihfftn")


@pytest.mark.parametrize("fname", ONE_D + N_D)
def test_non_contiguous_input(fname):
    a = _data((6, 5, 4), "float64" if fname in REAL_ONLY else "complex128")
    e, t = make_pair(a)
    e, t = e.transpose(0, 2)[:, ::2], t.transpose(0, 2)[:, ::2]
    assert_same(getattr(ember.fft, fname)(e), getattr(torch.fft, fname)(t).resolve_conj())


@pytest.mark.parametrize("fname", ["fft", "ifft", "rfft", "ihfft", "fftn", "rfftn", "hfft",
                                   "irfft"])
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
def test_integer_input_promoted_to_default_float(fname, dtype):
    a = (np.arange(12) % 3).reshape(3, 4).astype(dtype)
    _compare(fname, a, {})
    ember.set_default_dtype(ember.float64)
    torch.set_default_dtype(torch.float64)
    try:
        _compare(fname, a, {})
    finally:
        ember.set_default_dtype(ember.float32)
        torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize("fname", ["fft", "rfft", "irfft", "fftn", "hfft", "ihfft"])
@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16])
def test_half_precision_refused(fname, dtype):
    x = ember.ones(4, dtype=dtype)
    with pytest.raises(RuntimeError, match="Unsupported dtype"):
        getattr(ember.fft, fname)(x)


@pytest.mark.parametrize("fname", ["fftn", "ifftn"])
def test_zero_dim_and_no_dims(fname):
    _compare(fname, np.array(2.5), {})
    _compare(fname, _data((2, 3), "float32"), {"dim": ()})
    _compare(fname, _data((2, 3), "complex64"), {"dim": ()})


# ---------------------------------------------------------------- errors


ERROR_CASES = [
    ("fft", (4,), "float32", {"norm": "bad"}), ("rfftn", (4, 3), "float32", {"norm": "Ortho"}),
    ("fft", (4,), "float32", {"n": 0}), ("ifft", (4,), "complex64", {"n": -1}),
    ("irfft", (1,), "complex64", {}), ("hfft", (4,), "complex64", {"n": 0}),
    ("fft", (0,), "float32", {}), ("fft", (4,), "float32", {"dim": 3}),
    ("fft", (), "float32", {}), ("fft2", (3,), "float32", {}),
    ("fftn", (2, 3), "float32", {"dim": (0, 0)}), ("fftn", (2, 3), "float32", {"dim": (0, -2)}),
    ("rfftn", (2, 3), "float32", {"dim": (1, -1)}),
    ("fftn", (2, 3), "float32", {"s": (2,), "dim": (0, 1)}),
    ("fftn", (2, 3), "float32", {"s": (2, 2, 2)}), ("fftn", (2, 3), "float32", {"s": (-1, 0)}),
    ("rfft", (4,), "complex64", {}), ("ihfft", (4,), "complex128", {}),
    ("rfftn", (4, 3), "complex64", {}), ("ihfftn", (4, 3), "complex64", {}),
    ("rfftn", (2, 3), "float32", {"dim": ()}), ("irfftn", (2, 3), "complex64", {"dim": ()}),
    ("fft", (4,), "float32", {"n": "a"}), ("fft", (4,), "float32", {"n": 2.0}),
]


@pytest.mark.parametrize("case", ERROR_CASES, ids=lambda c: f"{c[0]}-{c[3]}-{c[1]}")
def test_errors_as_torch(case):
    fname, shape, dtype, kwargs = case
    a = _data(shape, dtype)
    e, t = make_pair(a)
    with pytest.raises(Exception) as info:
        getattr(torch.fft, fname)(t, **kwargs)
    with pytest.raises(info.type):
        getattr(ember.fft, fname)(e, **kwargs)


def test_error_messages():
    x = ember.ones(4)
    with pytest.raises(RuntimeError, match='Invalid normalization mode: "bad"'):
        ember.fft.fft(x, norm="bad")
    with pytest.raises(RuntimeError, match=r"Invalid number of data points \(0\)"):
        ember.fft.fft(x, n=0)
    with pytest.raises(RuntimeError, match="FFT dims must be unique"):
        ember.fft.fftn(ember.ones(2, 2), dim=(1, -1))
    with pytest.raises(RuntimeError, match="rfft expects a real input tensor"):
        ember.fft.rfft(x.to(ember.complex64))


# ---------------------------------------------------------------- out=


def test_out():
    a = _data((5,), "float32")
    e, t = make_pair(a)
    e_out, t_out = ember.empty(5, dtype=ember.complex64), torch.empty(5, dtype=torch.complex64)
    r = ember.fft.fft(e, out=e_out)
    torch.fft.fft(t, out=t_out)
    assert r is e_out
    assert_same(e_out, t_out)
    e_out, t_out = ember.empty(0, dtype=ember.complex128), torch.empty(0, dtype=torch.complex128)
    ember.fft.rfft(e, out=e_out)
    torch.fft.rfft(t, out=t_out)
    assert_same(e_out, t_out)
    e_out, t_out = ember.empty(8), torch.empty(8)
    ember.fft.irfft(e.to(ember.complex64), out=e_out)
    torch.fft.irfft(t.to(torch.complex64), out=t_out)
    assert_same(e_out, t_out)
    for fname, dtype, arg in [("fft", "float32", "a"), ("irfft", "complex64", "c"),
                              ("hfft", "int64", "c")]:
        x, xt = (e, t) if arg == "a" else (e.to(ember.complex64), t.to(torch.complex64))
        with pytest.raises(RuntimeError) as info:
            getattr(torch.fft, fname)(xt, out=torch.empty(8, dtype=getattr(torch, dtype)))
        with pytest.raises(RuntimeError, match=str(info.value)):
            getattr(ember.fft, fname)(x, out=ember.empty(8, dtype=getattr(ember, dtype)))
    g = ember.ones(4, dtype=ember.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="out="):
        ember.fft.fft(g, out=ember.empty(4, dtype=ember.complex128))


# ---------------------------------------------------------------- meta device


@pytest.mark.parametrize("fname", ONE_D + N_D)
@pytest.mark.parametrize("dtype", ["float64", "complex64"])
def test_meta_device(fname, dtype):
    shape, kwargs = (3, 4, 6), {"norm": "ortho"}
    e, t = make_pair(_data(shape, dtype))
    try:
        expected = getattr(torch.fft, fname)(t, **kwargs)
    except RuntimeError:
        with pytest.raises(RuntimeError):
            getattr(ember.fft, fname)(e.to("meta"), **kwargs)
        return
    actual = getattr(ember.fft, fname)(e.to("meta"), **kwargs)
    assert actual.device.type == "meta"
    assert tuple(actual.shape) == tuple(expected.shape)
    assert actual.dtype.name == str(expected.dtype).removeprefix("torch.")


# ---------------------------------------------------------------- frequencies and shifts


@pytest.mark.parametrize("n", [0, 1, 4, 7])
@pytest.mark.parametrize("d", [1.0, 0.3])
@pytest.mark.parametrize("dtype", [None, "float64", "complex64"])
def test_fftfreq(n, d, dtype):
    kw = {} if dtype is None else {"dtype": getattr(ember, dtype)}
    tkw = {} if dtype is None else {"dtype": getattr(torch, dtype)}
    for fname in ("fftfreq", "rfftfreq"):
        try:
            expected = getattr(torch.fft, fname)(n, d, **tkw)
        except Exception as err:  # torch's arange refuses complex dtypes
            with pytest.raises(type(err)):
                getattr(ember.fft, fname)(n, d, **kw)
            continue
        assert_same(getattr(ember.fft, fname)(n, d, **kw), expected)


def test_fftfreq_errors_and_options():
    with pytest.raises(RuntimeError, match="floating point or complex"):
        ember.fft.fftfreq(4, dtype=ember.int64)
    with pytest.raises(RuntimeError):
        torch.fft.fftfreq(4, dtype=torch.int64)
    with pytest.raises(RuntimeError):
        ember.fft.fftfreq(-1)
    f = ember.fft.fftfreq(5, requires_grad=True)
    assert f.requires_grad and f.is_leaf
    assert ember.fft.rfftfreq(6, device="meta").shape == (4,)


@pytest.mark.parametrize("shape,dim", [((7,), None), ((4, 5), None), ((4, 5), 0),
                                       ((3, 4, 5), (0, -1)), ((3, 4, 5), (-2,)), ((), None)])
@pytest.mark.parametrize("fname", ["fftshift", "ifftshift"])
def test_shifts(fname, shape, dim):
    _compare(fname, _data(shape, "float32"), {"dim": dim})
    _compare(fname, np.arange(int(np.prod(shape))).reshape(shape), {"dim": dim})


def test_shift_gradient():
    assert_grads_match(lambda x: ember.fft.fftshift(x, dim=(0, 1)),
                       lambda x: torch.fft.fftshift(x, dim=(0, 1)), _data((3, 4), "float64"))


# ---------------------------------------------------------------- gradients


def _real_view(fn, lib):
    """A real-valued view of a transform's output, so every output component is checked."""
    def wrapped(x):
        y = fn(x)
        if y.is_complex():
            return lib.view_as_real(y.resolve_conj() if lib is torch else y)
        return y
    return wrapped


GRAD_CASES = [("fft", (6,), {"n": 8}), ("ifft", (3, 5), {"dim": 0, "norm": "ortho"}),
              ("rfft", (7,), {"n": 6}), ("rfft", (4, 6), {"dim": 0, "norm": "forward"}),
              ("irfft", (5,), {}), ("irfft", (3, 4), {"n": 7, "dim": 0, "norm": "ortho"}),
              ("hfft", (5,), {"n": 9}), ("ihfft", (7,), {"norm": "forward"}),
              ("fft2", (3, 4), {"s": (4, 3)}), ("ifftn", (2, 3, 4), {"dim": (0, 2)}),
              ("rfft2", (4, 5), {}), ("rfftn", (3, 4, 5), {"s": (4, 6), "dim": (2, 0)}),
              ("irfft2", (3, 4), {"norm": "ortho"}), ("irfftn", (2, 3, 4), {"s": (3, 5)}),
              ("hfft2", (3, 4), {}), ("ihfft2", (3, 5), {"norm": "ortho"}),
              ("hfftn", (2, 3, 4), {"s": (4, 5)}), ("ihfftn", (2, 3, 4), {"dim": (0, 2)})]


@pytest.mark.parametrize("case,dtype", [(c, d) for c in GRAD_CASES for d in
                                        ("float64", "complex128")
                                        if d == "float64" or c[0] not in REAL_ONLY],
                         ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}" if isinstance(c, tuple) else c)
def test_gradients(case, dtype):
    # (complex input to the real-input transforms is an error, as in torch: test_errors_as_torch)
    fname, shape, kwargs = case
    assert_grads_match(_real_view(lambda x: getattr(ember.fft, fname)(x, **kwargs), ember),
                       _real_view(lambda x: getattr(torch.fft, fname)(x, **kwargs), torch),
                       _data(shape, dtype, 3), double_backward=True, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("fname", ["fft", "rfft", "irfft", "hfft", "ihfftn"])
def test_gradients_of_abs_loss(fname):
    # a non-linear loss, so that double backward goes through the transforms' derivatives;
    # complex inputs enter as real (..., 2) arrays (conftest's double backward is real-valued)
    if fname in ("rfft", "ihfftn"):
        e_in, t_in, a = (lambda x: x), (lambda x: x), _data((3, 6), "float64", 5)
    else:
        e_in, t_in = ember.view_as_complex, torch.view_as_complex
        a = _data((3, 6, 2), "float64", 5)
    assert_grads_match(lambda x: getattr(ember.fft, fname)(e_in(x)).abs(),
                       lambda x: getattr(torch.fft, fname)(t_in(x)).abs(),
                       a, rtol=1e-9, atol=1e-9, double_backward=True)


@pytest.mark.parametrize("fname,dtype", [("fft", ember.complex128), ("rfft", ember.float64),
                                         ("irfft", ember.complex128), ("hfftn", ember.complex128),
                                         ("ihfft2", ember.float64)])
def test_gradcheck(fname, dtype):
    x = ember.tensor(_data((3, 4), dtype.name, 7)).requires_grad_()
    fn = getattr(ember.fft, fname)
    assert ember.autograd.gradcheck(lambda t: fn(t, norm="ortho"), (x,))
    assert ember.autograd.gradgradcheck(lambda t: fn(t, norm="ortho"), (x,))


@pytest.mark.parametrize("fname,dtype", [("rfft", "float64"), ("irfft", "complex128"),
                                         ("fft", "complex128"), ("hfft", "complex128")])
def test_grad_fn_names(fname, dtype):
    e, t = make_pair(_data((4,), dtype), requires_grad=True)
    assert getattr(ember.fft, fname)(e).grad_fn.name() == \
        getattr(torch.fft, fname)(t).grad_fn.name()


# ---------------------------------------------------------------- stft / istft


def _window(kind, n):
    if kind is None:
        return None, None
    k = np.arange(n)
    w = 0.5 - 0.5 * np.cos(2 * np.pi * k / n) if kind == "hann" else 1.0 + 0.1 * k
    return ember.tensor(w), torch.from_numpy(w.copy())


STFT_CASES = [
    ((40,), dict(n_fft=8)),
    ((2, 37), dict(n_fft=8, hop_length=3, window="hann")),
    ((33,), dict(n_fft=9, hop_length=2, win_length=6, window="hann", normalized=True)),
    ((30,), dict(n_fft=8, win_length=5, center=False)),
    ((2, 30), dict(n_fft=10, hop_length=4, window="ramp", pad_mode="constant")),
    ((25,), dict(n_fft=6, hop_length=2, onesided=False, window="hann", pad_mode="replicate")),
    ((24,), dict(n_fft=8, hop_length=2, pad_mode="circular", window="ramp")),
]


@pytest.mark.parametrize("case", range(len(STFT_CASES)))
@pytest.mark.parametrize("dtype", ["float64", "complex128", "float32"])
def test_stft(case, dtype):
    shape, kwargs = STFT_CASES[case]
    kwargs = dict(kwargs)
    if dtype.startswith("complex") and kwargs.get("onesided"):
        kwargs.pop("onesided")
    if dtype.startswith("complex") and kwargs.get("pad_mode") == "circular":
        kwargs["pad_mode"] = "constant"
    kind = kwargs.pop("window", None)
    win_n = kwargs.get("win_length", kwargs["n_fft"])
    ew, tw = _window(kind, win_n)
    if ew is not None and dtype == "float32":
        ew, tw = ew.float(), tw.float()
    a = _data(shape, dtype, case)
    e, t = make_pair(a)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = torch.stft(t, window=tw, return_complex=True, **kwargs)
        actual = ember.stft(e, window=ew, return_complex=True, **kwargs)
    rtol, atol = _tol(dtype)
    assert_same(actual, expected, rtol=rtol, atol=atol)


@pytest.mark.parametrize("case", range(len(STFT_CASES)))
def test_istft_roundtrip_and_values(case):
    shape, kwargs = STFT_CASES[case]
    kwargs = {k: v for k, v in kwargs.items() if k != "pad_mode"}
    kind = kwargs.pop("window", None)
    ew, tw = _window(kind, kwargs.get("win_length", kwargs["n_fft"]))
    a = _data(shape, "float64", case)
    t = torch.from_numpy(a)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spec = torch.stft(t, window=tw, return_complex=True, **kwargs)
        for length in (None, shape[-1] - 3, shape[-1] + 5):
            try:
                expected = torch.istft(spec, window=tw, length=length, **kwargs)
            except RuntimeError:
                with pytest.raises(RuntimeError):
                    ember.istft(ember.tensor(spec.numpy()), window=ew, length=length, **kwargs)
                continue
            actual = ember.istft(ember.tensor(spec.numpy()), window=ew, length=length, **kwargs)
            assert_same(actual, expected, rtol=1e-9, atol=1e-9)


def test_istft_return_complex():
    a = _data((20,), "complex128", 2)
    ew, tw = _window("hann", 8)
    t = torch.from_numpy(a)
    spec = torch.stft(t, 8, 2, window=tw, return_complex=True)
    expected = torch.istft(spec, 8, 2, window=tw, return_complex=True)
    actual = ember.istft(ember.tensor(spec.numpy()), 8, 2, window=ew, return_complex=True)
    assert_same(actual, expected)


def test_istft_complex_window_matches_torch():
    """torch divides by the overlap-added square of the window (not |window|^2) even when the
    window is complex."""
    spec = _data((12, 9), "complex128", 3)
    window = _data((12,), "complex128", 4)
    expected = torch.istft(torch.from_numpy(spec), 12, 3, window=torch.from_numpy(window),
                           center=False, onesided=False, return_complex=True)
    actual = ember.istft(ember.tensor(spec), 12, 3, window=ember.tensor(window), center=False,
                         onesided=False, return_complex=True)
    assert_same(actual, expected, rtol=1e-9, atol=1e-9)


def test_stft_istft_gradients():
    ew, tw = _window("hann", 8)

    def e_fn(x):
        return ember.stft(x, 8, 3, window=ew, return_complex=True).abs()

    def t_fn(x):
        return torch.stft(x, 8, 3, window=tw, return_complex=True).abs()

    assert_grads_match(e_fn, t_fn, _data((2, 30), "float64"), double_backward=True)
    spec = torch.stft(torch.from_numpy(_data((30,), "float64")), 8, 2, window=tw,
                      return_complex=True)
    spec = torch.view_as_real(spec).numpy()
    assert_grads_match(lambda s: ember.istft(ember.view_as_complex(s), 8, 2, window=ew) ** 2,
                       lambda s: torch.istft(torch.view_as_complex(s), 8, 2, window=tw) ** 2,
                       spec,
                       double_backward=True)
    assert ember.autograd.gradcheck(lambda x: ember.stft(x, 6, 2, window=ew[:6] + 0.1,
                                                         return_complex=True).abs(),
                                    (ember.tensor(_data((14,), "float64")).requires_grad_(),))


def test_stft_method_and_errors():
    x = ember.tensor(_data((20,), "float32"))
    t = to_torch(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same(x.stft(8, return_complex=True), t.stft(8, return_complex=True))
        spec = x.stft(8, 2, window=ember.ones(8), return_complex=True)
        assert_same(spec.istft(8, 2, window=ember.ones(8)),
                    to_torch(spec).istft(8, 2, window=torch.ones(8)))
        with pytest.raises(RuntimeError, match="return_complex"):
            ember.stft(x, 8)
        with pytest.raises(RuntimeError):
            torch.stft(t, 8)
        for kwargs in (dict(n_fft=40), dict(n_fft=8, hop_length=0), dict(n_fft=8, win_length=9),
                       dict(n_fft=8, window=ember.ones(5))):
            tk = dict(kwargs)
            if "window" in tk:
                tk["window"] = torch.ones(5)
            with pytest.raises(RuntimeError):
                torch.stft(t, return_complex=True, **tk)
            with pytest.raises(RuntimeError):
                ember.stft(x, return_complex=True, **kwargs)
        with pytest.raises(RuntimeError, match="complex-valued input"):
            ember.istft(ember.ones(5, 3), 8)
        with pytest.raises(RuntimeError):
            ember.istft(spec[:4], 8)
        with pytest.raises(RuntimeError):
            torch.istft(to_torch(spec)[:4], 8)
        with pytest.warns(UserWarning, match="deprecated"):
            r = ember.stft(x, 8, window=ember.ones(8), return_complex=False)
        assert_same(r, torch.stft(t, 8, window=torch.ones(8), return_complex=False))


# ---------------------------------------------------------------- forward AD, devices, docs


@pytest.mark.parametrize("fname", ["fft", "rfft", "irfft", "hfft", "ihfft", "fftn", "irfftn"])
def test_forward_ad(fname):
    dtype = "float64" if fname in REAL_ONLY else "complex128"
    a, v = _data((3, 6), dtype, 1), _data((3, 6), dtype, 2)
    results = []
    for lib in (ember, torch):
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            dual = fw.make_dual(lib.tensor(a), lib.tensor(v))
            results.append(tuple(fw.unpack_dual(getattr(lib.fft, fname)(dual, norm="ortho"))))
    (p, t), (tp, tt) = results
    assert_same(p, tp.resolve_conj())
    assert_same(t, tt.resolve_conj())


@pytest.mark.parametrize("fname", ["fft", "ifft2", "rfft", "irfftn", "hfft", "ihfftn"])
def test_on_device(device, fname):
    # webgpu: float32/complex64 (no f64 there), the transforms counted as CPU fallbacks
    single = device == "webgpu"
    real, complex_ = ("float32", "complex64") if single else ("float64", "complex128")
    a = _data((4, 6), real if fname in REAL_ONLY else complex_, 4)
    e = ember.tensor(a, device=device).requires_grad_()
    t = torch.from_numpy(a).requires_grad_()
    before = ember.webgpu.fallback_ops() if single else {}
    ey, ty = getattr(ember.fft, fname)(e), getattr(torch.fft, fname)(t)
    assert ey.device.type == device
    tol = {"rtol": 1e-4, "atol": 1e-5} if single else {}
    assert_same(ey.cpu(), ty.resolve_conj(), **tol)
    ey.abs().sum().backward()
    ty.abs().sum().backward()
    assert_same(e.grad.cpu(), t.grad, **tol)
    if single:
        counted = ember.webgpu.fallback_ops()
        assert any(counted[op] > before.get(op, 0) for op in counted if op.startswith("fft."))


def test_stft_on_device(device):
    a = _data((2, 30), "float32", 6)
    ew, tw = _window("hann", 8)
    e = ember.tensor(a, device=device)
    spec = ember.stft(e, 8, 2, window=ew.float().to(device), return_complex=True)
    expected = torch.stft(torch.from_numpy(a), 8, 2, window=tw.float(), return_complex=True)
    assert_same(spec.cpu(), expected, rtol=1e-5, atol=1e-5)
    back = ember.istft(spec, 8, 2, window=ew.float().to(device))
    assert_same(back.cpu(), torch.istft(expected, 8, 2, window=tw.float()), rtol=1e-5,
                atol=1e-5)


def test_docstring_examples():
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(ember.fft, "ember.fft", globs={"ember": ember}):
        runner.run(test)
    assert runner.failures == 0 and runner.tries > 20
