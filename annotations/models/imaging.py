from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


def image_upload_path(instance: Image, filename: str) -> str:
    # Content-addressed: the same bytes are stored once, whatever they were called. One level
    # of 256 folders: a second level cost an import a new folder per image (earlier images keep
    # their stored names).
    digest = instance.sha256
    return f"images/{digest[:2]}/{digest}.{instance.extension}"


class Image(models.Model):
    """A 2D image file, stored once by the sha256 of its bytes (never base64 in a row)."""

    sha256 = models.CharField(max_length=64, unique=True)
    file = models.FileField(upload_to=image_upload_path, max_length=255)
    format = models.CharField(max_length=10)  # JPEG, PNG, ...
    width = models.PositiveIntegerField()
    height = models.PositiveIntegerField()
    size_bytes = models.PositiveBigIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.sha256[:12]} {self.format} {self.width}x{self.height}"

    @property
    def extension(self) -> str:
        return {"JPEG": "jpg", "PNG": "png"}.get(self.format, self.format.lower() or "bin")

    @property
    def content_type(self) -> str:
        return {"JPEG": "image/jpeg", "PNG": "image/png"}.get(
            self.format, "application/octet-stream"
        )


class Phase(models.TextChoices):
    NON_CONTRAST = "non_contrast", _("Non-contrast")
    ARTERIAL = "arterial", _("Arterial")
    VENOUS = "venous", _("Venous")
    DELAYED = "delayed", _("Delayed")


class Volume(models.Model):
    """One CT series of a case, de-identified, with its voxels cached for fast slicing.

    Geometry is kept exactly as DICOM/NIfTI gives it (SimpleITK's LPS convention): voxel index
    (x, y, z) maps to origin + direction · (index × spacing).
    """

    case = models.ForeignKey("annotations.Case", on_delete=models.CASCADE, related_name="volumes")
    phase = models.CharField(max_length=20, choices=Phase.choices)
    size_x = models.PositiveIntegerField()
    size_y = models.PositiveIntegerField()
    size_z = models.PositiveIntegerField()
    spacing = models.JSONField()  # [sx, sy, sz] mm
    origin = models.JSONField()  # [ox, oy, oz] mm, LPS
    direction = models.JSONField()  # 9 floats, row-major 3x3
    # The stored voxels, relative to MEDIA_ROOT: a folder of chunks (imaging.chunks), or an
    # int16 (z, y, x) .npy of a volume imported before them (manage.py store_volumes_once).
    cache_path = models.CharField(max_length=255)
    # De-identified series folder: DICOM headers without pixels (or whole, before chunks).
    dicom_path = models.CharField(max_length=255, blank=True)
    series_uid = models.CharField(max_length=128, blank=True)  # pseudonymised UID
    hu_min = models.IntegerField(default=-1024)
    hu_max = models.IntegerField(default=3071)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["case", "phase"]
        constraints = [
            models.UniqueConstraint(fields=["case", "phase"], name="volume_unique_phase_per_case")
        ]

    def __str__(self) -> str:
        return f"{self.case} {self.phase}"

    @property
    def shape(self) -> tuple[int, int, int]:
        """Array shape of the cached voxels: (z, y, x)."""
        return (self.size_z, self.size_y, self.size_x)

    @property
    def geometry(self) -> dict:
        return {"spacing": self.spacing, "origin": self.origin, "direction": self.direction}


class BoxLabel(models.TextChoices):
    TUMOR = "tumor", _("Tumor")
    LYMPH_NODE = "lymph_node", _("Lymph node")
    STOMACH = "stomach", _("Stomach")
    LESION = "lesion", _("Lesion")
    POLYP = "polyp", _("Polyp")
    INSTRUMENT = "instrument", _("Instrument")
    OTHER = "other", _("Other")


class BoxState(models.TextChoices):
    PROPOSED = "proposed", _("Proposed")
    ACCEPTED = "accepted", _("Accepted")
    REJECTED = "rejected", _("Rejected")
    WITHDRAWN = "withdrawn", _("Withdrawn")


class BoxQuerySet(models.QuerySet):
    def kept(self) -> BoxQuerySet:
        """Boxes a release or an export carries: neither rejected nor withdrawn by their author."""
        return self.exclude(state__in=Box.LEFT_OUT)


class Box(models.Model):
    """A 2D box on an image (pixels) or a 3D box on a volume (voxel ranges, end exclusive).

    3D boxes also carry their millimetre corners in patient LPS coordinates: the centres of voxel
    (x0, y0, z0) and of voxel (x1-1, y1-1, z1-1), computed from the volume's geometry.
    """

    image = models.ForeignKey(
        Image, null=True, blank=True, on_delete=models.CASCADE, related_name="boxes"
    )
    volume = models.ForeignKey(
        Volume, null=True, blank=True, on_delete=models.CASCADE, related_name="boxes"
    )
    item = models.ForeignKey(
        "annotations.Item", null=True, blank=True, on_delete=models.CASCADE, related_name="boxes"
    )
    label = models.CharField(max_length=20, choices=BoxLabel.choices)
    x0 = models.IntegerField()
    y0 = models.IntegerField()
    x1 = models.IntegerField()
    y1 = models.IntegerField()
    z0 = models.IntegerField(null=True, blank=True)
    z1 = models.IntegerField(null=True, blank=True)
    mm = models.JSONField(null=True, blank=True)  # [[x, y, z], [x, y, z]] LPS mm, 3D only
    source = models.CharField(max_length=20, default="drawn")  # imported / drawn / copied
    state = models.CharField(max_length=20, choices=BoxState.choices, default=BoxState.PROPOSED)
    version = models.PositiveIntegerField(default=1)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = BoxQuerySet.as_manager()

    # States whose boxes releases, exports and counts leave out.
    LEFT_OUT = (BoxState.REJECTED, BoxState.WITHDRAWN)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(
                condition=(
                    models.Q(image__isnull=False, volume__isnull=True)
                    | models.Q(image__isnull=True, volume__isnull=False)
                ),
                name="box_on_image_or_volume",
            ),
            models.CheckConstraint(
                condition=models.Q(x1__gt=models.F("x0"), y1__gt=models.F("y0")),
                name="box_non_empty",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.label} {self.voxel}"

    @property
    def is_3d(self) -> bool:
        return self.volume_id is not None

    @property
    def voxel(self) -> list[int]:
        if self.is_3d:
            assert self.z0 is not None and self.z1 is not None  # a volume's box has its slices
            return [self.x0, self.y0, self.z0, self.x1, self.y1, self.z1]
        return [self.x0, self.y0, self.x1, self.y1]


class BoxRevision(models.Model):
    """Every change of a box: its coordinates and state as they were after the change."""

    box = models.ForeignKey(Box, on_delete=models.CASCADE, related_name="revisions")
    version = models.PositiveIntegerField()
    coords = models.JSONField()
    mm = models.JSONField(null=True, blank=True)
    label = models.CharField(max_length=20)
    state = models.CharField(max_length=20)
    reason = models.CharField(max_length=40)  # drawn / edited / copied / accepted / rejected …
    note = models.TextField(blank=True)  # why: the adjudicated item, a curator's explanation
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["box", "version"]
        constraints = [
            models.UniqueConstraint(fields=["box", "version"], name="box_revision_unique_version")
        ]
