"""The HTTP service: ``qrag-qdrant serve`` keeps the models and the store warm for several teams.

``app`` builds the FastAPI application; ``auth`` maps a bearer key to one namespace and a role.
FastAPI and uvicorn come with the ``service`` extra.
"""
