"""The command line: ``qrag-qdrant``, one module per group of commands."""
