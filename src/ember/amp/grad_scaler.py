"""``GradScaler``: loss scaling for mixed-precision training, as ``torch.amp.GradScaler``."""

from __future__ import annotations

import enum
import warnings
from collections import defaultdict

from .. import _dtype as dt

__all__ = ["GradScaler", "OptState"]


class OptState(enum.Enum):
    """Where an optimiser is in a scaled step: gradients not yet unscaled, unscaled, stepped.

    Example::

        >>> ember.amp.grad_scaler.OptState.READY.value
        0
    """

    READY = 0
    UNSCALED = 1
    STEPPED = 2


_READY, _UNSCALED, _STEPPED = OptState.READY, OptState.UNSCALED, OptState.STEPPED


def _refresh_per_optimizer_state():
    return {"stage": _READY, "found_inf_per_device": {}}


class GradScaler:
    """Scale the loss so that small float16 gradients do not flush to zero, unscale the
    gradients before the optimizer step, skip steps whose gradients hold inf/NaN, and adapt
    the scale (halved after an overflow, doubled after ``growth_interval`` clean steps).

    ``device='cuda'`` without a GPU warns and disables the scaler (every method is then a
    pass-through), as torch; ``GradScaler('cpu')`` works on the CPU.

    Example::

        >>> scaler = ember.amp.GradScaler("cpu")
        >>> scaler.get_scale()
        65536.0
    """

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0,
                 backoff_factor=0.5, growth_interval=2000, enabled=True):
        self._device = device
        self._enabled = enabled
        if self._device == "cuda" and enabled:
            from .. import cuda

            if not cuda.is_available():
                warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available."
                              "  Disabling.", UserWarning, stacklevel=2)
                self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    # ------------------------------------------------------------ helpers

    def _check_scale_growth_tracker(self, funcname):
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier."
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, dev):
        from ..ops.creation import full

        self._scale = full((), self._init_scale, dtype=dt.float32, device=dev)
        self._growth_tracker = full((), self._init_growth_tracker, dtype=dt.int32, device=dev)

    # ------------------------------------------------------------ the training-loop API

    def scale(self, outputs):
        """Multiply ``outputs`` (a tensor or an iterable of tensors) by the scale factor.

        Example::

            >>> s = ember.amp.GradScaler("cpu", init_scale=4.)
            >>> s.scale(ember.tensor(1.5))
            tensor(6.)
        """
        from .._tensor import Tensor

        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * self._scale.to(device=outputs.device)

        def apply_scale(val):
            if isinstance(val, Tensor):
                if self._scale is None:
                    self._lazy_init_scale_growth_tracker(val.device)
                return val * self._scale.to(device=val.device)
            if isinstance(val, (list, tuple, set)) or (
                    hasattr(val, "__iter__") and not isinstance(val, (str, bytes, dict))):
                iterable = map(apply_scale, val)
                if isinstance(val, (list, tuple)):
                    return type(val)(iterable)
                return iterable
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply_scale(outputs)

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16):
        from ..ops.reduce import all as all_

        per_device = {}
        for group in optimizer.param_groups:
            for param in group["params"]:
                grad = param.grad
                if grad is None:
                    continue
                if not allow_fp16 and grad.dtype is dt.float16:
                    raise ValueError("Attempting to unscale FP16 gradients.")
                key = str(grad.device)
                if key not in per_device:
                    per_device[key] = found_inf.to(device=grad.device).clone()
                finite = all_(grad.detach().isfinite())
                grad.detach().mul_(inv_scale.to(device=grad.device))
                if not bool(finite):
                    per_device[key].fill_(1.0)
        return per_device

    def unscale_(self, optimizer):
        """Divide ``optimizer``'s gradients by the scale in place (once per step), and note
        whether any of them holds inf or NaN.

        Example::

            >>> scaler.unscale_(optimizer)  # doctest: +SKIP
        """
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is _UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since "
                               "the last update().")
        if state["stage"] is _STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        from ..ops.creation import full

        inv_scale = self._scale.double().reciprocal().float()
        found_inf = full((), 0.0, dtype=dt.float32, device=self._scale.device)
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf,
                                                             False)
        state["stage"] = _UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step(*args, **kwargs)``, unscaling first if :meth:`unscale_` was not
        called, and skipped when the gradients hold inf/NaN. Returns what step returned
        (None when skipped).

        Example::

            >>> scaler.step(optimizer)  # doctest: +SKIP
        """
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is _STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is _READY:
            self.unscale_(optimizer)
        if len(state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = None
        if not sum(v.item() for v in state["found_inf_per_device"].values()):
            retval = optimizer.step(*args, **kwargs)
        state["stage"] = _STEPPED
        return retval

    def update(self, new_scale=None):
        """Update the scale: ``new_scale`` if given, else halved (``backoff_factor``) when
        this step found inf/NaN, doubled (``growth_factor``) after ``growth_interval``
        clean steps in a row.

        Example::

            >>> scaler.update()  # doctest: +SKIP
        """
        if not self._enabled:
            return
        scale, tracker = self._check_scale_growth_tracker("update")
        from .._tensor import Tensor

        if new_scale is not None:
            if isinstance(new_scale, float):
                self._scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                          "torch.FloatTensor with requires_grad=False.")
                if not (isinstance(new_scale, Tensor) and new_scale.device.type == self._device
                        and new_scale.numel() == 1 and not new_scale.requires_grad):
                    raise AssertionError(reason)
                self._scale.copy_(new_scale.reshape(()))
        else:
            found_infs = [f for state in self._per_optimizer_states.values()
                          for f in state["found_inf_per_device"].values()]
            if len(found_infs) == 0:
                raise AssertionError("No inf checks were recorded prior to update.")
            found_inf = sum(f.item() for f in found_infs)
            if found_inf:
                scale.mul_(self._backoff_factor)
                tracker.fill_(0)
            else:
                successful = int(tracker.item()) + 1
                if successful == self._growth_interval:
                    grown = scale * self._growth_factor
                    if bool(grown.isfinite()):
                        scale.copy_(grown)
                    tracker.fill_(0)
                else:
                    tracker.fill_(successful)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    # ------------------------------------------------------------ accessors and state

    def _get_scale_async(self):
        return self._scale

    def get_scale(self):
        """The current scale as a Python float (1.0 when disabled).

        Example::

            >>> ember.amp.GradScaler("cpu", init_scale=8.).get_scale()
            8.0
        """
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale.item()

    def get_growth_factor(self):
        """The factor the scale grows by."""
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        """Set the factor the scale grows by."""
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        """The factor the scale shrinks by after an overflow."""
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        """Set the factor the scale shrinks by after an overflow."""
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        """How many clean steps in a row grow the scale."""
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        """Set how many clean steps in a row grow the scale."""
        self._growth_interval = new_interval

    def _get_growth_tracker(self):
        if not self._enabled:
            return 0
        if self._growth_tracker is None:
            return self._init_growth_tracker
        return int(self._growth_tracker.item())

    def is_enabled(self):
        """Whether the scaler is on (False after disabling itself without a GPU)."""
        return self._enabled

    def state_dict(self):
        """The scaler's state (empty when disabled).

        Example::

            >>> ember.amp.GradScaler("cpu").state_dict()["scale"]
            65536.0
        """
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict):
        """Restore a state from :meth:`state_dict`."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self):
        state = self.__dict__.copy()
        if self._enabled:
            state["_per_optimizer_states"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if self._enabled:
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)
