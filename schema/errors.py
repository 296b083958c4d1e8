"""Errors raised while reading, validating or writing model files."""

from __future__ import annotations


class ModelError(ValueError):
    """A model file is malformed, truncated, hostile or not a TFLite model.

    The message always says what is wrong and where (subgraph, tensor, operator,
    buffer index) so that a user can tell a corrupt file from an unsupported one.
    """
