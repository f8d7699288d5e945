"""Catalogs: environments built from task collections people already have, served with no code
from the user. :mod:`envworker.catalogs.reasoning_gym` serves reasoning-gym's datasets
(``npx envworker serve reasoning-gym``; docs/reasoning-gym.md).
"""
