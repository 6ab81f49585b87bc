# One image for every knuma component. The entry point is `knuma`: the scheduler Deployment runs
# `knuma scheduler --config ...`, the exporter DaemonSet runs `python -m knuma.cli.exporter ...` (the exporter alone,
# without importing the other commands), and `knuma apiserver`, `knuma validate`, ... work the same way.
#
#   docker build -t ghcr.io/knuma/knuma:$(python -c 'import knuma; print(knuma.__version__)') .
#
# `knuma images` prints the name the deployer uses; KNUMA_IMAGE or `--image` point it at another build.

FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml constraints.txt README.md ./
COPY src ./src
# Versions pinned by constraints.txt, as `make run` installs them.
RUN pip install --no-cache-dir --prefix=/install -c constraints.txt .

FROM python:3.11-slim
COPY --from=build /install /usr/local
# Non-root by default (the scheduler runs as this user; the exporter's DaemonSet runs as root only because the
# kubelet's PodResources socket is root-owned). The uid matches the manifests' runAsUser.
RUN groupadd --gid 65532 knuma \
    && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /tmp --shell /usr/sbin/nologin knuma
USER 65532:65532
# The root filesystem is mounted read-only in the manifests: no byte-code cache, logs unbuffered.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp \
    MPLCONFIGDIR=/tmp
ENTRYPOINT ["knuma"]
CMD ["--help"]
