"""The web reader: pages for people, served by the query node beside the HTTP JSON API.

Server-rendered (Jinja2, autoescaped) with htmx, vendored at a pinned version (static/VENDORED.json), for
the parts that update in place; no script is inline, so the Content-Security-Policy allows scripts from
the node itself only. Every page runs as the signed-in token (signin.py) exactly as the same request to
the API would. The module map: app.py (routes and the mount), signin.py (token cookie and CSRF),
rendering.py (templates and security headers), and one module per page.
"""
