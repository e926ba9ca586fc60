"""Ingest: documents read, chunked once per chunking, embedded and written to every collection."""
