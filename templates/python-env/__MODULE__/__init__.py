"""The __NAME__ environment (see env.py). `npx envworker serve .` serves it."""

from .env import environment

__all__ = ["environment"]
