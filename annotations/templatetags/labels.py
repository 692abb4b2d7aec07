from __future__ import annotations

from django import template

from annotations import labels

register = template.Library()
register.filter("field_label", labels.field_label)
register.filter("kind_label", labels.kind_label)
register.filter("level_label", labels.level_label)
register.filter("task_label", labels.task_label)
register.filter("phase_label", labels.phase_label)
register.filter("box_label", labels.box_label)
register.filter("modality_label", labels.modality_label)
register.filter("status_label", labels.status_label)
register.filter("value_label", labels.value_label)
