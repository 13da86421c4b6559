"""torch.jit's annotation helpers and legacy modules, against torch."""

import typing

import pytest
import torch.jit.annotations as TA
import torch.jit.generate_bytecode as TG
import torch.jit.quantized as TQ

import ember.jit as EJ
import ember.jit.generate_bytecode as EG
import ember.jit.quantized as EQ

EA = EJ.annotations

ANNOTATIONS = [int, list[int], typing.List[int], dict[str, int], typing.Dict[str, int],  # noqa: UP006
               tuple[int, str], typing.Tuple[int], typing.Optional[int], int | None,  # noqa: UP006, UP045
               typing.Union[int, str], str | bytes, typing.Any]  # noqa: UP007


@pytest.mark.parametrize("name", ["is_list", "is_dict", "is_tuple", "is_optional", "is_union"])
def test_annotation_predicates_match_torch(name):
    assert [getattr(EA, name)(a) for a in ANNOTATIONS] == [getattr(TA, name)(a)
                                                          for a in ANNOTATIONS]
    bare = {"is_list": typing.List, "is_dict": typing.Dict, "is_tuple": typing.Tuple,  # noqa: UP006
            "is_optional": typing.Optional, "is_union": typing.Union}[name]
    with pytest.raises(RuntimeError) as expected:
        getattr(TA, name)(bare)
    with pytest.raises(RuntimeError, match=str(expected.value)[:30]):
        getattr(EA, name)(bare)


def test_type_comment_parsing_matches_torch():
    one = "def f(x, y):\n    # type: (Tensor, int) -> Tensor\n    return x"
    long_form = ("def f(a,  # type: int\n      b,  # type: str\n      ):\n"
                 "    # type: (...) -> int\n    return a")
    for source in (one, long_form, "def f(x):\n    return x"):
        assert EA.get_type_line(source) == TA.get_type_line(source)
    assert EA.split_type_line("# type: (Tensor, int) -> Tensor") == TA.split_type_line(
        "# type: (Tensor, int) -> Tensor")
    with pytest.raises(RuntimeError, match="couldn't find `->`"):
        EA.split_type_line("# type: (int)")

    def g(alpha, beta=2):
        return alpha

    assert EA.get_param_names(g, 2) == TA.get_param_names(g, 2)
    assert EA.Module("m", {"x": 1}).x == TA.Module("m", {"x": 1}).x


def test_legacy_jit_modules_match_torch():
    table = (("instructions", (("STOREN", 1, 2), ("RET", 0, 0))), ("constants", (1.0,)))
    assert EG.format_bytecode(table) == TG.format_bytecode(table)
    for name, args in (("QuantizedLinear", (None,)), ("QuantizedLSTM", (None, None)),
                       ("QuantizedGRUCell", (None,)), ("QuantizedRNNBase", (None,))):
        with pytest.raises(RuntimeError) as expected:
            getattr(TQ, name)(*args)
        with pytest.raises(RuntimeError, match=str(expected.value)):
            getattr(EQ, name)(*args)
    with pytest.raises(RuntimeError) as expected:
        TQ.quantize_rnn_modules(None)
    with pytest.raises(RuntimeError, match=str(expected.value)[:40]):
        EQ.quantize_rnn_modules(None)
    assert EJ.wait(EJ.fork(lambda a: a + 1, 2)) == 3
