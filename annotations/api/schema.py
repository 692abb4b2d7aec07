from __future__ import annotations

from drf_spectacular.openapi import AutoSchema


class ClinReviewAutoSchema(AutoSchema):
    """Names schema components after their view, so nested Input/Output serializers stay unique.

    The house style nests `InputSerializer`/`OutputSerializer` in each API view; by class name alone
    every view's "Input" would collide in the OpenAPI components.
    """

    def get_serializer_name(self, serializer, direction) -> str:
        cls = serializer.__class__
        qualified = cls.__qualname__.replace("Serializer", "").replace(".", "")
        return qualified if "." in cls.__qualname__ else cls.__name__
