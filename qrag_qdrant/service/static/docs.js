// Swagger UI 5 from the service's own files (the pinned swagger-ui-bundle-v2 wheel): no CDN, no inline script.
window.ui = SwaggerUIBundle({ url: "/openapi.json", dom_id: "#swagger-ui" });
