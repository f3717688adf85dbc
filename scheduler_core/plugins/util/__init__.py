"""Helpers shared by several plugins (and read by actions and explanations); no plugin here."""
