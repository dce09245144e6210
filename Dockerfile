# The operator image: `route-monitor operator` (see deploy/). Multi-stage: the build stage makes
# a virtualenv with the project installed; the final stage gets only that virtualenv.
# tests/test_deploy.py checks this file (it cannot be built here: no container engine).
ARG PYTHON_IMAGE=python:3.11.10-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY alert_rules ./alert_rules
COPY route_monitor ./route_monitor
RUN python -m venv /opt/route-monitor \
 && /opt/route-monitor/bin/pip install . \
 && /opt/route-monitor/bin/route-monitor --help > /dev/null

FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="route-monitor" \
      org.opencontainers.image.description="Blackbox SLO monitoring operator for Kubernetes/OpenShift" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /opt/route-monitor /opt/route-monitor
# Any UID may run it (OpenShift's restricted-v2 assigns one from the namespace's range, with GID
# 0): the virtualenv is root-owned and world-readable, nothing is written but /tmp (an emptyDir in
# deploy/), and HOME points there since an assigned UID has no passwd entry. The numeric USER is
# the UID elsewhere and lets the kubelet check runAsNonRoot.
ENV PATH=/opt/route-monitor/bin:$PATH PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HOME=/tmp
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["route-monitor"]
CMD ["operator"]
