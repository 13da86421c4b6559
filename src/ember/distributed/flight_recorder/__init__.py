"""``torch.distributed.flight_recorder``: torch's analyser of NCCL flight-recorder dumps
(``fr_trace``). ember's collectives write no flight-recorder dumps, so there is nothing for
it to read; :func:`fr_trace.main` raises ``NotImplementedError``.
"""
