"""The signed-in user's API tokens: create (key shown once), rotate, revoke."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from schedweb.api import services
from schedweb.api.models import ApiToken
from schedweb.api.serializers.cluster import TokenCreateSerializer, TokenSecretSerializer, TokenSerializer
from schedweb.api.views.base import location, validated


def _with_key(token: ApiToken, key: str) -> dict:
    return TokenSecretSerializer({**TokenSerializer(token).data, "key": key}).data


class TokenViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """Tokens of the requesting user only; revoked ones stay listed (with `revoked` set)."""

    serializer_class = TokenSerializer

    def get_queryset(self):
        """The view's rows with the relations its serializer reads."""
        if getattr(self, "swagger_fake_view", False):  # schema generation has no user
            return ApiToken.objects.none()
        return ApiToken.objects.filter(user=self.request.user).order_by("-created", "-id")

    @extend_schema(request=TokenCreateSerializer, responses={201: TokenSecretSerializer})
    def create(self, request):
        """Create a token; the response's `key` is the only time the secret is shown."""
        data = validated(TokenCreateSerializer, request)
        token, key = services.token_create(user=request.user, name=data["name"], expires=data["expires"])
        return Response(_with_key(token, key), status=status.HTTP_201_CREATED,
                        headers=location("token", token.pk))  # the path DELETE revokes

    @extend_schema(request=None, responses={200: TokenSecretSerializer})
    @action(detail=True, methods=["post"])
    def rotate(self, request, pk=None):
        """Give the token a new key (returned once); the old key stops working."""
        token = self.get_object()
        key = services.token_rotate(token=token)
        return Response(_with_key(token, key))

    @extend_schema(request=None, responses={204: None})
    def destroy(self, request, pk=None):
        """Revoke the token."""
        services.token_revoke(token=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)
