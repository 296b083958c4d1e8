"""A delegate's ``prepare`` run on a model file alone, for models the interpreter cannot load.

When no CPU kernel runs some node, the interpreter refuses the model before any delegate
sees it (as TFLite does). ``analyze`` still wants to say what the delegate would take: the
dry-run context of ``delegate_sdk.dry_run`` gives the delegate the subgraph as the file
declares it (nodes, versions, tensors, no kernels) and records its decisions and the
partitions it asks for.
"""

from delegate_sdk.dry_run import DryRunResult, FileContext, dry_run

__all__ = ["DryRunResult", "FileContext", "dry_run"]
