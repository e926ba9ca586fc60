"""The web page, its sign-in settings, and the API's docs page."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import FileResponse

from ...config.service import OidcSettings
from ..errors import ServiceError


def page_router(web: Any, oidc: OidcSettings) -> APIRouter:
    """The web page, its sign-in settings, and Swagger UI's files from the pinned
    ``swagger-ui-bundle-v2`` wheel (no CDN)."""
    router = APIRouter(include_in_schema=False)

    @router.get("/sign-in.json")
    def sign_in() -> dict[str, str]:
        """What the page needs to sign in through the identity provider; 404 when it cannot."""
        if not oidc.page_signs_in:
            raise ServiceError(404, "not_found", "this service signs in with team keys only")
        return {"issuer": str(oidc.issuer), "client_id": str(oidc.client_id), "scope": oidc.scope}

    @router.get("/")
    def page() -> FileResponse:
        return FileResponse(str(web / "index.html"))

    @router.get("/docs")
    def docs() -> FileResponse:
        return FileResponse(str(web / "docs.html"))

    return router
