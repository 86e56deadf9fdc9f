"""Bearer token authentication for the API: ``Authorization: Bearer act_…``."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone
from rest_framework import authentication, exceptions

from core.throttling import TokenAuthFailureThrottle
from workspaces.models import ApiToken

# Touch last_used_at at most this often, so every request is not a write.
LAST_USED_RESOLUTION = timedelta(minutes=1)


class BearerTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            return None
        try:
            return self._authenticate_token(header)
        except exceptions.AuthenticationFailed:
            # A bad token counts against its address; past the budget it is a 429 (a valid one never is).
            throttled = TokenAuthFailureThrottle().failure(request)
            if throttled is not None:
                raise throttled from None
            raise

    def _authenticate_token(self, header: list[bytes]):
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Invalid Authorization header: expected 'Bearer <token>'.")
        try:
            raw = header[1].decode()
        except UnicodeError:
            raise exceptions.AuthenticationFailed("Invalid token.") from None
        token = ApiToken.objects.select_related("user").filter(token_hash=ApiToken.hash(raw)).first()
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        if token.revoked_at is not None:
            raise exceptions.AuthenticationFailed("This token has been revoked.")
        now = timezone.now()
        if token.expires_at is not None and token.expires_at <= now:
            raise exceptions.AuthenticationFailed("This token has expired.")
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("This user is inactive.")
        if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token

    def authenticate_header(self, request):
        return self.keyword
