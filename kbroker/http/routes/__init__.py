"""Routes of the HTTP listener: every module here has ``install(router)``, called by
``kbroker.http.router.load_routes`` when the listener starts (add a module to add pages)."""
