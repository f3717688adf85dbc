"""Bounded SQL: listing 500 jobs or the tree of 200 queues takes a constant number of queries."""

from __future__ import annotations

import pytest

from schedweb.core.models import Job, Queue, Task

from .conftest import make_queue


def _bulk_jobs(queue: Queue, count: int) -> None:
    """Rows straight into the tables: the query count under test is the API's, not the builder's."""
    jobs = Job.objects.bulk_create(Job(namespace="ns", name=f"j{i:04d}", queue=queue, min_member=1)
                                   for i in range(count))
    Task.objects.bulk_create(Task(job=j, name=f"{j.name}-0", request={"cpu": 1000}) for j in jobs)

@pytest.mark.parametrize("count", [5, 500])
def test_job_list_query_count_is_constant(make_user, client_for, django_assert_max_num_queries, count):
    user = make_user("reader")
    _bulk_jobs(make_queue("leaf"), count)
    client = client_for(user)
    with django_assert_max_num_queries(4):
        response = client.get("/api/v1/jobs/?limit=500")
    assert response.status_code == 200 and len(response.json()["results"]) == count

@pytest.mark.parametrize("count", [10, 200])
def test_queue_tree_query_count_is_constant(make_user, client_for, django_assert_max_num_queries, count):
    user = make_user("reader")
    tops = Queue.objects.bulk_create(Queue(name=f"top{i}") for i in range(count // 10))
    leaves = Queue.objects.bulk_create(Queue(name=f"leaf{i}", parent=tops[i % len(tops)])
                                       for i in range(count - len(tops)))
    _bulk_jobs(leaves[0], 20)
    client = client_for(user)
    # queues, task sums, pending jobs, the newest cycle's samples and their queue ids, its cycle
    with django_assert_max_num_queries(6):
        response = client.get("/api/v1/queues/tree/")
    assert response.status_code == 200
    # Every installation also has the default queue (a leaf at the top level).
    assert sum(1 + len(t["children"]) for t in response.json()["children"]) == count + 1

def test_queue_list_query_count_is_constant(make_user, client_for, django_assert_max_num_queries):
    user = make_user("reader")
    Queue.objects.bulk_create(Queue(name=f"q{i:03d}") for i in range(300))
    with django_assert_max_num_queries(7):
        response = client_for(user).get("/api/v1/queues/?limit=300")
    assert len(response.json()["results"]) == 300


@pytest.mark.parametrize("tasks", [2, 300])
def test_job_detail_query_count_is_constant(make_user, client_for, django_assert_max_num_queries, tasks):
    job = Job.objects.create(namespace="ns", name="big", queue=make_queue("leaf"), min_member=1)
    Task.objects.bulk_create(Task(job=job, name=f"big-{i}", request={"cpu": 1000}) for i in range(tasks))
    client = client_for(make_user("reader"))
    # +2 over the job and its task page: the newest forecast run and the job's forecast row;
    # +1: its PodGroup conditions (status.conditions).
    with django_assert_max_num_queries(8):
        response = client.get(f"/api/v1/jobs/{job.id}/")
    body = response.json()
    # The detail shows a bounded first page (100 tasks by id); the rest page through the task list.
    assert (len(body["tasks"]), body["tasks_total"]) == (min(tasks, 100), tasks)
    assert body["tasks_url"] == f"http://testserver/api/v1/tasks/?job={job.id}"
    assert body["tasks_next"] == (None if tasks <= 100 else
                                  f"http://testserver/api/v1/tasks/?job={job.id}&limit=100&offset=100")
