"""``mx.mod``: MXNet's Module API over ferromx's symbol executor (one context)."""

from .module import BaseModule, Module

__all__ = ["BaseModule", "Module"]
