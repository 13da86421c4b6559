"""``ember.profiler.python_tracer``: torch's helper locating Python frames for its C++ tracer
(no public names; ember's profiler records Python-level ranges itself).

Example::

    >>> import ember.profiler.python_tracer
"""
