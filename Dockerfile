# The auto-runtime server image.
#
#   docker build -t auto-runtime .
#   docker build -t auto-runtime --build-arg AZURE_IDENTITY=true .   # adds azure-identity (Microsoft Entra ID)
#
# The server runs with the image's defaults (`auto-runtime --image serve`): HOST 0.0.0.0, LEDGER_FILE
# data/ledger.db under the working directory `/`, so on the /data volume, json logs at info, no .env, and a
# configuration file only when CONFIG_FILE names it. Listening on 0.0.0.0 needs API_KEYS or PUBLIC_URL.
# tests/docs/test_image.py checks these lines against the settings code.

ARG PYTHON_VERSION=3.12

FROM python:${PYTHON_VERSION}-slim-bookworm AS build
ARG AZURE_IDENTITY=false
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
# Node.js and npm build the sandbox's snapshots (auto_runtime/sandbox/build.py); the final image has neither.
COPY --from=node:20-bookworm-slim /usr/local/bin/node /usr/local/bin/node
COPY --from=node:20-bookworm-slim /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/npm
RUN ln -s /usr/local/lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm
COPY sandbox-build/package.json sandbox-build/package-lock.json /src/sandbox-build/
RUN cd /src/sandbox-build && npm ci --ignore-scripts --no-audit --no-fund
RUN python -m venv /opt/auto-runtime
COPY pyproject.toml README.md /src/
COPY auto_runtime /src/auto_runtime
RUN case "$AZURE_IDENTITY" in \
      true) /opt/auto-runtime/bin/pip install "/src[azure]" ;; \
      false) /opt/auto-runtime/bin/pip install /src ;; \
      *) echo "AZURE_IDENTITY is true or false, not $AZURE_IDENTITY" >&2; exit 1 ;; \
    esac
RUN /opt/auto-runtime/bin/python -m auto_runtime.sandbox.build --sources /src/sandbox-build

FROM python:${PYTHON_VERSION}-slim-bookworm
RUN groupadd --system --gid 10001 runtime \
 && useradd --system --uid 10001 --gid runtime --home-dir /home/runtime --create-home runtime \
 && mkdir /data \
 && chown runtime:runtime /data \
 && chmod 0700 /data
COPY --from=build /opt/auto-runtime /opt/auto-runtime
ENV PATH=/opt/auto-runtime/bin:$PATH PYTHONUNBUFFERED=1
WORKDIR /
VOLUME /data
USER runtime
EXPOSE 5555
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + (os.environ.get('PORT') or '5555') + '/health', timeout=4)"]
ENTRYPOINT ["auto-runtime", "--image"]
CMD ["serve"]
