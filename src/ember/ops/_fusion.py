"""Fusion rules: how an element-wise op runs as one step of a fused chain (``Op.fuse``).

``ember.jit.optimize_for_inference`` and ``ember.compile`` replace a chain of element-wise
float32/float64 ops by one kernel that computes every step into one buffer. Each op says
how it takes part, next to its definition:

* ``fuse="exp"``: the op is one array-module function, run as ``xp.exp(*args, out=out)``;
* ``fuse=Fusion(step, ...)``: a step written by hand, ``step(xp, args, out)``, which computes
  the op element by element into ``out`` (a new array when ``out`` is None) and returns it.

A rule may also say which parameters it accepts (``accepts(params)``; by default none: the
op fuses only when called without parameters) and how to differentiate one step on arrays
(``grad``, for training through a fused chain, see ``ember/_inductor/fusion.py``). A step
must give exactly what the op's kernel gives for float32 and float64 operands.

Example::

    >>> rule = Fusion("exp", 1)
    >>> rule.step(np, [np.zeros(2)], None)
    array([1., 1.])
"""

from __future__ import annotations

__all__ = ["Fusion", "decline", "fusion_rule", "unit_alpha"]

# Why a pointwise op has no fusion rule (``op.opt_out("fuse", reason)``, see :func:`decline`)
BOOL_RESULT = ("a boolean result: a fused chain computes float32/float64 values in one buffer "
               "of its operands' dtype")
INTEGER_ONLY = "integer and bool operands only: fused chains are float32/float64"
OTHER_DTYPE = ("its result's dtype is not its operands' (complex parts, casts, several "
               "outputs): a fused chain keeps one float dtype in one buffer")
SCIPY_KERNEL = ("its kernel is a scipy.special function (cupyx.scipy.special on CUDA), which "
                "the one-function step xp.<name> does not reach: not fused yet")
COMPOSITE_KERNEL = ("its kernel is several array operations or takes parameters: no "
                    "in-place step is written for it yet")

# how many tensor operands an op of each pointwise kind takes
_ARITY = {"pointwise-unary": 1, "pointwise-binary": 2, "pointwise-ternary": 3}


def no_params(params):
    """The default eligibility: the op fuses only when called without parameters."""
    return not params


def unit_alpha(params):
    """The eligibility of ``add``/``sub``: no parameter but ``alpha``, and that the int 1.

    Example::

        >>> unit_alpha({}), unit_alpha({"alpha": 1}), unit_alpha({"alpha": 2.0})
        (True, True, False)
    """
    alpha = params.get("alpha", 1)
    return type(alpha) is int and alpha == 1 and params.keys() <= {"alpha"}


def _ufunc_step(name, arity):
    """The step ``xp.<name>(*args, out=out)`` of an op that is one array-module function."""
    if arity == 1:
        return lambda xp, args, out: getattr(xp, name)(args[0], out=out)
    if arity == 2:
        return lambda xp, args, out: getattr(xp, name)(args[0], args[1], out=out)
    return lambda xp, args, out: getattr(xp, name)(*args, out=out)


class Fusion:
    """An op's fusion rule (see the module docstring).

    ``step`` is ``step(xp, args, out) -> out``, or the name of an array-module function;
    ``arity`` the number of tensor operands (None: from the op's kind, filled in by
    :func:`fusion_rule`); ``accepts(params)`` whether a call with these parameters may fuse;
    ``grad(xp, g, args, out, wants)`` (optional) the gradients of one step for the operands
    ``wants`` marks (None for the others), given the output's gradient ``g``, the operands and
    the step's result; every array it returns is new, except ``g`` itself.

    Example::

        >>> double = Fusion(lambda xp, args, out: xp.multiply(args[0], 2, out=out), 1,
        ...                 grad=lambda xp, g, args, out, wants: (g * 2,))
        >>> double.step(np, [np.ones(2)], None)
        array([2., 2.])
    """

    __slots__ = ("step", "arity", "accepts", "grad", "ufunc")

    def __init__(self, step, arity=None, *, accepts=no_params, grad=None):
        self.ufunc = step if isinstance(step, str) else None
        self.step = step if self.ufunc is None else (
            None if arity is None else _ufunc_step(step, arity))
        self.arity = arity
        self.accepts = accepts
        self.grad = grad

    def for_arity(self, arity):
        """This rule with ``arity`` operands (a copy when it had none)."""
        if self.arity == arity:
            return self
        if self.arity is not None:
            raise ValueError(f"a fusion rule for {self.arity} operands given to an op with "
                             f"{arity}")
        return Fusion(self.ufunc or self.step, arity, accepts=self.accepts, grad=self.grad)

    def __repr__(self):
        return f"<fusion {self.ufunc or getattr(self.step, '__name__', 'step')}/{self.arity}>"


def decline(reason, *declared, namespace=None):
    """Opt each op in ``declared`` (an :class:`~ember.ops._registry.Op`, a public function
    with its ``op``, or the name of one in ``namespace``) out of fusion, for ``reason``.

    Example::

        >>> decline(SCIPY_KERNEL, erf_op, "erfc", namespace=globals())
    """
    for item in declared:
        if isinstance(item, str):
            item = namespace[item]
        getattr(item, "op", item).opt_out("fuse", reason)


def fusion_rule(spec, kind, name):
    """The :class:`Fusion` an op declares with ``fuse=spec`` (a name, a rule or None).

    Example::

        >>> fusion_rule("exp", "pointwise-unary", "exp")
        <fusion exp/1>
    """
    if spec is None:
        return None
    arity = _ARITY.get(kind)
    if arity is None:
        raise ValueError(f"op {name}: only pointwise ops fuse, not kind {kind!r}")
    rule = spec if isinstance(spec, Fusion) else Fusion(spec)
    return rule.for_arity(arity)
