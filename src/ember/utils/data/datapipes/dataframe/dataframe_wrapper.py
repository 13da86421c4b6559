"""``ember.utils.data.datapipes.dataframe.dataframe_wrapper``: not implemented in ember.

Each raises ``NotImplementedError`` naming the torch API (see ``_unsupported``).
"""

from ._unsupported import unsupported_class, unsupported_function

_HERE = "torch.utils.data.datapipes.dataframe.dataframe_wrapper"


def _class(name):
    return unsupported_class(f"{_HERE}.{name}")


def _function(name):
    return unsupported_function(f"{_HERE}.{name}")


PandasWrapper = _class("PandasWrapper")
concat = _function("concat")
create_dataframe = _function("create_dataframe")
default_wrapper = _function("default_wrapper")
get_columns = _function("get_columns")
get_df_wrapper = _function("get_df_wrapper")
get_item = _function("get_item")
get_len = _function("get_len")
is_column = _function("is_column")
is_dataframe = _function("is_dataframe")
iterate = _function("iterate")
set_df_wrapper = _function("set_df_wrapper")

__all__ = ["PandasWrapper", "concat", "create_dataframe", "default_wrapper", "get_columns",
           "get_df_wrapper", "get_item", "get_len", "is_column", "is_dataframe",
           "iterate", "set_df_wrapper"]
