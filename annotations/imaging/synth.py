"""Synthetic endoscopy-like frames and ultrasound images for demo data.

Nothing here pretends to be a simulator: the goal is pictures a clinician recognises at a glance
(mucosa under a point light, folds, vessels, a dark lumen, the round field of view of a scope) and
whose content is known exactly, so that generated questions have answers that are really right.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont
from scipy import ndimage

SCENES = ("gastroscopy", "colonoscopy", "capsule endoscopy", "surgery")
FINDINGS = ("normal", "polyp", "ulcer", "bleeding")
PROMPT_KINDS = ("box", "circle", "arrow", "point")

# (shadow, mid, light) colours of the tissue per scene: shadows of wet mucosa turn deep red,
# lit areas pink-orange; the capsule camera's white balance gives a yellow-green cast.
_PALETTES: dict[str, tuple[tuple[int, int, int], ...]] = {
    "gastroscopy": ((70, 14, 12), (185, 78, 62), (246, 170, 140)),
    "colonoscopy": ((80, 20, 18), (198, 100, 80), (250, 188, 160)),
    "capsule endoscopy": ((48, 36, 8), (160, 128, 52), (226, 206, 120)),
    "surgery": ((60, 18, 14), (170, 70, 52), (238, 160, 130)),
}


@dataclass
class SynthFrame:
    """A generated frame and what is drawn in it (pixel boxes are [x0, y0, x1, y1])."""

    pixels: np.ndarray
    scene: str
    finding: str
    finding_bbox: list[int] | None = None
    instrument_count: int = 0
    instrument_bboxes: list[list[int]] = field(default_factory=list)
    field_of_view: str = "circle"


def endoscopy_frame(
    rng: np.random.Generator,
    size: tuple[int, int] = (448, 448),
    *,
    scene: str,
    finding: str | None,
) -> np.ndarray:
    """Return an (H, W, 3) uint8 endoscopy-like frame of `scene` showing `finding`."""
    return endoscopy_scene(rng, size, scene=scene, finding=finding).pixels


def endoscopy_scene(
    rng: np.random.Generator,
    size: tuple[int, int] = (448, 448),
    *,
    scene: str,
    finding: str | None,
) -> SynthFrame:
    """Like `endoscopy_frame`, but also say where the finding and instruments were drawn."""
    scene = _normalise_scene(scene)
    finding = finding or "normal"
    if finding not in FINDINGS:
        raise ValueError(f"unknown finding {finding!r}; expected one of {FINDINGS}")
    height, width = size
    if scene == "surgery":
        frame = _surgical_frame(rng, height, width)
    else:
        frame = _luminal_frame(rng, height, width, scene, finding)
    fov = (
        "circle" if scene in ("capsule endoscopy", "surgery") else rng.choice(["circle", "octagon"])
    )
    frame.field_of_view = str(fov)
    radius_scale = 0.62 if scene == "surgery" else 0.485
    frame.pixels = _apply_field_of_view(frame.pixels, frame.field_of_view, radius_scale)
    if scene == "capsule endoscopy":
        frame.pixels = _capsule_overlay(rng, frame.pixels)
    return frame


def _normalise_scene(scene: str) -> str:
    name = scene.strip().lower()
    if name in ("capsule", "wce", "capsule endoscopy"):
        return "capsule endoscopy"
    if name not in SCENES:
        raise ValueError(f"unknown scene {scene!r}; expected one of {SCENES}")
    return name


def smooth_noise(
    rng: np.random.Generator, shape: tuple[int, int], scales: tuple[float, ...] = (64, 16, 4)
) -> np.ndarray:
    """Fractal value noise: bicubic-upsampled random grids, one octave per scale (pixels)."""
    height, width = shape
    total = np.zeros(shape, dtype=np.float32)
    weight = 1.0
    for scale in scales:
        grid = rng.standard_normal(
            (max(2, int(height / scale) + 2), max(2, int(width / scale) + 2))
        ).astype(np.float32)
        image = Image.fromarray(grid, mode="F").resize((width, height), Image.Resampling.BICUBIC)
        total += weight * np.asarray(image, dtype=np.float32)
        weight *= 0.5
    total -= total.mean()
    return total / (total.std() + 1e-6)


def _luminal_frame(
    rng: np.random.Generator, height: int, width: int, scene: str, finding: str
) -> SynthFrame:
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    lumen = np.array([rng.uniform(0.25, 0.75) * width, rng.uniform(0.25, 0.7) * height])
    warp = smooth_noise(rng, (height, width), (96, 32))
    dist = np.hypot(xx - lumen[0], yy - lumen[1]) / max(height, width)
    dist = np.clip(dist + 0.025 * warp, 0.0, None)
    shade = _shading(_fold_height(rng, dist, xx, yy, lumen, scene))
    finding_bbox, finding_mask = None, None
    if finding != "normal":
        finding_bbox, finding_mask, bump = _finding_shape(rng, height, width, lumen, finding)
        shade = np.clip(shade + _shading(bump, gain=14.0, blur=2.0) + _contact_shadow(bump), -1, 1)
    brightness = 1.0 - np.exp(-((dist / 0.16) ** 2))
    brightness *= 0.75 + 0.25 * np.clip(1.0 - dist, 0.0, 1.0)
    texture = smooth_noise(rng, (height, width), (24, 6, 2))
    tone = np.clip(brightness * (0.72 + 0.35 * shade) + 0.04 * texture, 0.0, 1.0)
    rgb = _colourise(tone, _PALETTES[scene])
    rgb = _draw_vessels(rng, rgb, count=int(rng.integers(5, 11)))
    if finding_mask is not None:
        rgb = _paint_finding(rng, rgb, finding, finding_mask, tone)
    rgb = _specular_highlights(rng, rgb, shade * brightness, count=int(rng.integers(6, 16)))
    pixels = np.clip(rgb, 0, 255).astype(np.uint8)
    return SynthFrame(pixels=pixels, scene=scene, finding=finding, finding_bbox=finding_bbox)


def _fold_height(
    rng: np.random.Generator,
    dist: np.ndarray,
    xx: np.ndarray,
    yy: np.ndarray,
    lumen: np.ndarray,
    scene: str,
) -> np.ndarray:
    shape = dist.shape
    if scene == "colonoscopy":
        # Haustral folds: rings around the lumen, closer together as they recede.
        rings = np.sin(2 * np.pi * 5.5 * np.sqrt(dist + 1e-3) + rng.uniform(0, 2 * np.pi))
        return 0.9 * np.clip(rings, -0.2, 1.0) ** 3 + 0.06 * smooth_noise(rng, shape, (48, 12))
    angle = np.arctan2(yy - lumen[1], xx - lumen[0])
    if scene == "gastroscopy":
        # Gastric rugae run radially towards the lumen, slightly tortuous.
        wobble = 0.6 * smooth_noise(rng, shape, (80, 40))
        rugae = np.cos(7 * angle + wobble * 2.0)
        return 0.7 * np.clip(rugae, 0.0, 1.0) ** 2 * np.clip(dist * 4, 0, 1) + 0.07 * smooth_noise(
            rng, shape, (40, 10)
        )
    # Small bowel seen by a capsule: villous, finely granular, with low circular folds.
    villi = smooth_noise(rng, shape, (5, 2.5))
    folds = np.sin(2 * np.pi * 3.0 * np.sqrt(dist + 1e-3) + 0.5 * np.cos(3 * angle))
    return 0.35 * np.clip(folds, 0, 1) + 0.05 * villi


def _shading(height_map: np.ndarray, gain: float = 18.0, blur: float = 1.2) -> np.ndarray:
    # The light sits on the scope tip, a little above the lens: slopes facing up-left glow.
    gy, gx = np.gradient(ndimage.gaussian_filter(height_map, blur))
    shade = -(gx * 0.6 + gy * 0.8) * gain
    return np.tanh(shade).astype(np.float32)


def _contact_shadow(bump: np.ndarray) -> np.ndarray:
    # A raised lesion hides the mucosa just behind it from the light: a soft crescent shadow.
    if bump.max() <= 0.2:
        return np.zeros_like(bump)
    footprint = (bump > 0.05).astype(np.float32)
    behind = ndimage.shift(footprint, (5, 4), order=0)
    return -0.8 * ndimage.gaussian_filter(np.clip(behind - footprint, 0, 1), 3.0)


def _colourise(tone: np.ndarray, palette: tuple[tuple[int, int, int], ...]) -> np.ndarray:
    shadow, mid, light = (np.array(c, dtype=np.float32) for c in palette)
    low = np.clip(tone * 2.0, 0.0, 1.0)[..., None]
    high = np.clip(tone * 2.0 - 1.0, 0.0, 1.0)[..., None]
    rgb = shadow * (1 - low) + mid * low
    return rgb * (1 - high) + light * high


def _random_walk(
    rng: np.random.Generator, height: int, width: int, steps: int, step: float
) -> list[tuple[float, float]]:
    x, y = rng.uniform(0, width), rng.uniform(0, height)
    heading = rng.uniform(0, 2 * np.pi)
    points = [(x, y)]
    for _ in range(steps):
        heading += rng.normal(0, 0.35)
        x += step * np.cos(heading)
        y += step * np.sin(heading)
        points.append((x, y))
    return points


def _draw_vessels(rng: np.random.Generator, rgb: np.ndarray, count: int) -> np.ndarray:
    height, width = rgb.shape[:2]
    mask_image = Image.new("L", (width, height), 0)
    draw = ImageDraw.Draw(mask_image)
    for _ in range(count):
        trunk = _random_walk(
            rng, height, width, int(rng.integers(12, 30)), float(rng.uniform(6, 12))
        )
        draw.line(trunk, fill=int(rng.integers(120, 200)), width=int(rng.integers(1, 3)))
        for _ in range(int(rng.integers(1, 4))):
            start = trunk[int(rng.integers(0, len(trunk)))]
            branch = _random_walk(rng, height, width, int(rng.integers(4, 10)), 5.0)
            offset = (start[0] - branch[0][0], start[1] - branch[0][1])
            draw.line([(px + offset[0], py + offset[1]) for px, py in branch], fill=110, width=1)
    mask = np.asarray(mask_image.filter(ImageFilter.GaussianBlur(0.8)), dtype=np.float32) / 255.0
    vessel_colour = np.array([95, 18, 40], dtype=np.float32)
    alpha = (0.55 * mask)[..., None]
    return rgb * (1 - alpha) + vessel_colour * alpha


def _blob_mask(
    rng: np.random.Generator, height: int, width: int, centre: np.ndarray, radius: float
) -> np.ndarray:
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    angle = np.arctan2(yy - centre[1], xx - centre[0])
    wobble = sum(
        rng.uniform(0.03, 0.12) * np.cos(k * angle + rng.uniform(0, 2 * np.pi)) for k in (2, 3, 5)
    )
    stretch = rng.uniform(0.75, 1.0)
    dist = np.hypot((xx - centre[0]) * stretch, yy - centre[1]) / radius
    return np.clip(1.0 - dist / (1.0 + wobble), 0.0, 1.0)


def _finding_shape(
    rng: np.random.Generator, height: int, width: int, lumen: np.ndarray, finding: str
) -> tuple[list[int], np.ndarray, np.ndarray]:
    # Keep the lesion on lit mucosa, away from the dark lumen and inside the field of view.
    radius = float(rng.uniform(0.06, 0.11) * min(height, width))
    if finding in ("bleeding", "polyp"):
        radius *= 1.35
    for _ in range(50):
        centre = np.array([rng.uniform(0.22, 0.78) * width, rng.uniform(0.22, 0.78) * height])
        far_from_lumen = np.hypot(*(centre - lumen)) > 2.2 * radius
        inside = (
            np.hypot(centre[0] - width / 2, centre[1] - height / 2)
            < 0.4 * min(height, width) - radius
        )
        if far_from_lumen and inside:
            break
    profile = _blob_mask(rng, height, width, centre, radius)
    rows, cols = np.nonzero(profile > 0.02)
    bbox = [int(cols.min()), int(rows.min()), int(cols.max()) + 1, int(rows.max()) + 1]
    bump_scale = {"polyp": radius / 14.0, "ulcer": -radius / 60.0, "bleeding": 0.0}[finding]
    bump = bump_scale * np.sqrt(profile)
    return bbox, profile, bump.astype(np.float32)


def _paint_finding(
    rng: np.random.Generator, rgb: np.ndarray, finding: str, profile: np.ndarray, tone: np.ndarray
) -> np.ndarray:
    inside = (profile > 0.02).astype(np.float32)
    core = np.clip(profile * 3.0, 0.0, 1.0)
    grain = smooth_noise(rng, profile.shape, (8, 3))
    if finding == "polyp":
        # Adenomas are a shade redder and more granular than the surrounding mucosa.
        tint = np.stack([1.05 + 0.04 * grain, 0.82 + 0.04 * grain, 0.8 + 0.04 * grain], axis=-1)
        factor = 1 + (tint - 1) * ndimage.gaussian_filter(inside, 2)[..., None]
        return rgb * factor
    if finding == "ulcer":
        fibrin = np.stack([236 + 8 * grain, 222 + 8 * grain, 178 + 10 * grain], axis=-1)
        rim = ndimage.gaussian_filter(inside, 4) - ndimage.gaussian_filter(core, 1.5)
        rim = np.clip(rim * 2.2, 0.0, 1.0)[..., None]
        rgb = rgb * (1 - rim) + np.array([176, 28, 30], dtype=np.float32) * rim
        alpha = (core * (0.55 + 0.45 * tone))[..., None]
        return rgb * (1 - alpha) + fibrin * alpha
    # Fresh blood pools dark and glossy; its edge thins out over the mucosa.
    spread = ndimage.gaussian_filter(inside, 3.0) * (0.85 + 0.15 * grain)
    alpha = np.clip(spread * 1.25, 0.0, 0.97)[..., None]
    depth = np.clip(core + 0.15 * grain, 0, 1)[..., None]
    blood = (
        np.array([150, 22, 18], dtype=np.float32) * (1 - depth)
        + np.array([62, 4, 6], dtype=np.float32) * depth
    )
    blood = blood * (0.8 + 0.35 * tone[..., None])
    return rgb * (1 - alpha) + blood * alpha


def _specular_highlights(
    rng: np.random.Generator, rgb: np.ndarray, light: np.ndarray, count: int
) -> np.ndarray:
    height, width = light.shape
    # Reflections sit where wet mucosa faces the light: sample among the brightest slopes.
    flat = light.ravel()
    # A stable sort, not argpartition: its order depends on the CPU's SIMD sort (AVX-512 or not),
    # and the same seed must draw the same picture on every machine (fixtures/ is compared).
    candidates = np.argsort(flat, kind="stable")[-4000:]
    picks = rng.choice(candidates, size=count, replace=False)
    spot_image = Image.new("L", (width, height), 0)
    draw = ImageDraw.Draw(spot_image)
    for index in picks:
        y, x = divmod(int(index), width)
        rx, ry = rng.uniform(1.5, 6.0), rng.uniform(1.0, 3.5)
        draw.ellipse([x - rx, y - ry, x + rx, y + ry], fill=255)
    spots = np.asarray(spot_image.filter(ImageFilter.GaussianBlur(1.2)), dtype=np.float32) / 255.0
    alpha = np.clip(spots * 1.4, 0.0, 1.0)[..., None]
    return rgb * (1 - alpha) + np.array([255, 252, 248], dtype=np.float32) * alpha


def _apply_field_of_view(pixels: np.ndarray, shape: str, radius_scale: float) -> np.ndarray:
    height, width = pixels.shape[:2]
    radius = radius_scale * min(height, width)
    cx, cy = width / 2, height / 2
    mask_image = Image.new("L", (width, height), 0)
    draw = ImageDraw.Draw(mask_image)
    if shape == "octagon":
        cut = radius * 0.42
        draw.polygon(
            [
                (cx - radius + cut, cy - radius),
                (cx + radius - cut, cy - radius),
                (cx + radius, cy - radius + cut),
                (cx + radius, cy + radius - cut),
                (cx + radius - cut, cy + radius),
                (cx - radius + cut, cy + radius),
                (cx - radius, cy + radius - cut),
                (cx - radius, cy - radius + cut),
            ],
            fill=255,
        )
    else:
        draw.ellipse([cx - radius, cy - radius, cx + radius, cy + radius], fill=255)
    mask = np.asarray(mask_image.filter(ImageFilter.GaussianBlur(1.5)), dtype=np.float32) / 255.0
    # Light falls off towards the rim of the optics before the hard edge of the field stop.
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    rim = np.clip(1.0 - 0.35 * (np.hypot(xx - cx, yy - cy) / radius) ** 4, 0.0, 1.0)
    out = pixels.astype(np.float32) * (mask * rim)[..., None] + 4.0 * (1 - mask)[..., None]
    return np.clip(out, 0, 255).astype(np.uint8)


def _capsule_overlay(rng: np.random.Generator, pixels: np.ndarray) -> np.ndarray:
    image = Image.fromarray(pixels)
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=max(10, pixels.shape[0] // 30))
    seconds = int(rng.integers(600, 8 * 3600))
    stamp = f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
    draw.text((8, 6), stamp, fill=(235, 235, 235), font=font)
    draw.text(
        (8, pixels.shape[0] - 22),
        f"F{int(rng.integers(1000, 60000)):05d}",
        fill=(200, 200, 200),
        font=font,
    )
    return np.asarray(image)


def _surgical_frame(rng: np.random.Generator, height: int, width: int) -> SynthFrame:
    shape = (height, width)
    # Fat is lobulated: bright lobules separated by thin darker septa (ridges of the noise).
    lobules = smooth_noise(rng, shape, (36, 12))
    septa = ndimage.gaussian_filter(np.exp(-((lobules / 0.3) ** 2)), 1.5)
    fat_tone = np.clip(0.62 + 0.1 * smooth_noise(rng, shape, (90, 30)) - 0.16 * septa, 0, 1)
    fat = _colourise(fat_tone, ((110, 70, 24), (214, 170, 82), (252, 228, 160)))
    organ_field = smooth_noise(rng, shape, (220, 90)) + 0.6 * (
        np.mgrid[0:height, 0:width][0] / height - 0.5
    )
    # Blur before thresholding: coarse bicubic noise has straight-edged iso-lines.
    organ_field = ndimage.gaussian_filter(organ_field, 14)
    organ = ndimage.gaussian_filter((organ_field > 0.45).astype(np.float32), 4)[..., None]
    organ_shade = _shading(smooth_noise(rng, shape, (70, 20)), gain=60.0, blur=2.0)
    tissue_tone = np.clip(0.38 + 0.1 * organ_shade + 0.04 * smooth_noise(rng, shape, (6,)), 0, 1)
    tissue = _colourise(tissue_tone, ((50, 10, 12), (150, 46, 44), (226, 130, 112)))
    rgb = fat * (1 - organ) + tissue * organ
    rgb = _draw_vessels(rng, rgb, count=int(rng.integers(2, 5)))
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    light = (
        1.0 - 0.45 * (np.hypot(xx - width * 0.5, yy - height * 0.45) / max(height, width)) ** 1.5
    )
    rgb = rgb * light[..., None]
    count = int(rng.integers(1, 4))
    boxes = []
    for slot in range(count):
        rgb, box = _draw_instrument(rng, rgb, slot, count)
        boxes.append(box)
    rgb = _specular_highlights(rng, rgb, fat_tone, count=int(rng.integers(4, 10)))
    pixels = np.clip(rgb, 0, 255).astype(np.uint8)
    return SynthFrame(
        pixels=pixels,
        scene="surgery",
        finding="normal",
        instrument_count=count,
        instrument_bboxes=boxes,
    )


def _draw_instrument(
    rng: np.random.Generator, rgb: np.ndarray, slot: int, count: int
) -> tuple[np.ndarray, list[int]]:
    height, width = rgb.shape[:2]
    # Trocars enter from the lower half and the sides; spread them so shafts rarely overlap.
    entry_angle = np.pi * (0.15 + 0.7 * (slot + rng.uniform(0.2, 0.8)) / count)
    start = np.array(
        [
            width / 2 + 0.75 * width * np.cos(entry_angle),
            height / 2 + 0.75 * height * np.sin(entry_angle),
        ]
    )
    tip = np.array([width * rng.uniform(0.35, 0.65), height * rng.uniform(0.3, 0.6)])
    axis = (tip - start) / np.linalg.norm(tip - start)
    normal = np.array([-axis[1], axis[0]])
    half_width = rng.uniform(0.028, 0.04) * width
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    along = (xx - start[0]) * axis[0] + (yy - start[1]) * axis[1]
    across = (xx - start[0]) * normal[0] + (yy - start[1]) * normal[1]
    length = float(np.linalg.norm(tip - start))
    shaft = (np.abs(across) < half_width) & (along > 0) & (along < length)
    jaw_length = half_width * 2.2
    spread = np.abs(across) < half_width * (0.9 - 0.5 * (along - length) / jaw_length)
    jaws = (
        spread
        & (along >= length)
        & (along < length + jaw_length)
        & (np.abs(across) > half_width * 0.15)
    )
    body = ndimage.gaussian_filter((shaft | jaws).astype(np.float32), 0.8)[..., None]
    # Metal: a bright stripe along the axis, darker edges; black insulated jaws.
    cylinder = np.sqrt(np.clip(1 - (across / half_width) ** 2, 0, 1))
    grey = 70 + 120 * cylinder + 45 * np.exp(-((across / half_width - 0.3) ** 2) / 0.02)
    metal = np.stack([grey, grey * 1.0, grey * 1.04], axis=-1)
    metal = np.where(jaws[..., None], np.array([38, 38, 42], dtype=np.float32), metal)
    rgb = rgb * (1 - body) + metal * body
    rows, cols = np.nonzero(shaft | jaws)
    box = [int(cols.min()), int(rows.min()), int(cols.max()) + 1, int(rows.max()) + 1]
    return rgb, box


def draw_visual_prompt(
    frame: np.ndarray,
    kind: str,
    bbox: list[int] | tuple[int, int, int, int],
    colour: tuple[int, int, int] = (0, 255, 0),
) -> np.ndarray:
    """Return a copy of `frame` with a visual prompt (box/circle/arrow/point) around `bbox`.

    `bbox` is [x0, y0, x1, y1] in pixels; EndoBench-style region questions refer to the mark.
    """
    if kind not in PROMPT_KINDS:
        raise ValueError(f"unknown visual prompt {kind!r}; expected one of {PROMPT_KINDS}")
    image = Image.fromarray(np.ascontiguousarray(frame[..., :3]))
    draw = ImageDraw.Draw(image)
    x0, y0, x1, y1 = (float(v) for v in bbox)
    line = max(2, round(min(image.size) / 150))
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    if kind == "box":
        draw.rectangle([x0, y0, x1, y1], outline=colour, width=line)
    elif kind == "circle":
        radius = max(x1 - x0, y1 - y0) / 2 * 1.15
        draw.ellipse(
            [cx - radius, cy - radius, cx + radius, cy + radius], outline=colour, width=line
        )
    elif kind == "point":
        radius = max(4, line * 2)
        draw.ellipse([cx - radius, cy - radius, cx + radius, cy + radius], fill=colour)
    else:
        _draw_arrow(draw, (x0, y0, x1, y1), image.size, colour, line)
    return np.asarray(image)


def _draw_arrow(
    draw: ImageDraw.ImageDraw, bbox: tuple[float, ...], size: tuple[int, int], colour, line: int
) -> None:
    x0, y0, x1, y1 = bbox
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    # Point from the side with more room, ending on the edge of the region.
    direction = np.array([size[0] / 2 - cx, size[1] / 2 - cy])
    if np.linalg.norm(direction) < 1:
        direction = np.array([1.0, -1.0])
    direction = direction / np.linalg.norm(direction)
    head = np.array([cx, cy]) + direction * (max(x1 - x0, y1 - y0) / 2 + 2)
    tail = head + direction * max(40.0, 0.12 * min(size))
    draw.line([tuple(tail), tuple(head)], fill=colour, width=line + 1)
    normal = np.array([-direction[1], direction[0]])
    wing = 10 + line * 2
    left = head + direction * wing + normal * wing * 0.6
    right = head + direction * wing - normal * wing * 0.6
    draw.polygon([tuple(head), tuple(left), tuple(right)], fill=colour)


def ultrasound_image(
    rng: np.random.Generator, size: tuple[int, int] = (384, 448), *, lesion: str = "cyst"
) -> tuple[np.ndarray, list[int]]:
    """Return a grayscale B-mode-like sector image (uint8) and the lesion's pixel box.

    `lesion` is "cyst" (anechoic, with posterior acoustic enhancement) or "solid" (hypoechoic
    mass with acoustic shadowing), so a question about echogenicity has a known answer.
    """
    height, width = size
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    apex = np.array([width / 2, -0.08 * height])
    depth = np.hypot(xx - apex[0], yy - apex[1])
    angle = np.arctan2(xx - apex[0], yy - apex[1])
    sector = (np.abs(angle) < 0.62) & (depth > 0.12 * height) & (depth < 1.05 * height)
    echo = 0.45 + 0.12 * smooth_noise(rng, size, (60, 20))
    layers = (
        0.18
        * np.clip(np.sin(depth / (0.045 * height) + 2 * smooth_noise(rng, size, (120,))), 0, 1) ** 6
    )
    echo += layers * (depth < 0.35 * height)
    centre = np.array([width * rng.uniform(0.42, 0.58), height * rng.uniform(0.5, 0.65)])
    radius = rng.uniform(0.08, 0.12) * height
    # Cysts are smooth and round; solid masses are lobulated.
    if lesion == "cyst":
        stretch = rng.uniform(1.0, 1.4)
        blob = ((xx - centre[0]) / (radius * stretch)) ** 2 + (
            (yy - centre[1]) / radius
        ) ** 2 <= 1.0
    else:
        blob = _blob_mask(rng, height, width, centre, radius) > 0.0
    half_width = float(np.abs(xx[blob] - centre[0]).max()) * 0.85
    behind = (np.abs(xx - centre[0]) < half_width) & (yy > centre[1]) & ~blob
    behind = ndimage.gaussian_filter(behind.astype(np.float32), 5.0)
    if lesion == "cyst":
        echo = np.where(blob, 0.03, echo + 0.25 * behind)
    else:
        echo = np.where(blob, 0.22, echo - 0.28 * behind)
    # Speckle: fully developed speckle is Rayleigh distributed, smoothed by the beam width.
    speckle = ndimage.gaussian_filter(rng.rayleigh(1.0, size).astype(np.float32), (0.8, 1.8))
    gain = 1.0 - 0.45 * np.clip(depth / height, 0, 1)
    image = np.clip(echo, 0, 1) * speckle * gain * 200
    image = np.where(sector, image, 0)
    rows, cols = np.nonzero(blob)
    bbox = [int(cols.min()), int(rows.min()), int(cols.max()) + 1, int(rows.max()) + 1]
    return np.clip(image, 0, 255).astype(np.uint8), bbox


def encode_jpeg(pixels: np.ndarray, quality: int = 90) -> bytes:
    """Encode an RGB or grayscale uint8 array as JPEG bytes (deterministic for equal input)."""
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="JPEG", quality=quality)
    return buffer.getvalue()


def encode_png(pixels: np.ndarray) -> bytes:
    """Encode a uint8 array as PNG bytes."""
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG", optimize=False)
    return buffer.getvalue()
