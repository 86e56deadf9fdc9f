"""drf-spectacular glue: bearer auth in the schema, and unique names for nested serializers.

Views keep their serializers nested (``FooApi.InputSerializer``, docs/style.md §18), so component
names are prefixed with the view's name; otherwise every view's "Input" would collide.
"""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema as BaseAutoSchema


class AutoSchema(BaseAutoSchema):
    def _get_serializer_name(self, serializer, direction, bypass_extensions=False):
        name = super()._get_serializer_name(serializer, direction, bypass_extensions)
        cls = serializer if isinstance(serializer, type) else type(serializer)
        outer, _, inner = cls.__qualname__.rpartition(".")
        if outer and "<locals>" not in outer and not name.startswith(outer.split(".")[-1]):
            name = outer.replace(".", "") + name
        return name


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "workspaces.authentication.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "Personal API token (act_…), created on the API tokens page."}
