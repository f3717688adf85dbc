"""/metrics served from the body each cycle renders (metrics_body: the MetricsBody row, or a file
beside a SQLite database), and the stage figures the cycle adds (open session, stages, evictions)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from schedweb.scheduling import cycle_metrics, metric_totals, metrics_body, metrics_body_file
from schedweb.scheduling.cycle import cycle_run
from schedweb.scheduling.metrics_text import exposition
from schedweb.scheduling.models import CycleRun, MetricsBody, MetricTotal

from .conftest import make_cluster, submit

pytestmark = pytest.mark.django_db

OK = ("schedweb_cycles_total", frozenset({("outcome", "ok")}))
AGE = ("schedweb_last_cycle_age_seconds", frozenset())


def scrape(client) -> dict[tuple[str, frozenset], float]:
    response = client.get("/metrics")
    assert response.status_code == 200
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(response.content.decode()) for s in family.samples}


@pytest.fixture
def cluster():
    make_cluster(nodes=1)
    submit("a")
    submit("big", cpu="16")


def test_a_scrape_serves_the_body_of_the_newest_cycle_in_one_query(client, cluster):
    started = timezone.now() - timedelta(minutes=10)
    cycle_run(now=started)
    assert MetricsBody.objects.get().cycle_id == CycleRun.objects.get().id
    with CaptureQueriesContext(connection) as queries:
        got = scrape(client)
    assert len(queries.captured_queries) == 1
    assert got[OK] == 1.0
    # The age is the scrape's: the cycle started ten minutes before it.
    assert 600.0 <= got[AGE] < 660.0
    # A total that moves outside a cycle shows at the next cycle's boundary, not before.
    metric_totals.add("schedweb_cycles", 5.0, {"outcome": "ok"})
    assert scrape(client)[OK] == 1.0
    cycle_run()
    assert scrape(client)[OK] == 7.0


def test_the_body_has_every_family_of_a_live_render_but_the_age(client, cluster):
    cycle_run()
    stored = MetricsBody.objects.get().body
    families = {f.name for f in text_string_to_metric_families(stored)}
    live = {f.name for f in text_string_to_metric_families(client.get("/metrics").content.decode())}
    assert live - families == {"schedweb_last_cycle_age_seconds"}
    assert "volcano_scheduling_stage_duration_milliseconds" in families


def test_an_older_render_never_replaces_a_newer_one(cluster):
    cycle_run()
    row = MetricsBody.objects.get()
    MetricsBody.objects.update(cycle_id=row.cycle_id + 1, body="newer")  # another process, further on
    assert not metrics_body.refresh()
    assert MetricsBody.objects.get().body == "newer"
    MetricsBody.objects.update(cycle_id=row.cycle_id, rendered=row.rendered - timedelta(seconds=1))
    assert metrics_body.refresh()  # same cycle, rendered later: replaces
    assert MetricsBody.objects.get().body != "newer"


def test_a_stale_or_missing_body_is_rendered_live_and_not_stored(client, cluster, settings):
    cycle_run()
    MetricTotal.objects.filter(name="schedweb_cycles").update(value=41.0)
    assert scrape(client)[OK] == 1.0
    MetricsBody.objects.update(rendered=timezone.now() - timedelta(seconds=metrics_body.stale_after() + 1))
    assert scrape(client)[OK] == 41.0
    stored = {(s.name, frozenset(s.labels.items())): s.value
              for f in text_string_to_metric_families(MetricsBody.objects.get().body) for s in f.samples}
    assert stored[OK] == 1.0  # the web side writes nothing
    MetricsBody.objects.all().delete()
    assert scrape(client)[OK] == 41.0
    cycle_run()
    assert scrape(client)[OK] == 42.0
    settings.METRICS_PRERENDER = False  # off: cycles render nothing, scrapes render live
    MetricTotal.objects.filter(name="schedweb_cycles", labels='{"outcome":"ok"}').update(value=50.0)
    assert scrape(client)[OK] == 50.0
    MetricsBody.objects.all().delete()
    cycle_run()
    assert not MetricsBody.objects.exists()
    assert scrape(client)[OK] == 51.0


def test_a_failed_render_leaves_the_cycle_alone(cluster, monkeypatch, caplog):
    monkeypatch.setattr(metrics_body, "render", lambda: 1 / 0)
    run = cycle_run()
    assert run.errors == "" and not MetricsBody.objects.exists()
    assert "could not prerender /metrics" in caplog.text


def test_stage_open_session_and_eviction_figures_come_from_the_cycles_own_timing(client):
    timing = {"screen_s": 0.001, "plugin_gang_open_s": 0.002, "plugin_drf_open_s": 0.003,
              "action_allocate_s": 0.02, "action_preempt_s": 0.01, "plugin_gang_close_s": 0.004,
              "session_s": 0.04}
    cycle_metrics.record_cycle(CycleRun(duration_seconds=0.3, load_seconds=0.2, write_seconds=0.05,
                                        timing=timing, evictions=3))
    cycle_metrics.record_cycle(CycleRun(duration_seconds=0.1, load_seconds=0.05, write_seconds=0.01,
                                        timing={"action_allocate_s": 0.001}, evictions=0))
    metrics_body.refresh()
    got = scrape(client)
    stage = "volcano_scheduling_stage_duration_milliseconds"

    def ms(suffix: str, name: str = stage, **labels: str) -> float:
        return got[(name + suffix, frozenset(labels.items()))]

    assert ms("_sum", stage="snapshot") == pytest.approx(250.0)
    assert ms("_sum", stage="open_session") == pytest.approx(6.0)  # screen 1 + plugin opens 2 + 3
    assert ms("_sum", stage="actions") == pytest.approx(31.0)
    # session 40 - plugin opens 5 - actions 30; the second cycle reported no session time.
    assert ms("_sum", stage="close_session") == pytest.approx(5.0)
    assert ms("_count", stage="close_session") == 1.0
    assert ms("_sum", stage="write") == pytest.approx(60.0)
    assert ms("_count", stage="write") == 2.0
    assert ms("_bucket", stage="write", le="5.0") == 0.0
    assert ms("_bucket", stage="write", le="10.0") == 1.0
    assert ms("_bucket", stage="write", le="80.0") == 2.0
    open_session = "volcano_open_session_duration_milliseconds"
    assert ms("_sum", open_session) == pytest.approx(256.0)  # snapshot + open: 206 and 50
    assert ms("_bucket", open_session, le="40.0") == 0.0
    assert ms("_bucket", open_session, le="80.0") == 1.0
    assert ms("_bucket", open_session, le="320.0") == 2.0
    assert got[("volcano_eviction_transactions_total", frozenset())] == 3.0


def test_age_text_is_the_collectors_family():
    now = timezone.now()
    assert metrics_body.age_text(now - timedelta(seconds=90), now).splitlines() == [
        "# HELP schedweb_last_cycle_age_seconds Seconds since the last successful cycle started",
        "# TYPE schedweb_last_cycle_age_seconds gauge",
        "schedweb_last_cycle_age_seconds 90.0"]
    assert metrics_body.age_text(None, now) == exposition([]).decode() + (
        "# HELP schedweb_last_cycle_age_seconds Seconds since the last successful cycle started\n"
        "# TYPE schedweb_last_cycle_age_seconds gauge\n")


def test_beside_sqlite_the_body_is_a_file_a_scrape_reads_without_a_query(client, cluster, settings, tmp_path,
                                                                         django_capture_on_commit_callbacks):
    where = tmp_path / "db.sqlite3-metrics"
    settings.METRICS_BODY_FILE = str(where)
    with django_capture_on_commit_callbacks(execute=True):  # the test's transaction stands for none
        cycle_run()
    assert where.exists() and not MetricsBody.objects.exists()
    with CaptureQueriesContext(connection) as queries:
        got = scrape(client)
    assert len(queries.captured_queries) == 0
    assert got[OK] == 1.0 and got[AGE] >= 0.0
    cycle_id, rendered, _, body = metrics_body_file.load(where)
    assert cycle_id == CycleRun.objects.get().id
    # Newer only, between processes too.
    assert not metrics_body_file.store(where, cycle_id, rendered, None, "older")
    assert not metrics_body_file.store(where, cycle_id - 1, rendered + timedelta(seconds=1), None, "older")
    assert metrics_body_file.store(where, cycle_id + 1, rendered, None, "# newer\n")
    assert metrics_body_file.load(where)[3] == "# newer\n"
    # Unreadable or stale: rendered live.
    where.write_text("not a header\n")
    assert metrics_body_file.load(where) is None
    assert scrape(client)[OK] == 1.0


def test_the_file_is_the_default_only_for_a_file_backed_sqlite_database(settings):
    from django.db import connections

    db = connections["default"].settings_dict
    settings.METRICS_BODY_FILE = ""
    assert metrics_body_file.path() is None
    del settings.METRICS_BODY_FILE
    if db["ENGINE"].endswith("sqlite3") and db["NAME"] not in ("", ":memory:"):
        assert metrics_body_file.path() == Path(str(db["NAME"]) + "-metrics")
    else:
        assert metrics_body_file.path() is None


def test_a_file_is_written_only_once_its_writers_transaction_committed(cluster, settings, tmp_path,
                                                                        django_capture_on_commit_callbacks):
    where = tmp_path / "db.sqlite3-metrics"
    settings.METRICS_BODY_FILE = str(where)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        cycle_metrics.record_agent_failure()
        assert not where.exists()  # a rollback now would leave no counter the file had shown
    assert len(callbacks) == 1 and where.exists()
    assert "schedweb_agent_failures_total 1.0" in metrics_body_file.load(where)[3].splitlines()
