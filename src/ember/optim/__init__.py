"""Optimisers (``ember.optim``), learning-rate schedules (``ember.optim.lr_scheduler``) and
stochastic weight averaging (``ember.optim.swa_utils``), with torch's API and update rules.

Example::

    >>> opt = ember.optim.Adam(model.parameters(), lr=1e-3)
    >>> sched = ember.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)
    >>> for x, y in data:
    ...     opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    ...     sched.step()
"""

from __future__ import annotations

from . import lr_scheduler, swa_utils
from ._muon import Muon
from ._stateless import swap_in_optimizer_params_and_state
from .adadelta import Adadelta
from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam
from .adamax import Adamax
from .adamw import AdamW
from .asgd import ASGD
from .lbfgs import LBFGS
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD
from .sparse_adam import SparseAdam

__all__ = ["Adadelta", "Adafactor", "Adagrad", "Adam", "AdamW", "Adamax", "ASGD", "LBFGS", "NAdam",
           "Optimizer", "RAdam", "RMSprop", "Rprop", "SGD", "lr_scheduler", "swa_utils",
           "SparseAdam", "Muon", "swap_in_optimizer_params_and_state"]

# torch names Adafactor torch.optim.Adafactor (its pickled name), not by the file defining it
Adafactor.__module__ = __name__
