"""Providers carry a decision out: ``LocalProvider`` (processes), ``DigitalOceanProvider`` (droplets)."""

from autoscaler.providers.base import Provider
from autoscaler.providers.digitalocean import DigitalOceanProvider
from autoscaler.providers.local import LocalProvider

__all__ = ["DigitalOceanProvider", "LocalProvider", "Provider"]
