"""WSGI entry point (gunicorn schedweb.wsgi).

Once the application and its URLconf (so every view, serializer and schema module) are loaded,
the objects they made are moved out of the cyclic collector's sight (gc.freeze): they live as
long as the worker, and each full collection otherwise walked all of them, 55-110 ms with every
thread of the worker stopped (measured under the API benchmark; about 3 ms after).
"""

import gc
import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "schedweb.settings")

application = get_wsgi_application()
get_resolver().check()  # imports the URLconf and the views now, not at the first request
gc.collect()
gc.freeze()
