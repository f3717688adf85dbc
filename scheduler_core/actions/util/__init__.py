"""Helpers shared by several actions (job filters, ordering); no action here."""
