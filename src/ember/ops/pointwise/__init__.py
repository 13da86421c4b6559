"""Pointwise operators: arithmetic, comparisons, logic and elementwise math.

Each operator is one :class:`~ember.ops._registry.Op` (kernel on the array module ``xp``,
meta rule, derivative written with ember operators) plus its public function, its in-place
``name_`` method and, where Python has one, its operator dunder. Unary math ops are declared
with :func:`unary` and simple binary ones with :func:`binary`; the rest are
written out.

Dtype rules follow torch: ``promote="float"`` ops turn bool and integer inputs into the default
float dtype; ``deny`` names the dtype groups an op refuses (``b`` bool, ``i`` integers, ``h``
float16/bfloat16, ``f`` float32/float64, ``c`` complex), with torch's exception type
(``NotImplementedError`` for a missing kernel). float16 and bfloat16 are computed in float32
and rounded back, as torch's CPU kernels do.

The package's modules, one family each: ``_declare`` (the dtype checks and the declaration
helpers), ``arithmetic``, ``complex_parts``, ``comparison``, ``unary_math``, ``binary_math``
and ``dunders`` (Tensor's operators). Every public name is re-exported here
(``ember.ops.pointwise.add``).
"""

from __future__ import annotations

from . import (  # noqa: F401
    arithmetic,
    binary_math,
    comparison,
    complex_parts,
    dunders,
    unary_math,
)
from ._declare import (  # noqa: F401  (the helpers other families and ember.special use)
    _F32,
    _F64,
    _LOW,
    Tensor,
    _bool_meta,
    _check_dtype,
    _check_tensor,
    _inplace_method,
    _is_scalar,
    _low_precision,
    _not_differentiable,
    _same_shape_meta,
    _special,
    _zeros_like,
    binary,
    binary_operands,
    declarers,
    unary,
    unary_op,
    unary_operand,
)
from .arithmetic import *  # noqa: F403
from .arithmetic import (  # noqa: F401  (the Op objects, ember.ops.pointwise.<name>_op)
    add_op,
    div_floor_op,
    div_op,
    div_trunc_op,
    floor_divide_op,
    frexp_op,
    lerp_op,
    mul_op,
    neg_op,
    pow_op,
    sub_op,
)
from .binary_math import *  # noqa: F403
from .binary_math import (  # noqa: F401  (the Op objects, ember.ops.pointwise.<name>_op)
    declare_x_log,  # noqa: F401  (ember.special.xlog1py)
    heaviside_op,
)
from .comparison import *  # noqa: F403
from .comparison import (  # noqa: F401  (the Op objects, ember.ops.pointwise.<name>_op)
    clamp_op,
    fmax_op,
    fmin_op,
    isclose_op,
    isin_op,
    maximum_op,
    minimum_op,
    where_op,
)
from .complex_parts import *  # noqa: F403
from .complex_parts import (  # noqa: F401  (the Op objects, ember.ops.pointwise.<name>_op)
    conj_op,
    imag_op,
    real_op,
    view_as_complex_op,
    view_as_real_op,
)
from .unary_math import *  # noqa: F403
from .unary_math import (  # noqa: F401  (the Op objects, ember.ops.pointwise.<name>_op)
    _RELU_FUSION,  # noqa: F401  (nn.functional.relu fuses as relu)
    logit_op,
    nan_to_num_op,
    polygamma_op,
    round_op,
)

__all__ = [*arithmetic.__all__, *complex_parts.__all__, *comparison.__all__,
           *unary_math.__all__, *binary_math.__all__]
