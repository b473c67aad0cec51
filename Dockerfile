# The RL Arena platform image: one image for every platform process (web, workers, manager, publisher).
# The command picks the role (see docker-compose.yml); the default is the web server (gunicorn).
#
#   scripts/build_platform_image.sh        # the supported way: wheels built on the host, then docker build
#   docker build -t rl-arena:dev .         # also works when build/wheels/ exists (may be empty) and the
#                                          # build can reach PyPI
#
# BASE_IMAGE: any Debian-like image with python3 >= 3.11 (python:3.11-slim from a registry, or the locally
# built rl-arena-agent-base image, which has Debian's python3 but neither pip nor useradd). Everything goes
# into a virtualenv at /opt/venv so both bases behave the same.
#
# Dependencies: if build/wheels/ holds wheels (scripts/build_platform_image.sh fills it with `pip wheel` on
# the host), they are installed offline (`--no-index`) with the pip wheel found there; otherwise they come
# from PyPI. No secret is baked in: SECRET_KEY and friends come from the environment at run time.
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}

ENV LANG=C.UTF-8 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    DATA_DIR=/data \
    STATIC_ROOT=/app/staticfiles \
    PORT=8000 \
    HEALTHCHECK_PATH=/healthz

# System packages the platform itself calls: git + ssh for the publisher (pushes public agents to a git
# remote). Installed from the Debian mirror of the base image; empty APT_PACKAGES skips this step.
ARG APT_PACKAGES="git openssh-client ca-certificates"
RUN set -eu; \
    if [ -n "$APT_PACKAGES" ]; then \
        apt-get update -qq \
        && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $APT_PACKAGES >/dev/null \
        && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb; \
    fi

# The unprivileged user every platform process runs as. Written straight into /etc/passwd because a
# debootstrap minbase image has no useradd. The worker reaches the Docker socket through a supplementary
# group added at run time (docker-compose `group_add`), never by running as root.
RUN echo "arena:x:10000:10000:rl-arena platform:/app:/usr/sbin/nologin" >>/etc/passwd \
    && echo "arena:x:10000:" >>/etc/group \
    && mkdir -p /app /data /opt/venv /srv/static \
    && chown 10000:10000 /data /srv/static

WORKDIR /app

# Dependencies first (cached layer unless pyproject.toml or the wheels change).
COPY pyproject.toml /app/pyproject.toml
COPY build/wheels/ /tmp/wheels/
RUN set -eu; \
    python3 -c "import tomllib; deps = tomllib.load(open('/app/pyproject.toml', 'rb'))['project']['dependencies']; print('\n'.join(deps))" >/tmp/requirements.txt; \
    python3 -m venv --without-pip /opt/venv; \
    pip_wheel="$(ls /tmp/wheels/pip-*.whl 2>/dev/null | head -n 1 || true)"; \
    if [ -n "$pip_wheel" ]; then \
        echo "installing from the wheelhouse (offline)"; \
        /opt/venv/bin/python "$pip_wheel/pip" install --no-cache-dir --no-index --find-links /tmp/wheels \
            -r /tmp/requirements.txt; \
    else \
        echo "no wheelhouse: installing from PyPI"; \
        python3 -m pip --version >/dev/null 2>&1 || { echo "no pip in $BASE_IMAGE and no wheels"; exit 1; }; \
        python3 -m pip --python /opt/venv/bin/python install --no-cache-dir -r /tmp/requirements.txt; \
    fi; \
    rm -rf /tmp/wheels /tmp/requirements.txt; \
    /opt/venv/bin/python -c "import django, celery, gunicorn, psycopg, numpy, trueskill"

# The source (.dockerignore keeps data/, .venv/, .git/, .env and build artefacts out).
COPY . /app

# Static files are collected at build time, with throwaway settings that exist only for this command.
RUN set -eu; \
    if [ -f manage.py ]; then \
        SECRET_KEY=collectstatic-only-this-is-not-a-secret-at-all DEBUG=0 DATABASE_URL=sqlite:////tmp/collectstatic.sqlite3 \
        DATA_DIR=/tmp/collectstatic-data CELERY_BROKER_URL=memory:// \
            python manage.py collectstatic --noinput --verbosity 0; \
        rm -rf /tmp/collectstatic.sqlite3 /tmp/collectstatic-data; \
    fi; \
    python -m compileall -q /app >/dev/null 2>&1 || true; \
    chown -R 10000:10000 /app/staticfiles 2>/dev/null || true

USER 10000:10000
EXPOSE 8000
VOLUME ["/data"]

# The web answers on $HEALTHCHECK_PATH; other roles override or disable this check in docker-compose.yml.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
    CMD python -c "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s%s' % (os.environ.get('PORT', '8000'), os.environ.get('HEALTHCHECK_PATH', '/healthz')), timeout=4)" || exit 1

# The web server: gunicorn with core/gunicorn_conf.py (workers from the CPU count, gthread, bind 0.0.0.0:$PORT;
# WEB_CONCURRENCY, GUNICORN_THREADS, GUNICORN_* in .env override it, GUNICORN_CMD_ARGS too).
CMD ["gunicorn", "-c", "python:core.gunicorn_conf", "core.wsgi"]
