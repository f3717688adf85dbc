"""Form helpers shared by the admin and the dashboard (both validate through the services)."""

from __future__ import annotations

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError


def add_service_errors(form: forms.BaseForm, exc: ValidationError) -> None:
    """Show a service's ValidationError on the form: on its field when the form has one,
    else as a non-field error prefixed with the field name."""
    for field, messages in exc.message_dict.items():
        if field in form.fields:
            form.add_error(field, messages)
        else:
            label = "" if field == NON_FIELD_ERRORS else f"{field}: "
            form.add_error(None, [f"{label}{m}" for m in messages])
