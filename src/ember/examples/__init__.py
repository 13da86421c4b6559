"""Runnable examples that ship with ember (``python -m ember.examples.digits``)."""
