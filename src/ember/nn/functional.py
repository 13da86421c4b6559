"""``ember.nn.functional``: the stateless form of every layer, loss and activation.

Each family lives in ``ember/nn/_functional/<family>.py``; this module re-exports them all.
"""

from __future__ import annotations

from .. import overrides as _overrides  # noqa: E402
from ..ops.shape import pad  # noqa: F401  (torch.nn.functional.pad)
from . import grad  # noqa: E402,F401  (torch.nn.functional.grad is the torch.nn.grad module)
from ._functional.activation import *  # noqa: F403
from ._functional.attention import *  # noqa: F403
from ._functional.conv import *  # noqa: F403
from ._functional.distance import *  # noqa: F403
from ._functional.dropout import *  # noqa: F403
from ._functional.embedding import *  # noqa: F403
from ._functional.extras import *  # noqa: F403
from ._functional.extras import (  # noqa: F401  (torch.nn.functional re-exports these)
    TYPE_CHECKING,
    BroadcastingList1,
    BroadcastingList2,
    BroadcastingList3,
    Tensor,
    boolean_dispatch,
)
from ._functional.fractional_pooling import *  # noqa: F403
from ._functional.linear import *  # noqa: F403
from ._functional.linear_cross_entropy import *  # noqa: F403
from ._functional.loss import *  # noqa: F403
from ._functional.normalization import *  # noqa: F403
from ._functional.pooling import *  # noqa: F403
from ._functional.softmax import *  # noqa: F403
from ._functional.vision import *  # noqa: F403

handle_torch_function = _overrides.handle_torch_function
has_torch_function = _overrides.has_torch_function
has_torch_function_unary = _overrides.has_torch_function_unary
has_torch_function_variadic = _overrides.has_torch_function_variadic
