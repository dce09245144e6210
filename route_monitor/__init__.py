"""route-monitor: blackbox SLO monitoring for Kubernetes/OpenShift Routes and Services."""

__version__ = "0.1.0"
