"""Activation checkpointing wrappers (see ``checkpoint_wrapper``)."""
