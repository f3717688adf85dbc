"""Corpus documents with one subtree mutated (hypothesis, derandomized in `make test`): reading
them and Volcano's admission rules raise only ManifestError, never a crash, and what is kept
(the passthrough) is always JSON."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from schedweb.api.manifests import ManifestError, parse_manifest
from tests.scheduler_core.test_fuzz_parsers import _mutated

CORPUS = Path(__file__).resolve().parent
SEED_FILES = ("mpi-lm-job.yaml", "job-volumes.yaml", "job-depends-on.yaml", "job-topology-policy.yaml",
              "podgroup-with-pods.yaml", "priority-classes.yaml", "queues-hierarchical.yaml",
              "deny-duplicate-policy-event.yaml", "deny-any-event-with-others.yaml")
SEEDS = [doc for name in SEED_FILES for doc in yaml.safe_load_all((CORPUS / name).read_text())]


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_mutated_corpus_documents_raise_only_manifest_errors(data):
    picks = data.draw(st.lists(st.sampled_from(range(len(SEEDS))), min_size=1, max_size=3))
    docs = [json.loads(json.dumps(SEEDS[i])) for i in picks]
    target = data.draw(st.integers(0, len(docs) - 1))
    docs[target] = _mutated(docs[target], data.draw)
    if not all(isinstance(d, dict) and isinstance(d.get("kind"), str) and isinstance(d.get("apiVersion"), str)
               for d in docs):
        return  # load_documents refuses these before parse_manifest sees them
    try:
        parsed = parse_manifest(docs, {"master-pri": 100})
    except ManifestError:
        return
    for job in parsed.jobs:
        json.dumps(job.passthrough, allow_nan=False)
