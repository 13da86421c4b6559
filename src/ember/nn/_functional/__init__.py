"""Implementation files of ``ember.nn.functional``, one per family."""
