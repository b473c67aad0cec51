"""How the API answers: JSON for programs, and for a browser Django REST framework's browsable API (links
to follow, forms to fill, your session for authentication) under the arena's name."""

from __future__ import annotations

from rest_framework.renderers import BrowsableAPIRenderer, JSONRenderer


class ArenaBrowsableAPIRenderer(BrowsableAPIRenderer):
    """The browsable API with the arena's branding and a way back to the site."""

    template = "web/api_browser.html"


#: Renderers of every API view: JSON first (what programs get), HTML when a browser asks for it.
RENDERERS = [JSONRenderer, ArenaBrowsableAPIRenderer]
