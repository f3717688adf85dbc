"""Property-based API fuzzing (schemathesis): every operation of the OpenAPI schema, called with
generated valid and invalid input as a staff token client, never answers with a 5xx.

The schema comes from drf-spectacular in-process and requests go straight to the Django WSGI
app (no server). Generated auth parameters are off: the staff token is sent on every call.
A small example budget keeps the run short (SCHEMATHESIS_MAX_EXAMPLES raises it).
"""

from __future__ import annotations

import os

import pytest
import schemathesis
from django.core.cache import cache
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections, transaction
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error

from schedweb.api.cache import clear_local
from schedweb.api.services import token_create
from schedweb.core import services

# Small by default so `make test` stays quick; raise it for a deeper run (e.g. in a soak job).
MAX_EXAMPLES = int(os.environ.get("SCHEMATHESIS_MAX_EXAMPLES", "8"))


def _schema(modes: tuple[GenerationMode, ...] = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)):
    """The API's OpenAPI schema (drf-spectacular, in-process) bound to the Django WSGI app."""
    loaded = schemathesis.openapi.from_dict(SchemaGenerator().get_schema(request=None, public=True))
    loaded.app = WSGIHandler()
    loaded.config.generation.update(max_examples=MAX_EXAMPLES, with_security_parameters=False,
                                    modes=list(modes))
    return loaded


schema = _schema()


@pytest.fixture
def staff_token(db, django_user_model):
    """A staff token, and a few objects for the generated names to find."""
    staff = django_user_model.objects.create_user("fuzz-staff", password="pw", is_staff=True)
    _, key = token_create(user=staff, name="schemathesis")
    queue = services.queue_create(name="q1", admin_users=[staff])
    services.node_create(name="n1", allocatable={"cpu": "8", "memory": "16Gi"})
    services.priority_class_create(name="high", value=100)
    services.namespace_quota_set(namespace="ns1", hard={"cpu": "10"})
    services.job_submit(namespace="ns1", name="j1", queue=queue,
                        tasks=[{"name": "t1", "request": {"cpu": "1"}}], submitted_by=staff)
    # As Django's test client does: the WSGI handler must not close the test's connection
    # (it lives inside the test transaction) at the end of each request.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield key
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.mark.slow
@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_operation_answers_5xx(case, staff_token):
    case.call_and_validate(headers={"Authorization": f"Token {staff_token}"}, checks=[not_a_server_error])


# Stateful: schemathesis follows the schema's OpenAPI links (schedweb.api.schema_links: a 201's
# name / id leads to the created object's own operations), so generated workflows create a queue,
# node, job or token and then read, change, cancel or delete that very object.
# Valid input only: a workflow needs its creates to succeed (invalid input is the test above's job).
# Without token rotate/revoke: a generated id may be the workflow's own token, and every later
# step would then be a 401 (the stateless test above covers those operations).
# Only the schema's own links (no inferred ones): inferred transitions draw their inputs from
# list responses, whose contents vary between examples, which Hypothesis rejects as an
# inconsistent data generation (FlakyStrategyDefinition).
def _workflow():
    loaded = _schema((GenerationMode.POSITIVE,)).exclude(
        operation_id=["v1_tokens_rotate_create", "v1_tokens_destroy"])
    loaded.config.phases.stateful.inference.algorithms = []
    return loaded.as_state_machine()


Workflow = _workflow()


def test_workflows_include_the_schema_links():
    rules = {name for name in dir(Workflow) if "__201_" in name}
    # One transition per link of schedweb.api.schema_links, e.g. create a queue, then close it.
    for expected in ("POST_api_v1_queues___201_QueuesCloseCreate__POST_api_v1_queues_name_close_",
                     "POST_api_v1_jobs___201_JobsCancelCreate__POST_api_v1_jobs_id_cancel_",
                     "POST_api_v1_nodes___201_NodesPartialUpdate__PATCH_api_v1_nodes_name_",
                     "POST_api_v1_namespace_quotas___201_NamespaceQuotasDestroy__DELETE_api_v1_namespace_quotas_"
                     "namespace_"):
        assert expected in rules, sorted(rules)


@pytest.mark.slow
def test_stateful_workflows_never_answer_5xx(staff_token):
    calls: list[tuple[str, str, int]] = []

    class StaffWorkflow(Workflow):
        def get_call_kwargs(self, case):
            return {"headers": {"Authorization": f"Token {staff_token}"}}

        def after_call(self, response, case):
            calls.append((case.method.upper(), case.operation.path, response.status_code))

        def validate_response(self, response, case, additional_checks=None, **kwargs):
            case.validate_response(response, checks=[not_a_server_error])

        def setup(self):
            # Every example starts from the fixture's data (and no cached API bodies): what one
            # example created must not change what the next one generates.
            super().setup()
            clear_local()
            cache.clear()
            self._example = transaction.atomic()
            self._example.__enter__()

        def teardown(self):
            transaction.set_rollback(True)
            self._example.__exit__(None, None, None)
            super().teardown()

    StaffWorkflow.run(settings=settings(max_examples=2 * MAX_EXAMPLES, stateful_step_count=8, deadline=None,
                                        derandomize=True, suppress_health_check=list(HealthCheck)))
    assert calls and all(status < 500 for _, _, status in calls)
