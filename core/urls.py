"""Root URLs: the admin, the ``web`` app's URLs once it is installed, and static files with SERVE_STATIC."""

from django.apps import apps
from django.conf import settings
from django.contrib import admin
from django.urls import include, path, re_path
from django.views.static import serve

from core.admin_login import admin_login

# The admin's login is throttled like the site's (core/admin_login.py): it comes before the admin's own.
urlpatterns = [path("admin/login/", admin_login, name="admin-login"), path("admin/", admin.site.urls)]

if apps.is_installed("web"):
    urlpatterns.append(path("", include("web.urls")))

if settings.SERVE_STATIC:
    # No nginx in front (prepare_dev.sh with gunicorn): Django serves the collected static files and media.
    urlpatterns += [
        re_path(r"^static/(?P<path>.*)$", serve, {"document_root": settings.STATIC_ROOT}),
        re_path(r"^media/(?P<path>.*)$", serve, {"document_root": settings.MEDIA_ROOT}),
    ]
