"""The JSON API (Django REST framework), described by the OpenAPI schema at ``/api/schema/``."""
