from __future__ import annotations

from django import template

from annotations import labels

register = template.Library()
register.filter("field_label", labels.field_label)
register.filter("kind_label", labels.kind_label)
register.filter("level_label", labels.level_label)
