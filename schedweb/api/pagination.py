"""Limit/offset pagination with a hard maximum page size."""

from rest_framework.pagination import LimitOffsetPagination


class ApiPagination(LimitOffsetPagination):
    """`?limit=&offset=`; default 50 items, never more than 1000 in one page."""

    default_limit = 50
    max_limit = 1000
