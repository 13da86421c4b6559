"""ember.jit.script on user modules that use more of TorchScript's subset: ``zip`` and
``enumerate`` over values known only at run time, ``isinstance`` on Optional and plain
arguments, ``raise`` in a nested branch, nested tuple unpacking, early ``return`` from loops;
outputs against torch.jit.script's, and loading a saved one in this process."""

# the models are written as real TorchScript code is, with typing's List and Optional
# ruff: noqa: UP006, UP035, UP045
from typing import Dict, List, Optional, Tuple

import numpy as np
import pytest
import torch
from torch import Tensor  # an annotation only: ember reads it as the name "Tensor"

import ember
from conftest import assert_same

RNG = np.random.default_rng(0)


def make_models(lib):
    """The same model classes written against ``lib`` (torch or ember)."""
    nn = lib.nn

    class Zipped(nn.Module):
        def __init__(self):
            super().__init__()
            self.lins = nn.ModuleList([nn.Linear(3, 3) for _ in range(2)])
            self.norms = nn.ModuleList([nn.LayerNorm(3) for _ in range(2)])

        def forward(self, xs: List[Tensor], ys: List[Tensor]):
            out = []
            for i, (x, y) in enumerate(zip(xs, ys)):
                out.append(x * y + i)
            total = out[0]
            for lin, norm in zip(self.lins, self.norms):
                total = norm(lin(total))
            for k, size in enumerate(total.shape):
                total = total + k * size
            return out, total

    class Checked(nn.Module):
        def __init__(self):
            super().__init__()
            self.cell = nn.GRUCell(3, 3)

        def forward(self, x, h: Optional[Tensor] = None, scale: Optional[float] = None):
            if h is not None:
                if h.dim() != 2:
                    raise ValueError("h must be 2-D")
                x = x + h
            if isinstance(scale, float):
                x = x * scale
            pair = (x, (x + 1, x - 1))
            a, (b, c) = pair
            return self.cell(a, b * c)

    class EarlyExit(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(3, 3) for _ in range(3)])

        def forward(self, x, limit: float):
            for layer in self.layers:
                x = layer(x)
                if float(x.abs().sum()) > limit:
                    return x, True
            return x, False

    class Stepper(nn.Module):
        """A cell stepped over time, its outputs appended to a list."""

        def __init__(self):
            super().__init__()
            self.cell = nn.LSTMCell(3, 4)

        def forward(self, x):
            h = lib.zeros(x.size(1), 4)
            c = lib.zeros(x.size(1), 4)
            outs = []
            for t in range(x.size(0)):
                h, c = self.cell(x[t], (h, c))
                outs.append(h)
            outs.reverse()
            return lib.stack(outs), len(outs)

    class Decoder(nn.Module):
        """Greedy decoding: a cell fed its own output, a typed list, a data-dependent break."""

        def __init__(self):
            super().__init__()
            self.cell = nn.GRUCell(3, 4)
            self.out = nn.Linear(4, 3)

        def forward(self, x, max_len: int, limit: float):
            h = lib.zeros(x.size(0), 4)
            outputs: List[Tensor] = []
            inp = x
            for _ in range(max_len):
                h = self.cell(inp, h)
                inp = self.out(h)
                outputs.append(inp)
                if bool(inp.abs().sum() > limit):
                    break
            return lib.stack(outputs, 1)

    class Unbound(nn.Module):
        """An Optional state refined by ``is None`` in a loop over ``x.unbind(0)``."""

        def __init__(self):
            super().__init__()
            self.cell = nn.LSTMCell(3, 4)

        def forward(self, x):
            state: Optional[Tuple[Tensor, Tensor]] = None
            outs = []
            for xt in x.unbind(0):
                if state is None:
                    state = self.cell(xt)
                else:
                    state = self.cell(xt, state)
                outs.append(state[0])
            return lib.cat(outs, 0)

    class Masked(nn.Module):
        """A padding mask written item by item, layers called with keyword arguments."""

        def __init__(self):
            super().__init__()
            self.enc = nn.TransformerEncoder(
                nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True), 2,
                enable_nested_tensor=False)
            self.head = nn.Linear(8, 5)

        def forward(self, x, lengths: List[int]):
            n = x.size(1)
            mask = lib.triu(lib.full((n, n), float("-inf")), diagonal=1)
            pad = lib.zeros(x.size(0), n, dtype=lib.bool)
            for b, length in enumerate(lengths):
                pad[b, length:] = True
            y = self.enc(x, mask=mask, src_key_padding_mask=pad)
            return self.head(y).max(-1)[0]

    class UpDown(nn.Module):
        """A transposed convolution given ``output_size``, an instance norm after it."""

        def __init__(self):
            super().__init__()
            self.down = nn.Conv2d(2, 4, 3, stride=2, padding=1)
            self.up = nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1)
            self.norm = nn.InstanceNorm2d(2, affine=True)

        def forward(self, x):
            y = self.up(self.down(x), output_size=x.size())
            return self.norm(y + x)

    class Dicts(nn.Module):
        """A dict built item by item, augmented assignment into a list and a tensor."""

        def forward(self, x):
            d: Dict[str, Tensor] = {}
            d["double"] = x * 2
            d["plus"] = x + 1
            sizes = [1, 2]
            sizes[1] += x.size(0)
            y = x.clone()
            y[0] += 10.0
            d["y"] = y * sizes[1]
            return d

    class Comprehensions(nn.Module):
        """List comprehensions over layers and run-time lists, a ModuleDict's items."""

        def __init__(self):
            super().__init__()
            self.heads = nn.ModuleList([nn.Linear(3, 2) for _ in range(3)])
            self.blocks = nn.ModuleDict({"a": nn.Linear(2, 2), "b": nn.Tanh()})

        def forward(self, x, xs: List[Tensor]):
            outs = [head(x) for head in self.heads]
            doubled = [2 * t for t in xs]
            y = outs[0]
            for _name, block in self.blocks.items():
                y = block(y)
            named = {str(i): 2 * t for i, t in enumerate(xs)}
            t = x  # the comprehensions' names do not leak out
            return lib.cat(outs, -1), doubled, y, t, named

    return {"comprehensions": Comprehensions, "zipped": Zipped, "checked": Checked, "early": EarlyExit, "stepper": Stepper,
            "decoder": Decoder, "unbound": Unbound, "masked": Masked, "updown": UpDown,
            "dicts": Dicts}


