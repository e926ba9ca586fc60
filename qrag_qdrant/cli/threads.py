"""Thread settings for the processes qrag-qdrant starts (the CLI, and through it the service and
the MCP server).

The pipeline's only matrix product is clustering's similarity of a few dozen to a few hundred
candidates. OpenBLAS splits such a product over its thread pool, and on a busy machine those
threads wait for cores: on 2 busy cores clustering took 14.6 ms p50 instead of 0.48 ms with one
thread (docs/benchmarks.md, "Query latency"). Nothing else the processes do uses BLAS threads
(embedding runs in onnxruntime's own pool), so they use one. A program that imports qrag_qdrant
as a library keeps its own setting; it can call ``one_blas_thread`` too.
"""

from __future__ import annotations


def one_blas_thread() -> None:
    """Limit the BLAS libraries numpy loaded (OpenBLAS, MKL) to one thread, for this process."""
    import numpy  # noqa: F401  (threadpoolctl limits only the libraries already loaded)
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")
