"""Size the pool of Celery workers (builds, smoke tests, duels) from the database's queue.

``policy.decide`` is a pure function of a queue snapshot and the current workers; providers carry the
decision out (``providers.local``: worker processes on this machine; ``providers.digitalocean``: droplets).
"""
