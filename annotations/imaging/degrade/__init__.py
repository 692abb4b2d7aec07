"""The 18 MedQ-DEG-Bench degradations, reproducible from a seed.

The benchmark does not publish its simulation parameters; ours are explicit and returned
by `apply` so that every degraded image can be stored with how it was made.
"""

from __future__ import annotations

from ._common import DegradationError
from ._core import KINDS, MODALITIES, SEVERITIES, apply, kinds_for_modality

__all__ = ["KINDS", "MODALITIES", "SEVERITIES", "DegradationError", "apply", "kinds_for_modality"]
