"""What the operator's API client raises for an error answer of the API server, without a
server: for the unit tests of code that retries or classifies such answers (the cluster tests
get real ones)."""

from __future__ import annotations

import json

from route_monitor.kube.apierrors import ApiError, from_answer


def api_error(code: int, method: str = "GET",
              url: str = "https://api.example:6443/apis/route.openshift.io/v1/routes") -> ApiError:
    """An ``ApiError`` for ``method url`` answered with a ``Status`` of ``code``."""
    body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": "nope", "code": code}
    return from_answer(code, json.dumps(body).encode(), method=method, url=url)
