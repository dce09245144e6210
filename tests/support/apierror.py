"""What lightkube raises for an error answer of the API server, without a server: for the unit
tests of code that retries or classifies such answers (the cluster tests get real ones)."""

from __future__ import annotations

import httpx2
from lightkube import ApiError


def api_error(code: int, method: str = "GET",
              url: str = "https://api.example:6443/apis/route.openshift.io/v1/routes") -> ApiError:
    """An ``ApiError`` for ``method url`` answered with a ``Status`` of ``code``."""
    request = httpx2.Request(method, url)
    body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": "nope", "code": code}
    return ApiError(request=request, response=httpx2.Response(code, json=body, request=request))
