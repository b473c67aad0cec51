"""Root URLs: the admin, plus the ``web`` app's URLs once it is installed."""

from django.apps import apps
from django.contrib import admin
from django.urls import include, path

urlpatterns = [path("admin/", admin.site.urls)]

if apps.is_installed("web"):
    urlpatterns.append(path("", include("web.urls")))
