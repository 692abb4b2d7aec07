"""API for Gastric-X cases, CT volumes and their boxes (3D on volumes, 2D on images)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotations.access import ROLES, HasRole
from annotations.models import Box, BoxLabel
from annotations.selectors import cases as selectors
from annotations.selectors import visibility
from annotations.services import boxes as box_services
from annotations.services.boxes import CT_LABELS

ANY_ROLE = [HasRole.of(*ROLES)]


class VolumeOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    case = serializers.IntegerField(source="case_id")
    phase = serializers.CharField()
    shape = serializers.ListField(child=serializers.IntegerField(), help_text="(z, y, x)")
    spacing = serializers.ListField(child=serializers.FloatField(), help_text="(x, y, z) mm")
    origin = serializers.ListField(child=serializers.FloatField(), help_text="LPS mm")
    direction = serializers.ListField(child=serializers.FloatField(), help_text="row-major 3×3")
    hu_min = serializers.IntegerField()
    hu_max = serializers.IntegerField()
    series_uid = serializers.CharField(help_text="pseudonymised on import")


class BoxOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    volume = serializers.IntegerField(source="volume_id", allow_null=True)
    phase = serializers.SerializerMethodField()
    image = serializers.SerializerMethodField()
    label = serializers.CharField()
    voxel = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="3D: [x0, y0, z0, x1, y1, z1]; 2D: [x0, y0, x1, y1]; end-exclusive",
    )
    mm = serializers.ListField(
        child=serializers.ListField(child=serializers.FloatField()),
        allow_null=True,
        help_text="LPS mm of the centres of the first and last voxel (3D only)",
    )
    source = serializers.CharField()
    state = serializers.CharField()
    version = serializers.IntegerField()
    author = serializers.SerializerMethodField()

    def get_phase(self, box: Box) -> str | None:
        return box.volume.phase if box.volume_id else None

    def get_image(self, box: Box) -> str | None:
        return box.image.sha256 if box.image_id else None

    def get_author(self, box: Box) -> str:
        return box.author.get_username() if box.author else ""


class VolumeDetailApi(APIView):
    """A CT volume's phase, shape and exact patient geometry."""

    permission_classes = ANY_ROLE

    @extend_schema(responses=VolumeOutputSerializer)
    def get(self, request, pk: int):
        volume = visibility.get_volume_for_user_or_404(request.user, pk)
        return Response(VolumeOutputSerializer(volume).data)


class CaseDetailApi(APIView):
    """A case (by its numeric id): stage, reports, indicators, volumes and questions (their
    answers are null while my human-baseline session on the benchmark is open)."""

    permission_classes = ANY_ROLE

    class IndicatorSerializer(serializers.Serializer):
        name = serializers.CharField()
        value = serializers.FloatField(allow_null=True)
        # The value as written when it is not one number ("<0.5"); '' otherwise.
        value_text = serializers.CharField()
        unit = serializers.CharField()
        reference_low = serializers.FloatField(allow_null=True)
        reference_high = serializers.FloatField(allow_null=True)
        out_of_range = serializers.BooleanField()

    class ItemSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        source_index = serializers.IntegerField()
        question = serializers.CharField()
        options = serializers.ListField(child=serializers.CharField(allow_blank=True))
        answer = serializers.SerializerMethodField()
        task = serializers.CharField()
        status = serializers.CharField()
        version = serializers.IntegerField()

        @extend_schema_field(serializers.CharField(allow_null=True))
        def get_answer(self, item) -> str | None:
            return None if self.context.get("gold_hidden") else item.answer

    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        case_id = serializers.CharField()
        benchmark = serializers.CharField(source="benchmark.name")
        tnm = serializers.CharField()
        reports = serializers.DictField(child=serializers.CharField())
        endoscopy_image = serializers.CharField(source="endoscopy_image.sha256", allow_null=True)
        indicators = serializers.SerializerMethodField()
        volumes = serializers.SerializerMethodField()
        items = serializers.SerializerMethodField()

        def get_indicators(self, case) -> list[dict]:
            return CaseDetailApi.IndicatorSerializer(case.indicators.all(), many=True).data

        def get_volumes(self, case) -> list[dict]:
            volumes = selectors.phase_sorted(case.volumes.all())
            return VolumeOutputSerializer(volumes, many=True).data

        def get_items(self, case) -> list[dict]:
            context = {"gold_hidden": case.gold_hidden}
            return CaseDetailApi.ItemSerializer(case.items.all(), many=True, context=context).data

    @extend_schema(responses=OutputSerializer)
    def get(self, request, pk: int):
        case = selectors.case_for_api(request.user, pk)
        return Response(self.OutputSerializer(case).data)


class VolumeBoxesApi(APIView):
    """GET: the boxes of a volume. POST: draw a new 3D box (a reviewer's proposal on a case they
    review, or a curator's), answered with its `mm` corners."""

    permission_classes = ANY_ROLE

    class InputSerializer(serializers.Serializer):
        label = serializers.ChoiceField(choices=CT_LABELS)
        voxel = serializers.ListField(child=serializers.IntegerField(), min_length=6, max_length=6)

    @extend_schema(responses=BoxOutputSerializer(many=True))
    def get(self, request, pk: int):
        volume = visibility.get_volume_for_user_or_404(request.user, pk)
        boxes = visibility.boxes_visible_to(request.user, selectors.volume_boxes(volume))
        return Response(BoxOutputSerializer(boxes, many=True).data)

    @extend_schema(request=InputSerializer, responses={201: BoxOutputSerializer})
    def post(self, request, pk: int):
        data = self._validated(request)
        volume = visibility.get_volume_for_user_or_404(request.user, pk)
        box = box_services.box_create_3d(
            volume=volume, label=data["label"], voxel=data["voxel"], user=request.user
        )
        return Response(BoxOutputSerializer(box).data, status=status.HTTP_201_CREATED)

    def _validated(self, request) -> dict:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data


