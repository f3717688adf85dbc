"""Hostile Volcano manifests (hypothesis): parsing raises only ManifestError, and the import
endpoint answers every mutated manifest with 2xx/4xx and the error envelope, never a 5xx."""

from __future__ import annotations

import pytest
import yaml
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from schedweb.api.manifests import ManifestError, load_documents, split_documents
from schedweb.core import services
from schedweb.core.models import PriorityClass
from tests.scheduler_core.test_fuzz_parsers import _mutated, values
from tests.schedweb.api.test_manifests import PODGROUP, QUEUES, VCJOB

SEED_DOCS = [d for text in (QUEUES, PODGROUP, VCJOB) for d in yaml.safe_load_all(text)]
PRIORITY_CLASSES = {"high": 1000}


def _manifest(data) -> str:
    """A multi-document YAML of a few seed documents, one of them mutated."""
    docs = data.draw(st.lists(st.sampled_from(range(len(SEED_DOCS))), min_size=1, max_size=4))
    loaded = [yaml.safe_load(yaml.safe_dump(SEED_DOCS[i])) for i in docs]
    target = data.draw(st.integers(0, len(loaded) - 1))
    loaded[target] = _mutated(loaded[target], data.draw)
    return yaml.safe_dump_all(loaded, allow_unicode=True)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_manifest_parsing_only_raises_manifest_error(data):
    text = data.draw(st.one_of(st.builds(_manifest, st.just(data)), st.text(max_size=200),
                               values.map(lambda v: yaml.safe_dump(v, allow_unicode=True))))
    try:
        queues, jobs = split_documents(load_documents(text), PRIORITY_CLASSES)
    except ManifestError:
        return
    assert all(isinstance(q, dict) and path.startswith("documents[") for q, path in queues)
    assert all(isinstance(j, dict) and path.startswith("documents[") for j, path in jobs)


def test_manifest_error_is_the_documented_validation_error():
    with pytest.raises(ValidationError) as err:
        load_documents("kind: Queue")
    assert isinstance(err.value, ManifestError)
    assert err.value.message_dict == {"documents[0].apiVersion": ["This field is required."]}


@pytest.mark.django_db
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_import_endpoint_never_fails_with_5xx(data):
    user, _ = get_user_model().objects.get_or_create(username="fuzz-staff", defaults={"is_staff": True})
    if not PriorityClass.objects.filter(name="high").exists():
        services.priority_class_create(name="high", value=1000)
    client = APIClient()
    client.force_authenticate(user)
    text = _manifest(data)
    response = client.generic("POST", "/api/v1/manifests/import/?dry_run=true", text.encode(),
                              content_type="application/yaml")
    assert response.status_code < 500, (text, response.content[:500])
    if response.status_code >= 400:
        assert set(response.json()["error"]) == {"code", "message", "fields"}


# Mutations the fuzzer once found crashing (TypeError: unhashable), kept as fixed regressions.
@pytest.mark.parametrize("doc_index,path,field", [
    (0, ("metadata", "name"), "documents[0].metadata.name"),
    (1, ("spec", "parent"), "documents[0].spec.parent"),
    (6, ("spec", "priorityClassName"), "documents[0].spec.priorityClassName"),
])
def test_list_where_a_name_belongs_is_a_manifest_error(doc_index, path, field):
    doc = yaml.safe_load(yaml.safe_dump(SEED_DOCS[doc_index]))
    doc[path[0]][path[1]] = [None]
    with pytest.raises(ManifestError) as err:
        split_documents(load_documents(yaml.safe_dump(doc)), PRIORITY_CLASSES)
    assert err.value.message_dict == {field: ["Expected a string."]}


def test_list_as_batch_job_task_name_is_a_manifest_error():
    doc = yaml.safe_load(yaml.safe_dump(SEED_DOCS[6]))
    doc["spec"]["tasks"][1]["name"] = ["worker"]
    with pytest.raises(ManifestError) as err:
        split_documents(load_documents(yaml.safe_dump(doc)), PRIORITY_CLASSES)
    assert err.value.message_dict == {"documents[0].spec.tasks[1].name": ["Expected a string."]}
