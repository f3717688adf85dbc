"""Explanations built on a session's results: reasons, figures, never-fits, node scores."""
