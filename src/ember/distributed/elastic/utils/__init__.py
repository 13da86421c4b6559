"""``torch.distributed.elastic.utils``: helpers of the elastic launcher."""

from .api import get_env_variable_or_raise, get_socket_with_port, macros

__all__ = ["get_env_variable_or_raise", "get_socket_with_port", "macros"]
