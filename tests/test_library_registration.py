"""torch.library's registration API (Library, define, impl, infer_schema, register_autocast,
get_kernel...) run side by side on torch and ember: the same program, the same results and
errors."""

import itertools
from collections.abc import Sequence

import numpy as np
import pytest
import torch

import ember

_names = itertools.count()


def _namespace():
    """A namespace no other test has used (both registries are process-wide)."""
    return f"emberlibtest{next(_names)}"


def _same(ours, theirs):
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-6)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]


def _same_error(ours, theirs, prefix_only=False):
    with pytest.raises(Exception) as expected:
        theirs()
    with pytest.raises(type(expected.value)) as got:
        ours()
    mine, want = str(got.value), str(expected.value)
    if prefix_only:  # torch adds where each registration happened, or its dispatcher table
        assert want.startswith(mine.split(" This")[0].split(" Each")[0])
    else:
        assert mine == want


def test_library_define_and_cpu_impl_match_torch():
    namespace = _namespace()
    results = []
    for lib_module in (torch, ember):
        lib = lib_module.library.Library(namespace, "DEF")
        assert lib.define("scale(Tensor x, int n=2, *, float alpha=1.) -> Tensor") == "scale"
        op = getattr(lib_module.ops, namespace).scale
        _same_error_call = pytest.raises(NotImplementedError, match="Could not run")
        with _same_error_call:
            op(lib_module.ones(2))
        lib.impl("scale", lambda x, n=2, alpha=1.0: x * n * alpha, "CPU")
        x = lib_module.tensor([1.0, -2.0], requires_grad=True)
        y = op(x, 3, alpha=0.5)
        y.sum().backward()  # no formula: autograd goes through the kernel's own ops
        results.append((y, x.grad, repr(lib)))
        lib._destroy()
    (ours, ours_grad, ours_repr), (theirs, theirs_grad, theirs_repr) = results[1], results[0]
    _same(ours, theirs)
    _same(ours_grad, theirs_grad)
    assert ours_repr == theirs_repr


def test_library_errors_match_torch():
    namespace = _namespace()
    keep = [torch.library.Library(namespace, "DEF"), ember.library.Library(namespace, "DEF")]
    _same_error(lambda: ember.library.Library(namespace, "DEF"),
                lambda: torch.library.Library(namespace, "DEF"), prefix_only=True)
    _same_error(lambda: ember.library.Library(namespace, "XYZ"),
                lambda: torch.library.Library(namespace, "XYZ"))
    keep[0].define("op(Tensor x) -> Tensor")
    keep[1].define("op(Tensor x) -> Tensor")
    _same_error(lambda: keep[1].define("op(Tensor x) -> Tensor"),
                lambda: keep[0].define("op(Tensor x) -> Tensor"), prefix_only=True)
    _same_error(lambda: ember.library.fallthrough_kernel(),
                lambda: torch.library.fallthrough_kernel())


def test_define_impl_composite_and_meta_match_torch():
    namespace = _namespace()
    outputs = []
    for lib_module in (torch, ember):
        lib_module.library.define(f"{namespace}::wave", "(Tensor x) -> Tensor")
        lib_module.library.impl(f"{namespace}::wave", "CompositeImplicitAutograd",
                                lambda x: x.sin() * 2)
        lib_module.library.define(f"{namespace}::bump", "(Tensor x, float by=1.) -> Tensor")

        @lib_module.library.impl(f"{namespace}::bump", "cpu")
        def bump(x, by=1.0):
            return x + by

        ops = getattr(lib_module.ops, namespace)
        x = lib_module.tensor([0.0, 0.5, 1.0], requires_grad=True)
        ops.wave(x).sum().backward()
        meta = ops.wave(lib_module.empty(4, device="meta"))
        outputs.append((x.grad, ops.bump(lib_module.zeros(2), 3.0), tuple(meta.shape)))
    (ours_grad, ours_bump, ours_meta), (theirs_grad, theirs_bump, theirs_meta) = outputs[1], \
        outputs[0]
    _same(ours_grad, theirs_grad)
    _same(ours_bump, theirs_bump)
    assert ours_meta == theirs_meta == (4,)


def test_registered_formula_makes_the_kernel_opaque():
    namespace = _namespace()
    grads = []
    for lib_module in (torch, ember):
        lib_module.library.define(f"{namespace}::cube", "(Tensor x) -> Tensor")
        lib_module.library.impl(f"{namespace}::cube", "cpu",
                                lambda x: lib_module.from_numpy(x.numpy() ** 3))
        lib_module.library.register_autograd(
            f"{namespace}::cube", lambda ctx, grad: grad * 3 * ctx.x ** 2,
            setup_context=lambda ctx, inputs, output: setattr(ctx, "x", inputs[0]))
        x = lib_module.tensor([1.0, 2.0], requires_grad=True)
        getattr(lib_module.ops, namespace).cube(x).sum().backward()
        grads.append(x.grad)
    _same(grads[1], grads[0])