def pair(name):
    ember.manual_seed(0)
    e_model, t_model = make_models(ember)[name](), make_models(torch)[name]()
    t_model.load_state_dict({k: torch.tensor(v.detach().numpy())
                             for k, v in e_model.state_dict().items()})
    return ember.jit.script(e_model), torch.jit.script(t_model)


def arrays(*shapes):
    found = [RNG.standard_normal(s).astype(np.float32) for s in shapes]
    return [ember.tensor(a) for a in found], [torch.tensor(a) for a in found]


def test_zip_and_enumerate_over_run_time_lists_and_sizes_match_torch():
    scripted, t_scripted = pair("zipped")
    ex, tx = arrays((2, 3), (2, 3), (2, 3))
    ey, ty = arrays((2, 3), (2, 3))  # zip stops at the shorter list, as Python's
    assert_same(scripted(ex, ey), t_scripted(tx, ty), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("with_h", [False, True])
@pytest.mark.parametrize("scale", [None, 2.5, 3])
def test_isinstance_nested_raise_and_tuple_unpacking_match_torch(with_h, scale):
    scripted, t_scripted = pair("checked")
    (ex, eh), (tx, th) = arrays((2, 3), (2, 3))
    e_args, t_args = (ex, eh if with_h else None, scale), (tx, th if with_h else None, scale)
    assert_same(scripted(*e_args), t_scripted(*t_args), rtol=1e-5, atol=1e-6)


def test_a_raise_in_a_nested_branch_raises_the_same_error_as_torch():
    scripted, t_scripted = pair("checked")
    (ex, eh), (tx, th) = arrays((2, 3), (2, 3, 1))
    with pytest.raises(torch.jit.Error, match="builtins.ValueError: h must be 2-D"):
        t_scripted(tx, th)
    with pytest.raises(ember.jit.Error, match="builtins.ValueError: h must be 2-D"):
        scripted(ex, eh)
    assert_same(scripted(ex, eh[..., 0]), t_scripted(tx, th[..., 0]), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("limit", [0.0, 1.0, 1e9])
def test_early_return_from_an_unrolled_loop_matches_torch(limit, tmp_path):
    scripted, t_scripted = pair("early")
    (ex,), (tx,) = arrays((2, 3))
    want = t_scripted(tx, limit)
    assert_same(scripted(ex, limit), want, rtol=1e-5, atol=1e-6)
    scripted.save(tmp_path / "early.pt")
    assert_same(ember.jit.load(tmp_path / "early.pt")(ex, limit), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("steps", [1, 4])
def test_list_append_in_a_loop_over_time_matches_torch(steps):
    scripted, t_scripted = pair("stepper")
    (ex,), (tx,) = arrays((steps, 2, 3))
    assert_same(scripted(ex), t_scripted(tx), rtol=1e-5, atol=1e-6)
    assert_same(scripted(ex), t_scripted(tx), rtol=1e-5, atol=1e-6)  # a fresh list each call


@pytest.mark.parametrize("limit", [0.5, 1e9])
def test_greedy_decoder_with_a_break_matches_torch(limit):
    scripted, t_scripted = pair("decoder")
    (ex,), (tx,) = arrays((2, 3))
    assert_same(scripted(ex, 5, limit), t_scripted(tx, 5, limit), rtol=1e-5, atol=1e-6)


def test_optional_state_over_unbind_matches_torch():
    scripted, t_scripted = pair("unbound")
    (ex,), (tx,) = arrays((4, 2, 3))
    assert_same(scripted(ex), t_scripted(tx), rtol=1e-5, atol=1e-6)


def test_item_assignment_and_layer_keywords_match_torch(tmp_path):
    scripted, t_scripted = pair("masked")
    scripted.eval()
    t_scripted.eval()
    (ex,), (tx,) = arrays((2, 4, 8))
    for lengths in ([4, 2], [1, 3]):
        assert_same(scripted(ex, lengths), t_scripted(tx, lengths), rtol=1e-4, atol=1e-5)
    scripted.save(tmp_path / "masked.pt")
    loaded = ember.jit.load(tmp_path / "masked.pt")
    assert_same(loaded(ex, [4, 2]), t_scripted(tx, [4, 2]), rtol=1e-4, atol=1e-5)


def test_transposed_convolution_with_output_size_matches_torch():
    scripted, t_scripted = pair("updown")
    (ex,), (tx,) = arrays((1, 2, 7, 7))
    assert_same(scripted(ex), t_scripted(tx), rtol=1e-4, atol=1e-5)


def test_dicts_and_augmented_item_assignment_match_torch():
    scripted, t_scripted = pair("dicts")
    (ex,), (tx,) = arrays((3, 2))
    got, want = scripted(ex), t_scripted(tx)
    assert list(got) == list(want)
    for key in want:
        assert_same(got[key], want[key])


def test_list_comprehensions_and_module_dict_items_match_torch():
    scripted, t_scripted = pair("comprehensions")
    (ex, ea, eb, ec), (tx, ta, tb, tc) = arrays((2, 3), (2, 2), (2, 2), (2, 2))
    for e_list, t_list in (([ea, -eb, ec], [ta, -tb, tc]), ([], [])):
        got, want = scripted(ex, e_list), t_scripted(tx, t_list)
        assert_same(got[:4], want[:4], rtol=1e-5, atol=1e-6)
        assert list(got[4]) == list(want[4])
        for key in want[4]:
            assert_same(got[4][key], want[4][key])


@pytest.mark.parametrize("source", ["[2 * t for t in xs if bool(t.sum() > 0)]",
                                    "[a * b for a in xs for b in xs]"])
def test_comprehensions_outside_torchs_subset_raise_its_error(source, tmp_path):
    path = tmp_path / "comprehension_models.py"
    path.write_text("from typing import List\nimport ember, torch\n" + "".join(
        f"class {name}({lib}.nn.Module):\n"
        f"    def forward(self, xs: List[{lib}.Tensor]):\n        return {source}\n"
        for name, lib in (("E", "ember"), ("T", "torch"))))
    import importlib.util

    spec = importlib.util.spec_from_file_location("comprehension_models", path)
    models = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(models)
    with pytest.raises(torch.jit.frontend.NotSupportedError) as t_error:
        torch.jit.script(models.T())
    with pytest.raises(ember.jit.frontend.NotSupportedError) as e_error:
        ember.jit.script(models.E())
    assert str(e_error.value).split(" (line")[0] in str(t_error.value)


def test_isinstance_on_a_type_outside_the_subset_is_refused():
    class Weird(ember.nn.Module):
        def forward(self, x, n: Optional[int] = None):
            if isinstance(n, np.ndarray):
                return x
            return x + 1

    with pytest.raises(ember.jit.frontend.NotSupportedError, match="isinstance"):
        ember.jit.script(Weird())


def test_int_given_for_a_float_argument_becomes_a_float_as_in_torch():
    class Echo(ember.nn.Module):
        def forward(self, x, scale: float):
            return x * scale, scale

    class TEcho(torch.nn.Module):
        def forward(self, x, scale: float):
            return x * scale, scale

    got, want = ember.jit.script(Echo())(ember.ones(2), 3), torch.jit.script(TEcho())(
        torch.ones(2), 3)
    assert_same(got, want)
    assert type(got[1]) is type(want[1]) is float