class ImageBoxesApi(APIView):
    """GET: the 2D boxes of an image. POST: draw one, `box` = [x0, y0, x1, y1] in pixels."""

    permission_classes = ANY_ROLE

    class InputSerializer(serializers.Serializer):
        label = serializers.ChoiceField(choices=BoxLabel.values)
        box = serializers.ListField(child=serializers.IntegerField(), min_length=4, max_length=4)

    @extend_schema(responses=BoxOutputSerializer(many=True))
    def get(self, request, sha256: str):
        image = visibility.get_image_for_user_or_404(request.user, sha256)
        boxes = visibility.boxes_visible_to(request.user, selectors.image_boxes(image))
        return Response(BoxOutputSerializer(boxes, many=True).data)

    @extend_schema(request=InputSerializer, responses={201: BoxOutputSerializer})
    def post(self, request, sha256: str):
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        image = visibility.get_image_for_user_or_404(request.user, sha256)
        box = box_services.box_create_2d(
            image=image,
            label=serializer.validated_data["label"],
            coords=serializer.validated_data["box"],
            user=request.user,
        )
        return Response(BoxOutputSerializer(box).data, status=status.HTTP_201_CREATED)


def _box_or_404(user, pk: int) -> Box:
    boxes = Box.objects.select_related("volume", "image", "author")
    return visibility.get_box_for_user_or_404(user, pk, boxes)


def _box_change(
    request: Request,
    pk: int,
    serializer_class: type[serializers.Serializer],
    service: Callable[..., Box],
    data: dict[str, Any] | None = None,
) -> Response:
    """One write to a box: its input validated, the box loaded through the access check, the
    service called with the input's fields, the box answered."""
    serializer = serializer_class(data=request.data if data is None else data)
    serializer.is_valid(raise_exception=True)
    box = service(box=_box_or_404(request.user, pk), user=request.user, **serializer.validated_data)
    return Response(BoxOutputSerializer(box).data)


class BoxUpdateApi(APIView):
    """PATCH a box's label and/or coordinates, based on `version` (409 if stale): a reviewer's
    own proposal on a case they review, or a curator's correction (`note` says why); else 403.
    DELETE withdraws one's own proposal (`version` in the query or the body; 409 if stale): the
    box stays, withdrawn, with a revision; others' boxes are accepted or rejected, not deleted."""

    permission_classes = ANY_ROLE

    class InputSerializer(serializers.Serializer):
        version = serializers.IntegerField(min_value=1)
        note = serializers.CharField(required=False, allow_blank=True, max_length=500)
        label = serializers.CharField(required=False)
        voxel = serializers.ListField(
            child=serializers.IntegerField(), min_length=4, max_length=6, required=False
        )

    @extend_schema(request=InputSerializer, responses=BoxOutputSerializer)
    def patch(self, request, pk: int):
        return _box_change(request, pk, self.InputSerializer, box_services.box_update)

    class DeleteInputSerializer(serializers.Serializer):
        version = serializers.IntegerField(min_value=1)
        note = serializers.CharField(required=False, allow_blank=True, max_length=500)

    @extend_schema(
        parameters=[OpenApiParameter("version", int, required=False)],
        request=DeleteInputSerializer,
        responses=BoxOutputSerializer,
    )
    def delete(self, request, pk: int):
        data = {**request.query_params.dict(), **(request.data or {})}
        return _box_change(
            request, pk, self.DeleteInputSerializer, box_services.box_withdraw, data=data
        )


class BoxRestoreApi(APIView):
    """Bring back one's own withdrawn proposal (an undone delete), based on `version`."""

    permission_classes = ANY_ROLE

    class InputSerializer(serializers.Serializer):
        version = serializers.IntegerField(min_value=1)

    @extend_schema(request=InputSerializer, responses=BoxOutputSerializer)
    def post(self, request, pk: int):
        return _box_change(request, pk, self.InputSerializer, box_services.box_restore)


class BoxReviewApi(APIView):
    """Accept or reject a box, based on `version` (409 if stale): an adjudicator settling a
    dispute of its case or image, or a curator's correction (`note` says why); else 403."""

    permission_classes = ANY_ROLE

    class InputSerializer(serializers.Serializer):
        version = serializers.IntegerField(min_value=1)
        state = serializers.ChoiceField(choices=["accepted", "rejected"])
        note = serializers.CharField(required=False, allow_blank=True, max_length=500)

    @extend_schema(request=InputSerializer, responses=BoxOutputSerializer)
    def post(self, request, pk: int):
        return _box_change(request, pk, self.InputSerializer, box_services.box_review)


class BoxCopyApi(APIView):
    """Copy a 3D box to another phase of its case through patient coordinates."""

    permission_classes = ANY_ROLE

    class InputSerializer(serializers.Serializer):
        volume = serializers.IntegerField()

    @extend_schema(request=InputSerializer, responses={201: BoxOutputSerializer})
    def post(self, request, pk: int):
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        target = visibility.get_volume_for_user_or_404(
            request.user, serializer.validated_data["volume"]
        )
        box = box_services.box_copy_to_phase(
            box=_box_or_404(request.user, pk), volume=target, user=request.user
        )
        return Response(BoxOutputSerializer(box).data, status=status.HTTP_201_CREATED)
