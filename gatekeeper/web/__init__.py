"""``gatekeeper serve``: a read-only web view of a ledger (the optional ``web`` extra).

``views.py`` computes what the pages show (the states ``status`` judges, through
``report/states.py``), ``metrics.py`` the Prometheus exposition, ``page.py`` the HTML page,
``app.py`` the Starlette application (routes, bearer token, errors), ``server.py`` how
uvicorn runs it (bounded connections). Starlette, uvicorn and
prometheus_client are imported only here, never by the rest of gatekeeper.
"""
