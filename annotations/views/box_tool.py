"""The 2D box tool's configuration for the images of an item (review page).

Built from what the review page already loaded (the item and its images): no query. The boxes
themselves are read by the page's script from the API, which applies the scope rules.
"""

from __future__ import annotations

from django.urls import reverse
from django.utils.translation import gettext

from annotations.access import CURATOR, has_role
from annotations.imaging.option_boxes import NORMALIZED, option_boxes
from annotations.models import BoxLabel, BoxState, Item, ItemStatus


def convention_note(convention: str) -> str:
    if convention == NORMALIZED:
        return gettext(
            "The options are boxes [x0, y0, x1, y1] read as fractions of the image size "
            "(normalized, 0–1): all their numbers are between 0 and 1."
        )
    return gettext(
        "The options are boxes [x0, y0, x1, y1] read as pixels of the image: some of their "
        "numbers are above 1."
    )


def item_box_tool(item: Item, user) -> dict:
    """What static/js/image_box_tool.js needs for each image of `item`.

    On the review page `user` holds an assignment on `item`, so they propose boxes while it is in
    review (services.boxes decides again on every write); a curator always may."""
    can_draw = item.status == ItemStatus.IN_REVIEW or has_role(user, CURATOR)
    options = item.lettered_options
    images = []
    for item_image in item.item_images.all():
        image = item_image.image
        found = option_boxes(options, image.width, image.height)
        images.append(
            {
                "sha256": image.sha256,
                "width": image.width,
                "height": image.height,
                "boxesUrl": reverse("api-image-boxes", args=[image.sha256]),
                "optionBoxes": [
                    {"letter": b.letter, "box": list(b.box), "fits": b.fits} for b in found.boxes
                ]
                if found
                else [],
                "convention": found.convention if found else "",
                "conventionNote": convention_note(found.convention) if found else "",
            }
        )
    return {
        "images": images,
        "canDraw": can_draw,
        "username": user.get_username(),
        "labels": {value: str(label) for value, label in BoxLabel.choices},
        "states": {value: str(label) for value, label in BoxState.choices},
        "boxUrl": reverse("api-box", args=[0]).replace("/0/", "/{id}/"),
    }
