"""schedctl's lists follow the API's `continue` tokens (keyset pages), and page by offset only
when a server gives none."""

from __future__ import annotations

from schedctl import client as cli_client


class Recorder(cli_client.ApiClient):
    """An ApiClient answering from `pages` and recording each GET's parameters."""

    def __init__(self, pages: list[dict]) -> None:
        super().__init__("http://api.test", "swt_x")
        self.pages, self.asked = pages, []

    def get(self, path, params=None):
        self.asked.append(dict(params or {}))
        return self.pages[len(self.asked) - 1]


def test_lists_follow_continue_tokens():
    client = Recorder([{"results": [{"id": 1}, {"id": 2}], "next": "u", "continue": "t1"},
                       {"results": [{"id": 3}], "next": None, "continue": None}])
    assert [r["id"] for r in client.iter_list("/api/v1/jobs/", {"queue": "q"})] == [1, 2, 3]
    assert client.asked == [{"queue": "q", "limit": cli_client.PAGE_SIZE, "offset": 0},
                            {"queue": "q", "limit": cli_client.PAGE_SIZE, "continue": "t1"}]


def test_a_server_without_tokens_is_paged_by_offset():
    client = Recorder([{"results": [{"id": 1}, {"id": 2}], "next": "u"},
                       {"results": [{"id": 3}], "next": None}])
    assert [r["id"] for r in client.iter_list("/api/v1/jobs/")] == [1, 2, 3]
    assert [a.get("offset") for a in client.asked] == [0, 2]
