"""The NodeShard edit form (staff): validation is node_shard_update's, the API's rules; a hidden
`version` refuses a form older than the shard (the sharding controller's writes count too)."""

from __future__ import annotations

import re
from typing import Any

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError

from schedweb.core import services
from schedweb.core.forms import add_service_errors
from schedweb.core.models import NodeShard, ShardMode


class NodeListField(forms.CharField):
    """Node names separated by commas, spaces or new lines; shown one per line."""

    widget = forms.Textarea(attrs={"rows": 4})

    def prepare_value(self, value: Any) -> Any:
        """A stored list as one name per line."""
        return "\n".join(value) if isinstance(value, list) else value

    def to_python(self, value: Any) -> list[str]:
        """The names, in order (the service checks them)."""
        return [n for n in re.split(r"[\s,]+", super().to_python(value) or "") if n]


class NodeShardEditForm(forms.Form):
    """A shard's scheduler, mode, desired nodes and the controller's policy."""

    scheduler_name = forms.CharField(max_length=253, help_text="The scheduler instance owning the shard.")
    mode = forms.ChoiceField(choices=ShardMode.choices,
                             help_text="hard: only its nodes; soft: its nodes first, then the others.")
    nodes_desired = NodeListField(required=False, help_text=(
        "Node names; the sharding controller rewrites them each step from the policy below."))
    min_nodes = forms.IntegerField(min_value=0, help_text="At least this many nodes when enough exist.")
    max_nodes = forms.IntegerField(min_value=0, required=False,
                                   help_text="At most this many; empty = no limit.")
    cpu_utilization_min = forms.FloatField(min_value=0, max_value=1, help_text="CPU band, low end (0 to 1).")
    cpu_utilization_max = forms.FloatField(min_value=0, max_value=1, help_text="CPU band, high end (0 to 1).")
    version = forms.IntegerField(required=False, min_value=1, widget=forms.HiddenInput)

    def __init__(self, *args: Any, shard: NodeShard, actor: Any = None, **kwargs: Any) -> None:
        self.shard, self.actor = shard, actor
        kwargs.setdefault("initial", {f: getattr(shard, f) for f in (
            "scheduler_name", "mode", "nodes_desired", "min_nodes", "max_nodes", "cpu_utilization_min",
            "cpu_utilization_max", "version")})
        super().__init__(*args, **kwargs)
        for name in ("min_nodes", "max_nodes", "cpu_utilization_min", "cpu_utilization_max"):
            self.fields[name].widget.attrs["class"] = "narrow"

    def clean(self) -> dict[str, Any]:
        """Save through the service; its ValidationError becomes form errors (nothing saved)."""
        data = super().clean()
        if self.errors:
            return data
        try:
            self.shard = services.node_shard_update(
                shard=self.shard, actor=self.actor, expected_version=data.get("version"),
                **{k: data.get(k) for k in self.fields if k != "version"})
        except ValidationError as exc:
            errors = {NON_FIELD_ERRORS if k == "version" else k.split("[", 1)[0]: v
                      for k, v in exc.message_dict.items()}
            add_service_errors(self, ValidationError(errors))
        return data