def test_autograd_key_kernel_handles_its_gradient():
    namespace = _namespace()
    grads = []
    for lib_module in (torch, ember):
        class Square(lib_module.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                return grad * 2 * x

        lib = lib_module.library.Library(namespace, "FRAGMENT")
        lib.define("square(Tensor x) -> Tensor")
        lib.impl("square", lambda x: x * x, "CPU")
        lib.impl("square", Square.apply, "Autograd")
        x = lib_module.tensor([3.0, -1.0], requires_grad=True)
        getattr(lib_module.ops, namespace).square(x).sum().backward()
        grads.append(x.grad)
    _same(grads[1], grads[0])


def _annotated(lib_module):
    tensor, dtype, device = lib_module.Tensor, lib_module.dtype, lib_module.device

    def many(x: tensor, y: tensor | None, n: int, ns: Sequence[int], a: float = 1.0,
             b: bool = False, s: str = "hi", d: dtype = lib_module.float32,
             dev: device = None) -> tuple[tensor, tensor]:
        pass

    def writes(x: tensor, out: tensor) -> None:
        pass

    def keywords(x: tensor, n: int = 2, *, scale: float = 0.5) -> tensor:
        pass

    def listing(x: tensor) -> list[tensor]:
        pass

    def untyped(x, n):
        pass

    return many, writes, keywords, listing, untyped


def test_infer_schema_matches_torch():
    mine, theirs = _annotated(ember), _annotated(torch)
    for index, mutates in ((0, ()), (1, {"out"}), (2, ()), (3, "unknown")):
        assert ember.library.infer_schema(mine[index], mutates_args=mutates) == \
            torch.library.infer_schema(theirs[index], mutates_args=mutates)
    assert ember.library.infer_schema(mine[1], mutates_args={"out"}, op_name="w") == \
        torch.library.infer_schema(theirs[1], mutates_args={"out"}, op_name="w")
    _same_error(lambda: ember.library.infer_schema(mine[4], mutates_args=()),
                lambda: torch.library.infer_schema(theirs[4], mutates_args=()))


def test_register_autocast_and_get_kernel_match_torch():
    namespace = _namespace()
    results = []
    for lib_module in (torch, ember):
        lib_module.library.define(f"{namespace}::keep", "(Tensor x) -> Tensor")
        kernel = lambda x: x.clone()  # noqa: E731
        lib_module.library.impl(f"{namespace}::keep", "cpu", kernel)
        lib_module.library.register_autocast(f"{namespace}::keep", "cpu", lib_module.float64)
        op = getattr(lib_module.ops, namespace).keep
        with lib_module.autocast("cpu"):
            inside = op(lib_module.ones(2))
        outside = op(lib_module.ones(2))
        found = lib_module.library.get_kernel(f"{namespace}::keep", "CPU")
        value = lib_module.full((1,), 4.0)
        keyset = torch._C._dispatch_keys(value) if lib_module is torch else None
        results.append((inside.dtype, outside.dtype, found.call_boxed(keyset, value)))
    assert [str(d).split(".")[-1] for d in results[1][:2]] == \
        [str(d).split(".")[-1] for d in results[0][:2]] == ["float64", "float32"]
    _same(results[1][2], results[0][2])


def test_impl_abstract_warns_and_registers_the_fake_rule():
    namespace = _namespace()
    ember.library.define(f"{namespace}::rows", "(Tensor x) -> Tensor")
    ember.library.impl(f"{namespace}::rows", "cpu", lambda x: x.sum(1))
    with pytest.warns(DeprecationWarning, match="register_fake"):
        ember.library.impl_abstract(f"{namespace}::rows", lambda x: x.new_empty(x.shape[0]))
    result = getattr(ember.ops, namespace).rows(ember.empty(3, 5, device="meta"))
    assert tuple(result.shape) == (3,)


def test_unbuildable_names_say_what_to_use():
    with pytest.raises(NotImplementedError, match="custom_op"):
        ember.library.triton_op("x::y", mutates_args=())
    with pytest.raises(NotImplementedError, match="custom_op"):
        ember.library.wrap_triton(object())
    with pytest.raises(NotImplementedError, match="__torch_function__"):
        ember.library.register_torch_dispatch("x::y", object)
    with pytest.raises(NotImplementedError, match="TorchFunctionMode"):
        ember.library.Library("aten", "IMPL").impl("div.Tensor", lambda a, b: a, "CPU")
    with pytest.raises(NotImplementedError, match="new_dynamic_size"):
        ember.library.FakeImplCtx(ember.library.CustomOpDef).new_dynamic_size() \
            if False else _dynamic_size_in_fake_rule()


def _dynamic_size_in_fake_rule():
    namespace = _namespace()
    ember.library.define(f"{namespace}::nz", "(Tensor x) -> Tensor")
    ember.library.impl(f"{namespace}::nz", "cpu", lambda x: x.nonzero())
    ember.library.register_fake(
        f"{namespace}::nz",
        lambda x: x.new_empty(ember.library.get_ctx().new_dynamic_size(), 1))
    getattr(ember.ops, namespace).nz(ember.empty(3, device="meta"))


def test_every_torch_library_name_exists():
    assert set(torch.library.__all__) <= set(dir(ember.library))
